"""The open workspace: which one, its index health, the question on screen, indexing, and the watch
policy. The window renders what this decides; this talks to the engine through its async API."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from services.core.models import (
    FOLDER_MISSING, PAUSED, PROGRESS, REFERENCES, REINDEX_FINISHED, REINDEX_STARTED, RESUMED, RUNNING_STATES, STALE,
    WATCH_ERROR, IndexHealth, IndexReport, ProgressEvent, QueryOptions, QueryResult, ResultChunk, WatchEvent,
    run_progress_text, vectors_reused_text,
)
from services.core.messages import MAX_TOP_K
from ui.viewmodels.preferences import Preferences, remember_workspace

if TYPE_CHECKING:  # any engine: in process, the engine process, or a remote one
    from services.engine.protocol import Engine

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
    paused: bool | None = None  # automatic indexing paused (True) or resumed (False); None: no change


def health_offer(health: IndexHealth, paused: bool = False) -> Offer | None:
    """The banner for a workspace's health (its engine state): an error, or an offer of a normal index
    run (first index, resume, catch up, repair). None while a run is under way or all is well. A full
    rebuild is never offered here: the engine rebuilds by itself when it must, and says why. `paused`:
    the engine's automatic indexing of it is paused (an automatic run was cancelled)."""
    name = Path(health.workspace).name
    if health.state == "folder-missing":
        return Offer(WARNING, f"The folder of {name} is missing (moved, renamed or deleted). Its index is kept "
                              "as it is; nothing is indexed or deleted until the folder is back.")
    if health.state in RUNNING_STATES:
        return None
    if paused and health.indexed and health.state not in ("damaged", "failed", "error"):
        return Offer(INFO, paused_text(health), INDEX, "Resume")
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
        done = run_progress_text(health.run_chunks_done, health.run_chunks_total)
        if health.run_cancelled:  # Resume embeds the chunks it left waiting
            return Offer(INFO, f"{name}: {health.run_cancelled}, at {done}; what was done is kept and "
                               "searchable.", INDEX, "Resume")
        return Offer(INFO, f"Indexing {name} stopped at {done}; what was done is kept and searchable.", INDEX,
                     "Resume indexing")
    if health.needs_reindex:
        return Offer(WARNING, f"{len(health.stale_files):,} files changed since the last index; a reindex "
                              "catches up (only what changed is embedded).", INDEX, "Reindex")
    if health.run_cancelled:  # it left nothing to resume: no Resume that would do nothing
        if health.stale_files:
            return Offer(INFO, f"{name}: {health.run_cancelled}; what it did not reach is listed as stale.",
                         INDEX, "Reindex")
        return Offer(INFO, f"{name}: {health.run_cancelled}; the index is whole and searchable.")
    return None


def paused_text(health: IndexHealth) -> str:
    """"Automatic indexing paused — 3 files changed" (and where an interrupted run stopped)."""
    changed = len(health.stale_files)
    parts = [f"{changed:,} file{'' if changed == 1 else 's'} changed" if changed else "nothing changed yet"]
    if health.state == "interrupted":
        parts.insert(0, f"stopped at {run_progress_text(health.run_chunks_done, health.run_chunks_total)}")
    return f"Automatic indexing paused — {', '.join(parts)}. Changes are listed as stale until you resume."


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
            text = changed_files_text(report)
        if report is not None and report.cancelled and not indexing:
            text = "Indexing changed files was cancelled; what was done is kept"
        changed = report is not None and bool(report.files_indexed or report.files_removed)
        return WatchReaction(progress_text=text, reload_health=True, refresh_results=changed,
                             auto_run=False if event.kind == REINDEX_FINISHED and not indexing else None)
    if event.kind == WATCH_ERROR:
        return WatchReaction(error=f"Indexing changed files failed: {event.message}", auto_run=False)
    if event.kind in (PAUSED, RESUMED):
        return WatchReaction(reload_health=True, paused=event.kind == PAUSED)
    if event.kind == REFERENCES:  # the ranking shown since the last runs lacked their files' references
        return WatchReaction(refresh_results=True)
    return WatchReaction()


def changed_files_text(report: IndexReport) -> str:
    """"Changed files indexed: 166 new, 2 updated, 1 removed" (only the counts that are not 0); "" when none."""
    updated = report.files_indexed - report.files_added
    counts = [(report.files_added, "new"), (updated, "updated"), (report.files_removed, "removed")]
    parts = [f"{count:,} {what}" for count, what in counts if count]
    return f"Changed files indexed: {', '.join(parts)}" if parts else ""


