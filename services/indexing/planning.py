"""What an index run has to do (its Plan), worked out from a scan of the workspace (or of the paths a watcher
reported) and the catalogue: the files changed, unchanged and removed. A file is removed only on evidence: the
workspace folder is there and the file is not, or it is there and no longer indexable."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from services.core.models import SkippedFile
from services.core.settings import Settings
from services.indexing.scanning import SourceFile, scan_paths, scan_workspace
from services.storage.catalog import FileRecord
from services.storage.workspace_index import WorkspaceIndex

# Reasons that mean a file failed (as opposed to being skipped by policy, like "binary file").
FAILURE_REASONS = ("unreadable", "could not be read", "could not be chunked", "could not be embedded",
                   "could not be stored")


@dataclass
class Plan:
    """What a run has to do, worked out from the scan and the catalogue."""

    changed: list[SourceFile] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    known: dict[str, FileRecord] = field(default_factory=dict)  # the catalogue's records the plan looked at
    targeted: set[str] | None = None  # the paths a watcher's run looked at; None: the whole workspace


class Planner:
    """The plan of one run. `everything`: a full rebuild (every file changed); `paths`: a watcher's paths (None:
    the whole workspace); `repair_paths`: files the integrity check found damaged (read again)."""

    def __init__(self, index: WorkspaceIndex, settings: Settings, everything: bool, paths: set[str] | None,
                 repair_paths: Iterable[str] = ()) -> None:
        self.index, self.settings, self.everything, self.paths = index, settings, everything, paths
        self.repair_paths = set(repair_paths)

    def plan(self) -> Plan:
        return self.targeted() or self.whole()

    def whole(self) -> Plan:
        catalog = self.index.catalog()
        known = catalog.files()
        scan = scan_workspace(self.index.root, self.settings.max_file_bytes, self.settings.skip_machine_made,
                              known=None if self.everything else known)
        catalog.set_meta(symlinks="1" if scan.symlinks else "0")
        return self.compare(scan, known)

    def targeted(self) -> Plan | None:
        """The plan for the paths a watcher reported, from them alone (no walk over the tree); None when
        a whole scan is needed: no paths given, a rebuild, symlinks in the tree (an edit to a link's target
        is reported under the target's path only), or scan_paths says so."""
        catalog = self.index.catalog()
        if self.paths is None or self.everything or catalog.get_meta("symlinks") != "0":
            return None
        scan = scan_paths(self.index.root, self.paths, self.settings.max_file_bytes, self.settings.skip_machine_made)
        if scan is None:
            return None
        known = catalog.files(self.paths)
        for path in self.paths:  # a folder deleted, moved away or replaced by a file: the files it held
            known.update(catalog.files_under(path))
        plan = self.compare(scan, known)
        plan.targeted = self.paths | known.keys()
        return plan

    def compare(self, scan, known: dict[str, FileRecord]) -> Plan:
        """Changed, unchanged and removed files: the scan's files against the catalogue's `known` records."""
        plan = Plan(skipped=list(scan.skipped), known=known)
        for source in scan.files:
            record = known.get(source.path)
            if (record and not self.everything and source.path not in self.repair_paths
                    and (record.size, record.mtime_ns) == (source.size, source.mtime_ns)):
                plan.unchanged.append(source.path)
            else:
                plan.changed.append(source)
        unlisted = set(known) - {source.path for source in scan.files}
        plan.removed = self.gone(sorted(path for path in unlisted if not unreadable_at(path, scan.skipped)),
                                  scan.skipped)
        return plan

    def gone(self, paths: list[str], skipped: Iterable[SkippedFile] = ()) -> list[str]:
        """The files positively gone: the workspace folder is there and the file is not, or it is there and
        no longer indexable (asked again, or skipped by the scan for a reason that is no failure: a file
        replaced by a symlink leading out of the workspace). A folder renamed away (or unmounted) during
        the scan is no evidence: nothing is removed then."""
        root = self.index.root
        if not paths or not root.is_dir():
            return []
        there = [path for path in paths if os.path.lexists(root / path)]
        if not there:
            return paths
        unindexable = self.no_longer_indexable(there)  # all at once (a new ignore rule may drop thousands)
        if unindexable is None:  # one needs a whole scan: ask path by path; the scan's own verdict for those (None)
            by_policy = {s.path for s in skipped if s.category not in FAILURE_REASONS}
            unindexable = {path for path in there if path in by_policy or self.no_longer_indexable([path])}
        return [path for path in paths if path not in there or path in unindexable]

    def no_longer_indexable(self, paths: list[str]) -> set[str] | None:
        """Of catalogued files still there that the scan did not list, asked again: those now a folder,
        ignored, too large, binary or machine-made (one that cannot be read is kept). None when only a
        whole scan could tell for one of them."""
        folders = {path for path in paths if (self.index.root / path).is_dir()}  # the files inside count on their own
        verdict = scan_paths(self.index.root, [path for path in paths if path not in folders],
                             self.settings.max_file_bytes, self.settings.skip_machine_made)
        if verdict is None:
            return None
        kept = {f.path for f in verdict.files} | {s.path for s in verdict.skipped if s.category in FAILURE_REASONS}
        return folders | (set(paths) - folders - kept)


def unreadable_at(path: str, skipped: list[SkippedFile]) -> bool:
    """Whether the scan could not read this file or a folder holding it (then it may well still exist)."""
    return any(s.reason.startswith("unreadable") and (path == s.path or path.startswith(s.path.rstrip("/") + "/")
                                                      or s.path == ".") for s in skipped)
