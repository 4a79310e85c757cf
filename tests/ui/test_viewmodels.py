"""The window's view-models (ui/viewmodels), without Qt: plain pytest, coroutines run with asyncio.run.

Decisions (which banner, when to watch, what a watch event does, switching workspaces mid-load) are tested
on FakeEngine, a small in-memory engine: it answers health/symbols/index at a moment the test chooses,
which the real engine cannot be made to do. Labels and the open-index-query flow run on a real
LocalEngine (real model, real Chroma) over a copy of the sample workspace.
"""

from __future__ import annotations

import asyncio
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from services.core.models import IndexHealth, IndexReport
from services.core.settings import DEFAULT_STRATEGY
from services.engine.service import LocalEngine
from services.indexing.watcher import (
    PAUSED, REINDEX_FINISHED, REINDEX_STARTED, RESUMED, STALE, WATCH_ERROR, WatchEvent,
)
from tests.ui.factories import STALE as STALE_FILES, sample_health, sample_result
from ui.viewmodels.labels import LabelsViewModel
from ui.viewmodels.preferences import MAX_RECENT, Preferences, recent_workspaces, remember_workspace
from ui.viewmodels.results import empty_result_text, summary_text, timings_text
from ui.viewmodels.strategies import fallback_strategies, step_strategy
from ui.viewmodels.workspace import (
    ERROR, INDEX, INFO, WARNING, WatchReaction, WorkspaceViewModel, health_offer, index_report_text, watch_reaction,
)

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