def index_report_text(report: IndexReport, seconds: float) -> str:
    if report.cancelled:
        return (f"Cancelled after {seconds:.1f} s: {report.files_indexed:,} files indexed, "
                f"{report.chunks_embedded:,} chunks embedded; the index keeps what was finished.")
    files = f"{report.files_indexed:,} files indexed" + (f" ({report.files_added:,} new)" if report.files_added else "")
    text = f"Done in {seconds:.1f} s: {files}, {report.chunks_embedded:,} chunks embedded, {report.chunks_total:,} in total"
    if report.rebuilt_reason:
        text += f" (full rebuild: {report.rebuilt_reason})"
    if report.vectors_reused:
        text += f"; {vectors_reused_text(report.vectors_reused, report.chunks_embedded)}"
    return text


class WorkspaceViewModel:
    """The window's per-workspace state. Async methods await the engine; callbacks show what they got."""

    def __init__(self, engine: "Engine", preferences: Preferences) -> None:
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
        self.paused = False  # the engine paused automatic indexing of the open workspace (its PAUSED event)
        self.closed = False

    # --- workspace ---
    def open(self, path: str) -> str:
        """Switch to `path` (resolved, remembered as the most recent); the previous result is gone."""
        path = str(Path(path).expanduser().resolve())
        self.workspace = path
        self.watched = ""
        self.paused = False  # the engine says so again when it watches it
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
        reaction = watch_reaction(event, indexing)
        if reaction.paused is not None:
            self.paused = reaction.paused
        return reaction

    def failed_health(self, exc: BaseException) -> IndexHealth | None:
        """The health to show when reading it failed, so the badge does not stay on "checking…"."""
        if not self.workspace:
            return None
        return IndexHealth(workspace=self.workspace, indexed=False, last_error=str(exc) or type(exc).__name__)

    # --- indexing ---
    def rebuild_question(self) -> str:
        """What a full rebuild really costs: every file is read, chunked and stored again, but a chunk whose
        text is in the data dir's vector cache takes its vector from there instead of the model."""
        chunks = f"its {self.health.chunks:,} chunks" if self.health and self.health.chunks else "every chunk"
        return (f"Rebuild the whole index of {Path(self.workspace).name}? Every file is read and {chunks} "
                "stored again; vectors already in the shared vector cache are reused, so only chunks whose text "
                "it lacks are embedded. A plain Reindex (F5) only looks at what changed.")

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

    async def pause_automatic_runs(self) -> None:
        """Cancel the automatic (catch-up or watcher) run under way: it stops after its batch, and the
        engine starts no automatic run of this workspace until the next Reindex (F5, "Resume") finishes;
        changes meanwhile are listed as stale."""
        await self.engine.pause_watch(self.workspace)

    # --- the question ---
    def options(self, top_k: int, strategy: str, languages: Sequence[str], path_glob: str) -> QueryOptions:
        return QueryOptions(workspace=self.workspace, top_k=top_k, strategy=strategy, languages=tuple(languages),
                            path_glob=path_glob.strip())

    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        return await self.engine.query(question, options)

    def rerun_on_change(self, in_box: str) -> bool:
        """A new strategy or filter answers the question on screen again."""
        return self.last_result is not None and bool(in_box.strip())

    async def outline(self, path: str) -> list[ResultChunk]:
        """The chunks the index has for the file `path`, as the engine answers a question kept to that file
        (its name; every chunk of it, up to MAX_TOP_K, whatever its relevance)."""
        options = QueryOptions(self.workspace, top_k=MAX_TOP_K, strategy="none", min_relevance=0.0,
                               path_glob=path, expand_context=False)
        result = await self.engine.query(PurePosixPath(path).stem or path, options)
        return [item for item in result.results if item.chunk.path == path]

    def question_carried(self, in_box: str) -> bool:
        """After an index update: the question on screen is still in the box (not a new one being typed)."""
        shown = self.last_result.question if self.last_result is not None else None
        return bool(shown) and in_box.strip() == shown

    def close(self) -> None:
        """Stop: cancel indexing; watch events are dropped from now on."""
        self.closed = True
        if self.cancel_event is not None:
            self.cancel_event.set()
