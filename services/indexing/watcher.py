"""Watch a workspace folder (watchdog) and report changed paths after a quiet period (debounce).

Bursts, such as a git checkout touching hundreds of files, coalesce into one report. The watcher
says which paths changed; what to index is decided by the scan (services.indexing.scanning:
scan_paths gives those paths the whole scan's verdicts, or asks for a whole scan), so the two
can never disagree. Paths inside skipped folders are dropped here already.
"""

from __future__ import annotations

import logging
import threading
import time
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

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 1.0
MAX_DELAY_SECONDS = 10.0  # a change is reported at the latest this long after it, even mid-burst

class _Collector(FileSystemEventHandler):
    def __init__(self, watcher: "WorkspaceWatcher") -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write") or (event.is_directory and event.event_type == "modified"):
            return  # reads, and a folder's own mtime, change nothing
        paths = [event.src_path, getattr(event, "dest_path", "")]
        relevant = [rel for rel in (self.watcher.relative(p, event.is_directory) for p in paths if p) if rel]
        if relevant:
            self.watcher.touch(relevant)


class WorkspaceWatcher:
    """Calls `on_changes(paths)` in its own thread once no change came for `debounce` seconds."""

    def __init__(self, root: Path, on_changes: Callable[[set[str]], None], *,
                 exclude: tuple[Path, ...] = (), debounce: float = DEBOUNCE_SECONDS,
                 max_delay: float = MAX_DELAY_SECONDS) -> None:
        self.root = root
        self.on_changes = on_changes
        self.exclude = tuple(p.resolve() for p in exclude)
        self.debounce = debounce
        self.max_delay = max_delay
        self._pending: set[str] = set()
        self._first = self._last = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._observer = Observer()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"ke-watch-{root.name}")

    def start(self) -> None:
        self._observer.schedule(_Collector(self), str(self.root), recursive=True)
        self._observer.start()
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self._observer.stop()
        if self._observer.is_alive():
            self._observer.join(timeout=5)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

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

    def touch(self, paths: list[str]) -> None:
        with self._lock:
            now = time.monotonic()
            if not self._pending:
                self._first = now
            self._pending.update(paths)
            self._last = now
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stopped.is_set():
                with self._lock:
                    now = time.monotonic()
                    wait = min(self._last + self.debounce, self._first + self.max_delay) - now
                    batch = set() if wait > 0 else self._pending
                    if wait <= 0:
                        self._pending = set()
                if wait > 0:
                    self._stopped.wait(wait)
                    continue
                if batch:
                    self._report(batch)
                break

    def _report(self, batch: set[str]) -> None:
        try:
            self.on_changes(batch)
        except Exception:  # a failing handler must not end the watch
            log.exception("handling changes in %s failed", self.root)
