"""The open workspace: which one, its index health, the question on screen, indexing, and the watch
policy. The window renders what this decides; this talks to the engine through its async API."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from services.core.models import (
    RUNNING_STATES, IndexHealth, IndexReport, ProgressEvent, QueryOptions, QueryResult, run_progress_text,
    vectors_reused_text,
)
from services.indexing.watcher import (
    FOLDER_MISSING, PROGRESS, REINDEX_FINISHED, REINDEX_STARTED, STALE, WATCH_ERROR, WatchEvent,
)
from ui.viewmodels.preferences import Preferences, remember_workspace

if TYPE_CHECKING:  # any engine: in process, the engine process, or a remote one
    from services.engine.service import KnowledgeService

INFO, WARNING, ERROR = "info", "warning", "error"  # the message bar's levels
INDEX, REBUILD = "index", "rebuild"  # what an offer's button starts


@dataclass(frozen=True)
class Offer:
    """A banner the index health puts up, and what its button starts (INDEX, REBUILD, or nothing)."""

    level: str
    text: str
    action: str = ""
    action_text: str = ""


@dataclass(frozen=True)
class WatchReaction:
    """What the window does on a watch event of its workspace."""

    progress_text: str | None = None  # a new indexing line; None leaves the line as it is
    reload_health: bool = False
    refresh_results: bool = False  # answer the question on screen again from the updated index
    error: str = ""
    progress: ProgressEvent | None = None  # an automatic run's progress, to show like a user's run
    auto_run: bool | None = None  # an automatic run started (True) or ended (False); None: no change


def health_offer(health: IndexHealth) -> Offer | None:
    """The banner for a workspace's health (its engine state): an error, or an offer of a normal index
    run (first index, resume, catch up, repair). None while a run is under way or all is well. A full
    rebuild is never offered here: the engine rebuilds by itself when it must, and says why."""
    name = Path(health.workspace).name
    if health.state == "folder-missing":
        return Offer(WARNING, f"The folder of {name} is missing (moved, renamed or deleted). Its index is kept "
                              "as it is; nothing is indexed or deleted until the folder is back.")
    if health.state in RUNNING_STATES:
        return None
    if not health.indexed and health.last_error:
        return Offer(ERROR, health.last_error)
    if not health.indexed:
        return Offer(INFO, f"{name} is not indexed yet.", INDEX, "Index now")
    if health.state == "empty":
        return Offer(INFO, f"Empty folder: {health.message}.")
    if health.state == "damaged":  # `index` repairs it: re-embeds what lacks vectors, rebuilds what is unreadable
        return Offer(ERROR, health.message or "The index is damaged.", INDEX, "Repair index")
    if health.state == "unavailable":  # it cannot be read now: nothing to repair, it passes
        return Offer(ERROR, health.message)
    if health.state == "failed":
        return Offer(ERROR, f"The last index run failed: {health.last_error}", INDEX, "Index again")
    if health.state == "interrupted":
        return Offer(INFO, f"Indexing {name} stopped at "
                           f"{run_progress_text(health.run_chunks_done, health.run_chunks_total)}; "
                           "what was done is kept and searchable.", INDEX, "Resume indexing")
    if health.needs_reindex:
        return Offer(WARNING, f"{len(health.stale_files):,} files changed since the last index; a reindex "
                              "catches up (only what changed is embedded).", INDEX, "Reindex")
    return None


def watch_reaction(event: WatchEvent, indexing: bool) -> WatchReaction:
    """Auto-reindex runs and stale reports refresh the health; a finished run also the results.
    The indexing line is left to a run the user started (`indexing`)."""
    if event.kind == REINDEX_STARTED:
        return WatchReaction(progress_text=None if indexing else "Indexing changed files…",
                             auto_run=None if indexing else True)
    if event.kind == PROGRESS:
        return WatchReaction(progress=None if indexing else event.progress)
    if event.kind == FOLDER_MISSING:
        return WatchReaction(progress_text=None if indexing else "", reload_health=True, auto_run=False)
    if event.kind in (REINDEX_FINISHED, STALE):
        report = event.report if event.kind == REINDEX_FINISHED else None
        text = None
        if report is not None and not indexing:
            changed = report.files_indexed or report.files_removed
            text = (f"Changed files indexed: {report.files_indexed} updated, {report.files_removed} removed"
                    if changed else "")
        if report is not None and report.cancelled and not indexing:
            text = "Indexing changed files was cancelled; what was done is kept"
        changed = report is not None and bool(report.files_indexed or report.files_removed)
        return WatchReaction(progress_text=text, reload_health=True, refresh_results=changed,
                             auto_run=False if event.kind == REINDEX_FINISHED and not indexing else None)
    if event.kind == WATCH_ERROR:
        return WatchReaction(error=f"Indexing changed files failed: {event.message}", auto_run=False)
    return WatchReaction()


def index_report_text(report: IndexReport, seconds: float) -> str:
    if report.cancelled:
        return f"Cancelled after {seconds:.1f} s; the index keeps what was finished."
    text = (f"Done in {seconds:.1f} s: {report.files_indexed} files indexed, "
            f"{report.chunks_embedded} chunks embedded, {report.chunks_total:,} in total")
    if report.rebuilt_reason:
        text += f" (full rebuild: {report.rebuilt_reason})"
    if report.vectors_reused:
        text += f"; {vectors_reused_text(report.vectors_reused, report.chunks_embedded)}"
    return text


class WorkspaceViewModel:
    """The window's per-workspace state. Async methods await the engine; callbacks show what they got."""

    def __init__(self, engine: "KnowledgeService", preferences: Preferences) -> None:
        self.engine = engine
        self.preferences = preferences
        self.workspace = ""
        self.watched = ""  # the workspace the engine watches for this window
        self.health: IndexHealth | None = None
        self.health_message = ""  # the banner the health put up (a later health may take it down)
        self.last_result: QueryResult | None = None
        self.last_report: IndexReport | None = None
        self.cancel_event: threading.Event | None = None
        self.progress_events: list[ProgressEvent] = []
        self.runs_ended = 0  # the window's index runs ended so far: a health read before one ended is stale
        self.closed = False

    # --- workspace ---
    def open(self, path: str) -> str:
        """Switch to `path` (resolved, remembered as the most recent); the previous result is gone."""
        path = str(Path(path).expanduser().resolve())
        self.workspace = path
        self.watched = ""
        self.last_result = None
        remember_workspace(self.preferences.store, path)
        return path

    async def load(self, path: str, show_health: Callable[[IndexHealth], None],
                   show_symbols: Callable[[list[str]], None], on_event: Callable[[WatchEvent], None]) -> IndexHealth:
        """Read `path`'s health; while it is still the open workspace, show it, its symbols, and watch it.
        A health read while an index run ended is not shown: it predates the run, and the run's end reads
        the health again."""
        runs_ended = self.runs_ended
        health = await self.engine.health(path)
        if path != self.workspace or self.runs_ended != runs_ended:
            return health
        self.health = health
        show_health(health)
        if health.indexed:
            names = await self.engine.symbol_names(path)
            if path == self.workspace:
                show_symbols(list(names))
        if self.should_watch(path, health):
            await self.watch(path, on_event)
        return health

    def should_watch(self, path: str, health: IndexHealth) -> bool:
        """Watch a workspace once per opening: a readable one, or an indexed one whose folder is gone (the
        engine notices its return and catches up)."""
        usable = not health.last_error or (health.indexed and health.state == "folder-missing")
        return usable and self.watched != path

    async def watch(self, path: str, on_event: Callable[[WatchEvent], None]) -> None:
        """Keep the index fresh (auto-reindex) or the stale list live while `path` is open."""
        self.watched = path
        await self.engine.watch(path, auto_reindex=self.preferences.auto_reindex,
                                on_event=lambda event: None if self.closed else on_event(event))

    def set_auto_reindex(self, on: bool) -> bool:
        """Remember the choice; True when the open workspace must be watched again under it."""
        self.preferences.auto_reindex = on
        return bool(self.workspace) and not self.closed

    def reaction(self, event: WatchEvent, indexing: bool) -> WatchReaction | None:
        """What to do on a watch event; None for another workspace's, or after the window closed."""
        if event.workspace != self.workspace or self.closed:
            return None
        return watch_reaction(event, indexing)

    def failed_health(self, exc: BaseException) -> IndexHealth | None:
        """The health to show when reading it failed, so the badge does not stay on "checking…"."""
        if not self.workspace:
            return None
        return IndexHealth(workspace=self.workspace, indexed=False, last_error=str(exc) or type(exc).__name__)

    # --- indexing ---
    def rebuild_question(self) -> str:
        chunks = f"all {self.health.chunks:,} chunks" if self.health and self.health.chunks else "every chunk"
        return (f"Rebuild the whole index of {Path(self.workspace).name}? This embeds {chunks} again; "
                f"a plain Reindex (F5) only embeds what changed.")

    def begin_index(self) -> threading.Event:
        self.cancel_event = threading.Event()
        self.progress_events = []
        return self.cancel_event

    async def index(self, path: str, full: bool, progress: Callable[[ProgressEvent], None],
                    cancel: threading.Event) -> tuple[IndexReport, str]:
        """Index `path`: (the report, the line that sums it up)."""
        started = time.monotonic()
        try:
            report = await self.engine.index(path, full=full, progress=progress, cancel=cancel)
        except asyncio.CancelledError:
            cancel.set()
            raise
        finally:
            self.cancel_event = None
            self.runs_ended += 1
        self.last_report = report
        return report, index_report_text(report, report.seconds or (time.monotonic() - started))

    def cancel_index(self) -> bool:
        """Cancel the user's run; False when none is under way."""
        if self.cancel_event is None or self.cancel_event.is_set():
            return False
        self.cancel_event.set()
        return True

    async def stop_automatic_runs(self) -> None:
        """Cancel the automatic (catch-up or watcher) run under way: the engine stops watching, and the
        run stops after its batch. The next Reindex (F5) catches up, and watching resumes after it."""
        path = self.workspace
        self.watched = ""
        await self.engine.unwatch(path)

    # --- the question ---
    def options(self, top_k: int, strategy: str, languages: Sequence[str], path_glob: str) -> QueryOptions:
        return QueryOptions(workspace=self.workspace, top_k=top_k, strategy=strategy, languages=tuple(languages),
                            path_glob=path_glob.strip())

    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        return await self.engine.query(question, options)

    def rerun_on_change(self, in_box: str) -> bool:
        """A new strategy or filter answers the question on screen again."""
        return self.last_result is not None and bool(in_box.strip())

    def question_carried(self, in_box: str) -> bool:
        """After an index update: the question on screen is still in the box (not a new one being typed)."""
        shown = self.last_result.question if self.last_result is not None else None
        return bool(shown) and in_box.strip() == shown

    def close(self) -> None:
        """Stop: cancel indexing; watch events are dropped from now on."""
        self.closed = True
        if self.cancel_event is not None:
            self.cancel_event.set()
