"""Watched workspace folders: their watchers started and stopped, changes gathered (debounce), then an automatic run
or a stale report.

When runs start and what they cover is the scheduler's (services.engine.scheduler); which paths changed is the
watchdog layer's (services.indexing.watcher). This module owns the threads between them: per watched folder, one
that turns bursts of changes into one report, and one that notices the folder going away and coming back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from services.core.models import ProgressEvent
from services.core.settings import Settings
from services.engine.scheduler import RUN, STALE as REPORT_STALE, IndexScheduler
from services.indexing.health import folder_missing, stale_files
from services.indexing.indexer import Indexer, refresh_references
from services.indexing.planning import FAILURE_REASONS
from services.indexing.watcher import (
    FOLDER_MISSING, PAUSED, PROGRESS, REFERENCES, REINDEX_FINISHED, REINDEX_STARTED, STALE, WATCH_ERROR, WATCHING,
    WatchEvent, WorkspaceWatcher,
)
from services.storage.error_note import ErrorNote
from services.storage.workspace_index import WorkspaceIndex

log = logging.getLogger(__name__)

FOLDER_POLL_SECONDS = 1.0  # how often a watched workspace folder is checked for being there
DEBOUNCE_SECONDS = 1.0  # changes are reported once none came for this long
MAX_DELAY_SECONDS = 10.0  # a change is reported at the latest this long after it, even mid-burst
WORK_PHASES = frozenset({"chunking", "embedding"})  # an automatic run is announced at its first files or chunks


class Debounce:
    """Gathers changed paths into one batch, due once no change came for `quiet` seconds or `longest` seconds
    after its first change. Thread-safe, no thread of its own; `clock` gives seconds (monotonic)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, quiet: float = DEBOUNCE_SECONDS,
                 longest: float = MAX_DELAY_SECONDS) -> None:
        self.clock = clock
        self.quiet = quiet
        self.longest = longest
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._first = self._last = 0.0

    def add(self, paths: Iterable[str]) -> None:
        with self._lock:
            now = self.clock()
            if not self._paths:
                self._first = now
            self._paths.update(paths)
            self._last = now

    def wait(self) -> float | None:
        """Seconds until the batch is due (0 or less: due now); None when nothing is gathered."""
        with self._lock:
            if not self._paths:
                return None
            return min(self._last + self.quiet, self._first + self.longest) - self.clock()

    def take(self) -> set[str]:
        """The batch when it is due (then gathering starts afresh), else an empty set."""
        wait = self.wait()
        with self._lock:
            if wait is None or wait > 0:
                return set()
            batch, self._paths = self._paths, set()
            return batch

    def clear(self) -> None:
        with self._lock:
            self._paths = set()


@dataclass
class Hooks:
    """What watching asks of the engine that owns it."""

    indexer: Callable[[WorkspaceIndex, Callable[[ProgressEvent], None], threading.Event], Indexer]
    invalidate: Callable[[Path], None]  # the workspace's cached answers are out of date
    failed: Callable[[WorkspaceIndex, Exception, ErrorNote], str]  # record a run's error; its message
    succeeded: Callable[[Path], None]  # a run reached its end: the workspace's error is gone
    recount_due: Callable[[], None]  # a run left the reference recount to the engine's timer


class Watch:
    """One watched workspace's threads and wiring: its watcher, where events go, the run to stop."""

    def __init__(self, index: WorkspaceIndex, emit: Callable[[WatchEvent], None], debounce: Debounce) -> None:
        self.index = index
        self.emit = emit
        self.debounce = debounce
        self.wake = threading.Event()  # a change came: the debounce thread looks again
        self.cancel = threading.Event()  # set by remove(): stops a run in progress
        self.run_cancel = threading.Event()  # stops the automatic run under way (remove, pause, a user's run)
        self.watcher: WorkspaceWatcher | None = None
        self.missing = False  # the folder is gone: no run starts until it is back
        self.idle = threading.Event()  # set while no automatic run is under way
        self.idle.set()

    def stop_run(self) -> None:
        self.run_cancel.set()


