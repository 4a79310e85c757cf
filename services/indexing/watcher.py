"""Watch a workspace folder (watchdog) and report the paths each change touches, at once.

Gathering bursts (a git checkout touching hundreds of files) into one report is the engine's
(services.engine.watching). The watcher says which paths changed; what to index is decided by the scan
(services.indexing.scanning: scan_paths gives those paths the whole scan's verdicts, or asks for a whole
scan), so the two can never disagree. Paths inside skipped folders are dropped here already.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

# WatchEvent and its kinds live with the other messages (services.core.models), so the remote client
# decodes them without importing watchdog; they are named here too, where the events come from
from services.core.models import (  # noqa: F401
    FOLDER_MISSING, PAUSED, PROGRESS, REFERENCES, REINDEX_FINISHED, REINDEX_STARTED, RESUMED, STALE, WATCH_ERROR,
    WATCHING, WatchEvent,
)
from services.indexing.scanning import SKIPPED_DIRS


class _Collector(FileSystemEventHandler):
    def __init__(self, watcher: "WorkspaceWatcher") -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write") or (event.is_directory and event.event_type == "modified"):
            return  # reads, and a folder's own mtime, change nothing
        paths = [event.src_path, getattr(event, "dest_path", "")]
        relevant = [rel for rel in (self.watcher.relative(p, event.is_directory) for p in paths if p) if rel]
        if relevant:
            self.watcher.on_paths(relevant)


class WorkspaceWatcher:
    """Calls `on_paths(paths)` in watchdog's thread with the workspace-relative paths of each change."""

    def __init__(self, root: Path, on_paths: Callable[[list[str]], None], *, exclude: tuple[Path, ...] = ()) -> None:
        self.root = root
        self.on_paths = on_paths
        self.exclude = tuple(p.resolve() for p in exclude)
        self._observer = Observer()

    def start(self) -> None:
        self._observer.schedule(_Collector(self), str(self.root), recursive=True)
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)

    def relative(self, path: str, is_dir: bool = False) -> str:
        """Workspace-relative POSIX path, or "" for paths never indexed (in or being a skipped folder, in
        the data dir). A file may be named like a skipped folder ("build")."""
        absolute = Path(path)
        if any(absolute.is_relative_to(p) for p in self.exclude):
            return ""
        try:
            rel = absolute.relative_to(self.root)
        except ValueError:
            return ""
        folders = rel.parts if is_dir else rel.parts[:-1]
        if not rel.parts or any(part in SKIPPED_DIRS for part in folders):
            return ""
        return rel.as_posix()