class DictStore:
    """QSettings' value/setValue over a dict; values come back as strings, as from an ini file."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def value(self, key: str, default=None):
        return self.values.get(key, default)

    def setValue(self, key: str, value) -> None:  # noqa: N802
        self.values[key] = ("true" if value else "false") if isinstance(value, bool) else value


class FakeEngine:
    """In-memory engine: health and index answer when the test releases `gate` (see module doc)."""

    def __init__(self, health: IndexHealth | None = None) -> None:
        self.next_health = health
        self.gate = asyncio.Event()
        self.watches: list[tuple[str, bool]] = []
        self.on_event = None

    async def health(self, path: str) -> IndexHealth:
        await self.gate.wait()
        return replace(self.next_health, workspace=path) if self.next_health else IndexHealth(path, False)

    async def symbol_names(self, path: str) -> list[str]:
        return ["Store.save", "Store.load"]

    async def watch(self, path: str, *, auto_reindex: bool, on_event) -> None:
        self.watches.append((path, auto_reindex))
        self.on_event = on_event

    async def index(self, path: str, *, full: bool, progress, cancel: threading.Event) -> IndexReport:
        await self.gate.wait()
        return IndexReport(files_indexed=3, files_unchanged=0, files_removed=0, chunks_embedded=12,
                           chunks_total=1200, seconds=2.0, rebuilt_reason="model changed" if full else "")


def session_on(engine, tmp_path: Path, store: DictStore | None = None) -> WorkspaceViewModel:
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    session = WorkspaceViewModel(engine, Preferences(store or DictStore()))
    session.open(str(folder))
    return session


def load(session: WorkspaceViewModel, shown: list) -> IndexHealth:
    async def go():
        session.engine.gate.set()
        return await session.load(session.workspace, shown.append, shown.append, shown.append)
    return asyncio.run(go())


# --- preferences ---
def test_recent_workspaces_most_recent_first_without_duplicates_and_capped():
    store = DictStore()
    for n in range(MAX_RECENT + 2):
        remember_workspace(store, f"/ws/{n}")
    remember_workspace(store, "/ws/5")
    recent = recent_workspaces(store)
    assert recent[0] == "/ws/5" and len(recent) == MAX_RECENT and recent.count("/ws/5") == 1
    assert store.value("lastWorkspace") == "/ws/5"


def test_filters_and_history_are_kept_per_workspace():
    prefs = Preferences(DictStore())
    prefs.save_filters("/a", ["python"], " src/* ")
    prefs.save_history("/a", ["save a note"], ["pinned one"])
    assert prefs.filters("/a") == (["python"], "src/*")
    assert prefs.history("/a") == (["save a note"], ["pinned one"])
    assert prefs.filters("/b") == ([], "") and prefs.history("/b") == ([], [])


def test_strategy_auto_reindex_and_result_count_defaults_and_saved_values():
    store = DictStore()
    prefs = Preferences(store)
    assert prefs.strategy() == DEFAULT_STRATEGY and prefs.auto_reindex and prefs.top_k() == 10
    store.setValue("strategy", "rrf")
    store.setValue("topK", "17")
    prefs.auto_reindex = False
    assert (prefs.strategy(), prefs.top_k(), prefs.auto_reindex) == ("rrf", 17, False)
    store.setValue("topK", "many")
    assert prefs.top_k() == 10


# --- strategies ---
def test_stepping_through_strategies_skips_unavailable_ones_and_wraps():
    available = [True, False, True, False]
    assert step_strategy(available, 0, 1) == 2
    assert step_strategy(available, 2, 1) == 0
    assert step_strategy(available, 0, -1) == 2
    assert step_strategy([False, False], 0, 1) is None
    assert [s.name for s in fallback_strategies()] == ["none"]


# --- health and watch policy ---
def test_health_offers_a_first_index_a_reindex_or_shows_the_error():
    first = health_offer(IndexHealth("/w/notes", False))
    assert (first.level, first.action, first.action_text) == (INFO, INDEX, "Index now")
    assert "notes is not indexed yet" in first.text
    broken = health_offer(IndexHealth("/w/x", False, last_error="/w/x does not exist"))
    assert (broken.level, broken.text, broken.action) == (ERROR, "/w/x does not exist", "")
    # many changed files: a normal run catches up (never "the model changed", never a full rebuild unasked)
    old = health_offer(sample_health(stale_files=STALE_FILES, needs_reindex=True))
    assert (old.level, old.action, old.action_text) == (WARNING, INDEX, "Reindex")
    assert "model" not in old.text and "2 files changed" in old.text
    assert health_offer(sample_health()) is None


def test_each_engine_state_gets_its_own_banner():
    interrupted = health_offer(sample_health(state="interrupted", run_chunks_done=1200, run_chunks_total=7206))
    assert (interrupted.action, interrupted.action_text) == (INDEX, "Resume indexing")
    assert "1,200 of 7,206 chunks done" in interrupted.text and "model" not in interrupted.text
    gone = health_offer(sample_health(state="folder-missing"))
    assert gone.level == WARNING and gone.action == "" and "missing" in gone.text
    assert health_offer(sample_health(state="resuming")) is None  # the run shows itself


def test_paused_automatic_indexing_says_how_many_files_changed_and_offers_resume():
    paused = health_offer(sample_health(stale_files=STALE_FILES), paused=True)
    assert (paused.action, paused.action_text) == (INDEX, "Resume")
    assert paused.text.startswith("Automatic indexing paused — 2 files changed")
    stopped = health_offer(sample_health(state="interrupted", run_chunks_done=1200, run_chunks_total=7206,
                                         stale_files=STALE_FILES[:1]), paused=True)
    assert "stopped at 1,200 of 7,206 chunks done, 1 file changed" in stopped.text
    assert health_offer(sample_health(state="indexing"), paused=True) is None  # a run shows itself
    assert health_offer(sample_health(state="failed", last_error="disk full"), paused=True).level == ERROR
    assert watch_reaction(WatchEvent(PAUSED, "/w"), False).paused is True
    assert watch_reaction(WatchEvent(RESUMED, "/w"), False) == WatchReaction(reload_health=True, paused=False)


def test_a_damaged_or_failed_index_says_so_and_offers_the_repair():
    """Never "up to date" over a damaged index: the banner shows what is wrong and its button runs `index`."""
    message = "damaged: 9 chunks without vectors. Run `knowledge-explorer index` to repair it"
    damaged = health_offer(sample_health(state="damaged", message=message, needs_reindex=True))
    assert (damaged.level, damaged.text, damaged.action, damaged.action_text) == (ERROR, message, INDEX, "Repair index")
    failed = health_offer(sample_health(state="failed", last_error="No space left on device"))
    assert (failed.level, failed.action) == (ERROR, INDEX)
    assert "No space left on device" in failed.text


def test_watch_events_refresh_health_results_and_the_indexing_line():
    report = IndexReport(2, 5, 1, 8, 100, 1.0)
    finished = watch_reaction(WatchEvent(REINDEX_FINISHED, "/w", report=report), indexing=False)
    assert finished.reload_health and finished.refresh_results
    assert finished.progress_text == "Changed files indexed: 2 updated, 1 removed"
    added = IndexReport(166, 5, 0, 800, 900, 1.0, files_added=166)  # a copied folder: new, not "updated"
    assert watch_reaction(WatchEvent(REINDEX_FINISHED, "/w", report=added), False).progress_text == \
        "Changed files indexed: 166 new"
    assert watch_reaction(WatchEvent(REINDEX_FINISHED, "/w", report=report), indexing=True).progress_text is None
    stale = watch_reaction(WatchEvent(STALE, "/w"), indexing=False)
    assert stale.reload_health and not stale.refresh_results
    assert watch_reaction(WatchEvent(REINDEX_STARTED, "/w"), False).progress_text == "Indexing changed files…"
    assert watch_reaction(WatchEvent(REINDEX_STARTED, "/w"), True).progress_text is None
    error = watch_reaction(WatchEvent(WATCH_ERROR, "/w", message="disk full"), False)
    assert error.error == "Indexing changed files failed: disk full" and not error.reload_health


def test_a_loaded_workspace_is_shown_and_watched_once_with_the_auto_reindex_choice(tmp_path):
    store = DictStore()
    Preferences(store).auto_reindex = False
    session = session_on(FakeEngine(sample_health()), tmp_path, store)
    shown: list = []
    health = load(session, shown)
    assert health.indexed and session.health == health
    assert shown[:2] == [health, ["Store.save", "Store.load"]]
    assert session.engine.watches == [(session.workspace, False)]
    load(session, shown)
    assert len(session.engine.watches) == 1  # watched once per opening
    session.engine.on_event(WatchEvent(STALE, session.workspace))
    assert isinstance(shown[-1], WatchEvent)


def test_a_workspace_left_while_loading_is_not_shown(tmp_path):
    engine = FakeEngine(sample_health())
    session = session_on(engine, tmp_path)
    first = session.workspace
    shown: list = []

    async def go():
        loading = asyncio.ensure_future(session.load(first, shown.append, shown.append, shown.append))
        await asyncio.sleep(0)  # it now waits for the engine's answer
        other = tmp_path / "other"
        other.mkdir()
        session.open(str(other))
        engine.gate.set()
        return await loading
    health = asyncio.run(go())
    assert health.workspace == first and shown == [] and engine.watches == [] and session.health is None


def test_a_workspace_that_cannot_be_read_is_not_watched_and_its_error_is_shown(tmp_path):
    session = session_on(FakeEngine(IndexHealth("", False, last_error="does not exist")), tmp_path)
    load(session, [])
    assert session.engine.watches == []
    failed = session.failed_health(RuntimeError("boom"))
    assert (failed.workspace, failed.indexed, failed.last_error) == (session.workspace, False, "boom")
    assert WorkspaceViewModel(FakeEngine(), Preferences(DictStore())).failed_health(RuntimeError()) is None


def test_watch_events_go_only_to_the_open_workspace_and_stop_once_closed(tmp_path):
    session = session_on(FakeEngine(sample_health()), tmp_path)
    here, elsewhere = WatchEvent(STALE, session.workspace), WatchEvent(STALE, "/another")
    assert session.reaction(here, False).reload_health and session.reaction(elsewhere, False) is None
    assert session.set_auto_reindex(False) and not session.preferences.auto_reindex
    seen: list = []
    load(session, seen)
    session.close()
    session.engine.on_event(here)
    assert session.reaction(here, False) is None and not any(isinstance(e, WatchEvent) for e in seen)
    assert not session.set_auto_reindex(True)


# --- indexing and the question on screen ---
def test_indexing_sums_up_its_report_and_a_cancelled_run_sets_the_cancel_event(tmp_path):
    session = session_on(FakeEngine(), tmp_path)
    cancel = session.begin_index()
    assert session.progress_events == [] and session.cancel_event is cancel

    async def run(full):
        session.engine.gate.set()
        return await session.index(session.workspace, full, print, cancel)
    report, text = asyncio.run(run(True))
    assert session.last_report is report
    assert text == "Done in 2.0 s: 3 files indexed, 12 chunks embedded, 1,200 in total (full rebuild: model changed)"
    assert index_report_text(replace(report, vectors_reused=9), 2.0) == (
        "Done in 2.0 s: 3 files indexed, 12 chunks embedded, 1,200 in total (full rebuild: model changed); "
        "vectors reused: 9 of 12")

    async def cancelled():
        task = asyncio.ensure_future(session.index(session.workspace, False, print, cancel))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    session.engine.gate = asyncio.Event()
    asyncio.run(cancelled())
    assert cancel.is_set()


def test_rebuild_question_says_what_a_rebuild_really_costs(tmp_path):
    session = session_on(FakeEngine(sample_health(chunks=4321)), tmp_path)
    assert "every chunk" in session.rebuild_question()
    load(session, [])
    question = session.rebuild_question()
    assert f"Rebuild the whole index of {Path(session.workspace).name}?" in question and "4,321 chunks" in question
    # a rebuild takes the vectors of unchanged text from the shared cache: it does not embed everything again
    assert "vector cache are reused" in question and "embeds all" not in question


def test_the_question_on_screen_is_answered_again_only_while_it_is_in_the_box(tmp_path):
    session = session_on(FakeEngine(), tmp_path)
    assert not session.rerun_on_change("save notes") and not session.question_carried("save notes")
    session.last_result = sample_result()
    assert session.rerun_on_change("anything typed") and not session.rerun_on_change("  ")
    assert session.question_carried(" save notes ") and not session.question_carried("save no")
    session.open(str(tmp_path))
    assert session.last_result is None  # another workspace: nothing carried over


# --- texts ---
def test_status_line_timings_and_the_empty_result_explanation():
    result = sample_result()
    assert summary_text(result, "python") == ("4 results for “save notes” · 9 above threshold of 120 chunks"
                                              " · filtered: python")
    assert timings_text(result) == "embed 12 ms · search 4 ms · rerank 1 ms · expand 1 ms · total 18 ms"
    empty = replace(result, results=[], original=[], removed={"languages": 3, "threshold": 7},
                    below_threshold=result.original[0])
    text = empty_result_text(empty, "go")
    assert text.startswith("No results: the language filter excluded 3 of the nearest chunks above the "
                           "threshold; 7 candidates scored below the relevance threshold.")
    assert "Closest: Store.save (notes/store.py:7), similarity 0.71." in text and text.endswith("Filters on: go.")


# --- labels, on the real engine ---
def test_labels_marked_in_the_window_are_what_the_engine_holds_for_the_question(tmp_path):
    engine = LocalEngine(data_dir=tmp_path / "data")
    one, other = tmp_path / "one", tmp_path / "other"
    one.mkdir()
    other.mkdir()
    try:
        labels = LabelsViewModel(engine)
        item = sample_result().results[0]
        text = asyncio.run(labels.mark(str(one), "save notes", item, True))
        assert text == "Marked Index.add relevant for “save notes”."
        asyncio.run(labels.mark(str(one), "save notes", sample_result().results[3], False))
        grades = asyncio.run(labels.grades(str(one), "save notes"))
        assert grades == {("notes/index.py", "Index.add"): 1, ("notes/store.py", "Store.load"): 0}
        assert asyncio.run(labels.grades(str(other), "save notes")) == {}
    finally:
        engine.close()


# --- the whole flow on the real engine ---
@pytest.mark.slow
def test_open_index_and_query_a_workspace_through_the_real_engine(tmp_path):
    folder = tmp_path / "small"
    shutil.copytree(SAMPLE / "notes", folder / "notes")
    engine = LocalEngine(data_dir=tmp_path / "data")
    session = WorkspaceViewModel(engine, Preferences(DictStore()))
    shown: list = []

    async def flow():
        session.open(str(folder))
        before = await session.load(session.workspace, shown.append, shown.append, shown.append)
        report, text = await session.index(session.workspace, False, session.progress_events.append,
                                           session.begin_index())
        after = await session.load(session.workspace, shown.append, shown.append, shown.append)
        options = session.options(5, "none", [], "")
        return before, report, text, after, await session.query("save a note", options)
    try:
        before, report, text, after, result = asyncio.run(flow())
    finally:
        engine.close()
    assert not before.indexed and health_offer(before).action == INDEX
    assert report.files_indexed == 4 and text.startswith("Done in ")
    assert after.indexed and health_offer(after) is None and session.health == after
    assert any(isinstance(s, list) and s for s in shown)  # the symbol names were shown
    assert session.watched == session.workspace
    options = session.options(5, "rrf", ["python"], " notes/* ")
    assert (options.workspace, options.strategy, options.path_glob) == (session.workspace, "rrf", "notes/*")
    assert result.results and result.results[0].chunk.path.startswith("notes/")


def test_a_run_s_percentage_never_goes_backwards_and_starts_afresh_with_the_next_run():
    """Seen in the title: 60 → 90 → 100 → 69 % in one run, as its phases count different things (issue 40)."""
    from services.core.models import ProgressEvent
    from ui.viewmodels.progress import RunProgress, progress_text

    run = RunProgress()
    events = [ProgressEvent("embedding", 6, 10, 60, 100, 10.0, None, "", index_done=60, index_total=100),
              ProgressEvent("embedding", 9, 10, 90, 100, 10.0, None, "", index_done=90, index_total=100),
              ProgressEvent("embedding", 10, 10, 100, 100, 10.0, None, "", index_done=100, index_total=100),
              ProgressEvent("writing", 3, 10, 0, 0, 0.0, None, "", index_done=69, index_total=100)]
    assert [run.percent(e) for e in events] == [60, 90, 100, 100]
    assert "(100 %)" in progress_text(events[-1], run.percent(events[-1]))
    run.end()
    assert run.percent(ProgressEvent("scanning", 1, 10, 0, 0, 0.0, None, "")) == 10  # the next run starts at 0


def test_the_files_summary_says_what_the_answer_stands_on():
    from services.core.models import FileAnswer
    from ui.viewmodels.files import summary_text as files_summary

    partial = FileAnswer("save a note", "auto", [], [], history="none",
                         warning="vectors for 12 of 121 chunks (9 %): ranked by keywords and names where vectors are missing")
    assert files_summary(partial).startswith("Warning: vectors for 12 of 121 chunks (9 %)")
    assert not files_summary(FileAnswer("save a note", "auto", [], [], history="none")).startswith("Warning")
