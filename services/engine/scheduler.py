"""When automatic index runs start, what they cover, and when they must not: one class, no threads.

Watching (services.engine.watching) owns the threads, the watchers and the runs; every decision about
them is asked here, so it can be tested with a fake clock and no sleeping:

- a change under a watched folder is gathered for the next automatic run (auto-reindex), or only
  reported as stale (auto-reindex off, or automatic indexing paused);
- an automatic run takes what was gathered; it stands back while a user's run holds the workspace (the
  changes are kept, and looked at once the user's run ends);
- cancelling an automatic run pauses automatic indexing of that workspace until a user's run finishes
  (F5, "Resume"): changes meanwhile are listed as stale, never lost (the next run scans for them);
- references are recounted once automatic runs pause for `reference_delay` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

RUN, STALE, NOTHING = "run", "stale", ""  # what to do about a change
REFERENCE_REFRESH_DELAY = 3.0  # seconds without automatic runs before references are recounted


@dataclass
class Schedule:
    """One watched workspace's automatic indexing."""

    auto_reindex: bool
    changed: set[str] | None = field(default_factory=set)  # gathered for the next run; None: anything
    auto_running: bool = False
    deferred: bool = False  # an automatic run stood back for a user's run
    missing: bool = False  # the folder is gone: no run starts until it is back


class IndexScheduler:
    """Decides, per workspace root, about automatic runs. Thread-safe; `clock` gives seconds (monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 reference_delay: float = REFERENCE_REFRESH_DELAY) -> None:
        self.clock = clock
        self.reference_delay = reference_delay
        self._lock = threading.Lock()
        self._schedules: dict[Path, Schedule] = {}
        self._paused: set[Path] = set()  # kept across watch() calls, until a user's run finishes
        self._user_runs: dict[Path, int] = {}
        self._references_due: dict[Path, float] = {}

    # --- watching ---
    def watch(self, root: Path, auto_reindex: bool) -> None:
        """Start (or restart) watching: the first run catches up with anything that changed meanwhile."""
        with self._lock:
            self._schedules[root] = Schedule(auto_reindex, changed=None)

    def unwatch(self, root: Path) -> None:
        with self._lock:
            self._schedules.pop(root, None)

    def watched(self, root: Path) -> bool:
        with self._lock:
            return root in self._schedules

    def changed(self, root: Path, paths: set[str] | None) -> str:
        """Paths changed under `root` (None: anything may have). RUN: submit an automatic run; STALE:
        report the stale files; NOTHING: not watched."""
        with self._lock:
            schedule = self._schedules.get(root)
            if schedule is None:
                return NOTHING
            if not schedule.auto_reindex:
                return STALE  # (the stale report looks at everything: nothing to gather)
            schedule.changed = _union(schedule.changed, paths)
            return STALE if root in self._paused else RUN

    def set_missing(self, root: Path, missing: bool) -> None:
        with self._lock:
            if root in self._schedules:
                self._schedules[root].missing = missing

    # --- automatic runs ---
    def start_auto(self, root: Path) -> tuple[bool, set[str] | None]:
        """(True, paths) when an automatic run starts now over `paths` (None: look at everything);
        (False, None) when none does (not watched, paused, folder gone, nothing new, a user's run)."""
        with self._lock:
            schedule = self._schedules.get(root)
            if schedule is None or not schedule.auto_reindex or schedule.missing or root in self._paused:
                return False, None
            if schedule.changed is not None and not schedule.changed:
                return False, None  # an earlier run took these changes
            if self._user_runs.get(root):  # it may have scanned before these changes: kept for after it
                schedule.deferred = True
                return False, None
            paths, schedule.changed = schedule.changed, set()
            schedule.auto_running = True
            return True, paths

    def finish_auto(self, root: Path, *, complete: bool, retry: AbstractSet[str] = frozenset(),
                    recount_references: bool = False) -> None:
        """An automatic run ended: `complete` (else cancelled or failed: the next run looks at
        everything), `retry` the paths that failed and are tried again by the next run; references are
        recounted once automatic runs pause for `reference_delay` seconds."""
        with self._lock:
            schedule = self._schedules.get(root)
            if schedule is not None:
                schedule.auto_running = False
                schedule.changed = _union(schedule.changed, set(retry) if complete else None)
            if recount_references:
                self._references_due[root] = self.clock() + self.reference_delay

    def running(self, root: Path) -> bool:
        """An automatic run is under way."""
        with self._lock:
            schedule = self._schedules.get(root)
            return schedule is not None and schedule.auto_running

    def pending(self, root: Path) -> set[str] | None:
        """What the next automatic run would look at (None: everything; empty: nothing)."""
        with self._lock:
            schedule = self._schedules.get(root)
            return set() if schedule is None else (None if schedule.changed is None else set(schedule.changed))

    # --- pausing ---
    def pause(self, root: Path) -> bool:
        """Cancel the automatic run under way and start none until a user's run finishes. True when a
        run was under way (the caller stops it)."""
        with self._lock:
            self._paused.add(root)
            schedule = self._schedules.get(root)
            return schedule is not None and schedule.auto_running

    def paused(self, root: Path) -> bool:
        with self._lock:
            return root in self._paused

    # --- a user's runs ---
    def begin_user(self, root: Path) -> bool:
        """A user's run starts; True when an automatic run is under way (it stops: this run does its work)."""
        with self._lock:
            self._user_runs[root] = self._user_runs.get(root, 0) + 1
            schedule = self._schedules.get(root)
            return schedule is not None and schedule.auto_running

    def end_user(self, root: Path, *, complete: bool) -> bool:
        """A user's run ended. A complete one resumes paused automatic indexing. True when an automatic
        run must look again at changes it left to this run (which may have scanned before them)."""
        with self._lock:
            self._user_runs[root] = max(0, self._user_runs.get(root, 0) - 1)
            if complete:
                self._paused.discard(root)
            schedule = self._schedules.get(root)
            if schedule is None or not schedule.deferred:
                return False
            schedule.deferred = False
            return complete  # (a cancel leaves them for the next change)

    def user_running(self, root: Path) -> bool:
        with self._lock:
            return bool(self._user_runs.get(root))

    # --- reference recounts ---
    def references_due(self) -> list[Path]:
        """Roots whose references are due for a recount now (each once per quiet spell)."""
        with self._lock:
            now = self.clock()
            due = [root for root, when in self._references_due.items() if when <= now]
            for root in due:
                del self._references_due[root]
            return due

    def next_deadline(self) -> float | None:
        """When references_due() has something next (clock time), None when nothing is waiting."""
        with self._lock:
            return min(self._references_due.values(), default=None)

    def forget(self, root: Path) -> None:
        """The engine lets go of `root` (closing): nothing is due for it any more."""
        with self._lock:
            self._references_due.pop(root, None)


def _union(gathered: set[str] | None, paths: set[str] | None) -> set[str] | None:
    return None if gathered is None or paths is None else gathered | paths