class Watching:
    """The watched workspaces of one engine. Its runs go to `index_pool`, stale reports to `query_pool`; `exclude`
    holds folders never reported (the data dir)."""

    def __init__(self, scheduler: IndexScheduler, settings: Settings, hooks: Hooks, index_pool: ThreadPoolExecutor,
                 query_pool: ThreadPoolExecutor, exclude: tuple[Path, ...] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.scheduler = scheduler
        self.settings = settings
        self.hooks = hooks
        self.index_pool = index_pool
        self.query_pool = query_pool
        self.exclude = exclude
        self.clock = clock
        self._lock = threading.Lock()
        self._watches: dict[Path, Watch] = {}

    # --- watching and not ---
    def add(self, index: WorkspaceIndex, auto_reindex: bool, emit: Callable[[WatchEvent], None], *,
            observe: bool = True) -> None:
        """Watch the workspace (call remove() first when it is watched), and catch up with what changed while
        nobody watched. observe=False: no watcher nor folder poll, changes come through changed() alone."""
        watch = Watch(index, emit, Debounce(self.clock))
        if observe:
            if index.root.is_dir():
                self._start_watcher(watch)
            threading.Thread(target=self._debounce_loop, args=(watch,), daemon=True,
                             name=f"ke-watch-{index.root.name}").start()
        with self._lock:
            self._watches[index.root] = watch
        self.scheduler.watch(index.root, auto_reindex)
        emit(WatchEvent(WATCHING, str(index.root)))
        if auto_reindex and self.scheduler.paused(index.root):
            emit(WatchEvent(PAUSED, str(index.root)))
        if observe:
            threading.Thread(target=self._watch_folder, args=(watch,), daemon=True,
                             name=f"ke-folder-{index.root.name}").start()
        self.changed(index.root)

    def remove(self, root: Path) -> None:
        """Stop watching; returns once the automatic run under way stopped after its batch (what it committed
        is kept)."""
        with self._lock:
            watch = self._watches.pop(root, None)
        if watch is None:
            return
        self.scheduler.unwatch(root)
        self._cancel(watch)
        watch.idle.wait(60)

    def roots(self) -> list[Path]:
        with self._lock:
            return list(self._watches)

    def close(self) -> None:
        """Stop every watch, without waiting for the runs under way."""
        with self._lock:
            watches, self._watches = list(self._watches.values()), {}
        for watch in watches:
            self._cancel(watch)

    def pause(self, root: Path) -> None:
        """Stop the automatic run under way (returns once it has) and start none until a user's run finishes;
        what changed so far is reported as stale."""
        running = self.scheduler.pause(root)
        watch = self._watch(root)
        if watch is None:
            return
        if running:
            watch.stop_run()
            watch.idle.wait(60)  # it stops after its batch
        watch.emit(WatchEvent(PAUSED, str(root)))
        self.changed(root)

    # --- what the engine tells a watch ---
    def changed(self, root: Path, paths: set[str] | None = None) -> None:
        """Something changed under a watched folder: `paths`, or anything when None. The scheduler says whether an
        automatic run or a stale report follows."""
        watch = self._watch(root)
        if watch is None or watch.cancel.is_set():
            return
        try:
            action = self.scheduler.changed(root, paths)
            if action == RUN:
                self.index_pool.submit(self.auto_index, root)
            elif action == REPORT_STALE:
                self.query_pool.submit(self._report_stale, watch)
        except RuntimeError:  # the engine is closing
            pass

    def stop_run(self, root: Path) -> None:
        """Stop the automatic run under way (it stops after its batch), if any."""
        watch = self._watch(root)
        if watch is not None:
            watch.stop_run()

    def emit(self, root: Path, event: WatchEvent) -> None:
        """Send an event to the workspace's watcher, if it is watched."""
        watch = self._watch(root)
        if watch is not None and not watch.cancel.is_set():
            watch.emit(event)

    def drain(self) -> None:
        """Return once the automatic runs submitted so far have run (the index pool has one thread)."""
        self.index_pool.submit(lambda: None).result()

    # --- automatic runs ---
    def auto_index(self, root: Path) -> None:
        """Run an automatic run over what was gathered, here and now, when the scheduler says one starts."""
        watch = self._watch(root)
        if watch is None or watch.cancel.is_set() or not watch.index.exists() or not root.is_dir():
            return  # never indexed (a first index is the user's call), or gone (_watch_folder says so)
        watch.run_cancel = threading.Event()  # before the scheduler's say: a user's run starting now stops this one
        starts, paths = self.scheduler.start_auto(root)
        if starts:
            self._run(watch, paths)

    def _run(self, watch: Watch, paths: set[str] | None) -> None:
        root_path = watch.index.root
        root = str(root_path)
        announced = threading.Event()

        def progress(event: ProgressEvent) -> None:  # a run that finds nothing to do is not shown as indexing
            if not announced.is_set() and event.phase in WORK_PHASES and (event.files_total or event.chunks_total):
                announced.set()
                watch.emit(WatchEvent(REINDEX_STARTED, root))
            if announced.is_set():
                watch.emit(WatchEvent(PROGRESS, root, progress=event))
        indexer = self.hooks.indexer(watch.index, progress, watch.run_cancel)
        note = ErrorNote(watch.index.folder)
        note.reserve()
        watch.idle.clear()
        try:
            report = indexer.run(quick=True, paths=paths)
        except Exception as error:
            self.scheduler.finish_auto(root_path, complete=False)  # the next run looks at everything
            self.hooks.invalidate(root_path)
            if not root_path.is_dir():  # it went away under the run: nothing was deleted, no error
                watch.emit(WatchEvent(FOLDER_MISSING, root, message=folder_missing(root_path)))
                return
            watch.emit(WatchEvent(WATCH_ERROR, root, message=self.hooks.failed(watch.index, error, note)))
            return
        finally:
            watch.idle.set()
        # a file that failed (unreadable, not embedded) is tried again by the next run, as F5 would
        retry = {s.path for s in report.skipped if s.category in FAILURE_REASONS} & (paths or set())
        self.scheduler.finish_auto(root_path, complete=not report.cancelled, retry=retry,
                                   recount_references=indexer.references_deferred)
        if indexer.references_deferred:
            self.hooks.recount_due()
        if report.files_indexed or report.files_removed or report.chunks_embedded or report.rebuilt_reason:
            self.hooks.invalidate(root_path)  # a run that changed nothing keeps the cached answers
        self.hooks.succeeded(root_path)
        note.clear()
        watch.emit(WatchEvent(REINDEX_FINISHED, root, report=report))

    def _report_stale(self, watch: Watch) -> None:
        if watch.cancel.is_set() or not watch.index.exists() or not watch.index.root.is_dir():
            return
        stale = tuple(stale_files(watch.index, self.settings))
        watch.emit(WatchEvent(STALE, str(watch.index.root), stale_files=stale))

    # --- the threads ---
    def _watch(self, root: Path) -> Watch | None:
        with self._lock:
            return self._watches.get(root)

    def _cancel(self, watch: Watch) -> None:
        watch.cancel.set()
        watch.wake.set()
        watch.stop_run()
        self._stop_watcher(watch)

    def _start_watcher(self, watch: Watch) -> None:
        watch.watcher = WorkspaceWatcher(watch.index.root, lambda paths: self._gather(watch, paths),
                                         exclude=self.exclude)
        watch.watcher.start()

    def _stop_watcher(self, watch: Watch) -> None:
        watcher, watch.watcher = watch.watcher, None
        watch.debounce.clear()  # what the stopped watcher gathered is not reported
        if watcher is not None:
            watcher.stop()

    def _gather(self, watch: Watch, paths: list[str]) -> None:
        watch.debounce.add(paths)
        watch.wake.set()

    def _debounce_loop(self, watch: Watch) -> None:
        """Report the gathered paths once their batch is due, until the watch ends."""
        while not watch.cancel.is_set():
            wait = watch.debounce.wait()
            watch.wake.wait(None if wait is None else max(0.0, wait))
            watch.wake.clear()
            batch = watch.debounce.take()
            if batch and not watch.cancel.is_set():
                try:
                    self.changed(watch.index.root, batch)
                except Exception:  # a failing handler must not end the watch
                    log.exception("handling changes in %s failed", watch.index.root)

    def _watch_folder(self, watch: Watch) -> None:
        """Notice the folder going away (renamed, moved, unmounted) and coming back. While it is gone no run
        starts, the one under way stops, and nothing is deleted; once it is back a normal incremental run
        catches up (on a fresh watcher: the old one followed the folder away)."""
        root = watch.index.root
        while not watch.cancel.wait(FOLDER_POLL_SECONDS):
            there = root.is_dir()
            if not there and not watch.missing:
                watch.missing = True
                self.scheduler.set_missing(root, True)
                watch.stop_run()
                self._stop_watcher(watch)
                watch.emit(WatchEvent(FOLDER_MISSING, str(root), message=folder_missing(root)))
            elif there and watch.missing:
                try:
                    self._start_watcher(watch)
                except Exception as error:  # e.g. the folder went again at once: the next poll sees it
                    log.warning("watching %s again failed: %s", root, error)
                    continue
                watch.missing = False
                self.scheduler.set_missing(root, False)
                self.changed(root)


class ReferenceRecounts:
    """A thread that recounts a workspace's references once automatic runs pause for a while (the scheduler
    says when): the count covers every chunk (seconds on a large tree) and would slow the next quick run.
    (The keyword index is not part of it: each file's commit updates it.)"""

    def __init__(self, scheduler: IndexScheduler, indexes: dict[Path, WorkspaceIndex],
                 invalidate: Callable[[Path], None], emit: Callable[[Path, WatchEvent], None]) -> None:
        self.scheduler, self.indexes, self.invalidate, self.emit = scheduler, indexes, invalidate, emit
        self.wake = threading.Event()  # a new recount is due: the thread looks again
        self._closing = threading.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ke-references")
        threading.Thread(target=self._loop, daemon=True, name="ke-scheduler-timer").start()

    def _loop(self) -> None:
        while not self._closing.is_set():
            deadline = self.scheduler.next_deadline()
            self.wake.wait(None if deadline is None else max(0.0, deadline - self.scheduler.clock()))
            self.wake.clear()
            for root in self.scheduler.references_due():
                index = self.indexes.get(root)
                if index is None or self._closing.is_set():
                    continue
                try:
                    self._pool.submit(self._recount, index)
                except RuntimeError:  # closing: the catalogue's references_stale makes the next run recount
                    return

    def _recount(self, index: WorkspaceIndex) -> None:
        refresh_references(index)
        self.invalidate(index.root)
        self.emit(index.root, WatchEvent(REFERENCES, str(index.root)))

    def close(self) -> None:
        self._closing.set()
        self.wake.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
