"""Compare view on the real LocalEngine (real model, real Chroma), offscreen. Its labels reaching a remote
engine: tests/contract/test_engine_contract.py."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from PySide6.QtCore import Qt

from services.storage.labels import default_labels_file
from services.core.labelled import load_queries
from services.evaluation.report import EvalReport, StrategyReport
from services.engine.service import LocalEngine
from ui.compare import CompareView
from ui.compare_rankings import ResultRole
from tests.ui.factories import sample_result
from tests.ui.test_viewmodels import DictStore
from ui.viewmodels.preferences import Preferences

FILES = {
    "maths.py": 'def is_prime(n):\n    """Check whether a number is prime."""\n    if n < 2:\n        return False\n'
                '    return all(n % d for d in range(2, int(n ** 0.5) + 1))\n\n\n'
                'def mean(values):\n    """Average of a list of numbers."""\n    return sum(values) / len(values)\n',
    "text/strings.py": 'def reverse_string(text):\n    """Return the string reversed."""\n    return text[::-1]\n\n\n'
                       'def shout(text):\n    """Upper-case the text."""\n    return text.upper()\n',
    "io_utils.py": 'import json\n\n\ndef read_json_file(path):\n    """Load a JSON document from disk."""\n'
                   '    with open(path) as f:\n        return json.load(f)\n',
}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = LocalEngine(data_dir=tmp_path_factory.mktemp("ke-data"))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("ws") / "tiny"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def view(loop, qtbot, service, workspace, tmp_path):
    import asyncio
    task = asyncio.ensure_future(service.index(workspace))
    qtbot.waitUntil(task.done, timeout=240_000)
    task.result()
    widget = CompareView(service)
    qtbot.addWidget(widget)
    widget.set_workspace(workspace)
    widget.show()
    return widget


def column_titles(table):
    return [table.horizontalHeaderItem(c).text().split("\n")[0] for c in range(table.columnCount())]


def test_question_runs_through_every_available_strategy_as_columns(view, service, qtbot):
    view.set_question("check whether a number is prime")
    task = view.run_question()
    qtbot.waitUntil(task.done, timeout=120_000)
    listed = asyncio.ensure_future(service.strategies())
    qtbot.waitUntil(listed.done)
    available = [s.name for s in listed.result() if s.available]
    rankings = view.rankings_panel.rankings
    assert column_titles(rankings) == ["none"] + [n for n in available if n != "none"]
    assert rankings.item(0, 0).text().startswith("is_prime\n0.") and rankings.item(0, 0).text().endswith(
        " · maths.py")  # rank 1 of the vector ranking
    assert all(rankings.item(0, c) is not None for c in range(rankings.columnCount()))
    assert view.status.text() == "Done" and not view.cancel_button.isEnabled()


def labelled(qtbot, view, row: int, column: int, relevant: bool) -> None:
    task = view.rankings_panel.label_cell(row, column, relevant)
    qtbot.waitUntil(task.done, timeout=30_000)
    task.result()


def test_labels_from_the_rankings_feed_an_evaluation_with_metrics_and_charts(view, qtbot, service, workspace):
    # two chunks pass the relevance threshold (keyword-only hits below it no longer pad the list)
    question = "check whether a number is prime, or average the numbers"
    view.set_question(question)
    qtbot.waitUntil(view.run_question().done, timeout=120_000)
    labelled(qtbot, view, 0, 0, True)
    table = view.rankings_panel.rankings
    top = table.item(0, 0).data(ResultRole).chunk.id
    row, col = next((r, c) for r in range(table.rowCount()) for c in range(table.columnCount())
                    if table.item(r, c) is not None and table.item(r, c).data(ResultRole).chunk.id != top)
    bottom = table.item(row, col)
    labelled(qtbot, view, row, col, False)
    assert view.status.text().startswith("Labelled ") and view.status.text().endswith("as not relevant")
    assert table.item(0, 0).background().color().green() > table.item(0, 0).background().color().red()
    assert bottom.background().color().red() > bottom.background().color().green()
    grades = asyncio.ensure_future(service.labels_for(workspace, question))  # the engine keeps them
    qtbot.waitUntil(grades.done)
    assert grades.result()[("maths.py", "is_prime")] == 1 and sorted(grades.result().values()) == [0, 1]

    labels_file = default_labels_file(service.data_dir, workspace)  # the engine's labels, as `eval` reads them
    assert load_queries(labels_file)[0].relevant[0].path == "maths.py"
    assert view.load_query_set(labels_file) == 1
    task = view.run_query_set()
    qtbot.waitUntil(task.done, timeout=180_000)
    shown = view.report_panel
    report = shown.report
    assert report is not None and report.queries == 1 and report.documents == 3
    assert report.strategies["none"].metrics["mrr@10"] == 1.0
    assert shown.metrics.rowCount() >= len(report.strategies)
    assert shown.metrics.item(0, 0).text() == "1.000"
    assert len(shown.bar_items(shown.quality_plot)) == 5  # one series per metric
    assert len(shown.bar_items(shown.latency_plot)) == 2  # p50 and p95
    assert view.tabs.currentIndex() == 1


def test_a_long_evaluation_can_be_cancelled(view, qtbot, tmp_path):
    queries = tmp_path / "many.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": f"reverse a string, variant {i}",
                                           "relevant": [{"path": "text/strings.py", "symbol": "reverse_string"}]})
                               + "\n" for i in range(200)))
    view.load_query_set(queries)
    outcome = []
    view.finished.connect(outcome.append)
    task = view.run_query_set()
    qtbot.waitUntil(lambda: view.progress.value() >= 1, timeout=120_000)
    assert view.cancel_button.isEnabled()
    qtbot.mouseClick(view.cancel_button, qtbot_left())
    qtbot.waitUntil(task.done, timeout=30_000)
    assert task.cancelled() and outcome == ["cancelled"]
    assert view.status.text() == "Cancelled" and view.report_panel.report is None
    assert view.run_set_button.isEnabled()


def test_without_a_workspace_nothing_runs(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    widget.set_question("anything")
    assert widget.run_question() is None
    assert widget.status.text() == "Open a workspace first."


def test_rankings_and_report_display_hand_made_results(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    result = sample_result()
    widget.rankings_panel.show_rankings({"none": result, "hybrid": result})
    rankings = widget.rankings_panel.rankings
    assert rankings.rowCount() == 4 and rankings.columnCount() == 2
    assert rankings.item(2, 1).text() == "SyncNotes\n0.520 new · sync.go"  # name, score, movement, file
    assert rankings.item(0, 1).text() == "Index.add\n0.930 ▲2 · index.py"
    assert "new (keyword match)" in rankings.item(2, 1).toolTip()
    base = StrategyReport("none", {"mrr@10": 0.5, "ndcg@10": 0.5, "p@5": 0.1, "r@10": 0.5, "r@100": 1.0}, [5.0])
    worse = StrategyReport("rrf", {"mrr@10": 0.25, "ndcg@10": 0.4, "p@5": 0.1, "r@10": 0.5, "r@100": 1.0}, [9.0])
    widget.show_report(EvalReport({"none": base, "rrf": worse}, 2, 4, skipped={"llm": "no endpoint"}))
    metrics = widget.report_panel.metrics
    assert metrics.item(1, 0).text() == "0.250 (-0.250)"
    assert metrics.verticalHeaderItem(2).text() == "llm"
    assert metrics.item(2, 0).text() == "not run: no endpoint"
    assert metrics.columnSpan(2, 0) == metrics.columnCount()  # the reason does not widen column 0
    widths = [metrics.columnWidth(c) for c in range(metrics.columnCount())]
    assert max(widths) < 3 * min(widths)  # every column fits its contents, none is stretched


def qtbot_left():
    from PySide6.QtCore import Qt
    return Qt.MouseButton.LeftButton


def test_selecting_a_result_selects_it_in_every_strategy_column(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    reranked = sample_result()  # C, A, E, B
    vector = dataclasses.replace(reranked, strategy="none", results=reranked.original)  # A, B, C, D
    panel = widget.rankings_panel
    panel.show_rankings({"none": vector, "hybrid": reranked})
    panel.rankings.setCurrentCell(0, 0)  # A
    assert panel.selected_ranks() == {"none": 1, "hybrid": 2}
    panel.rankings.setCurrentCell(2, 1)  # E: found by the keyword index only
    assert panel.selected_ranks() == {"hybrid": 3}


def test_without_an_engine_a_label_is_not_taken(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    widget.rankings_panel.show_rankings({"none": sample_result()})
    assert widget.rankings_panel.label_cell(0, 0, True) is None


def report_with_per_query_scores(queries: int, better_on: int) -> EvalReport:
    """hybrid finds each query's document at rank 1 on the first `better_on` queries, `none` at rank 2."""
    from services.evaluation.runner import score_rankings
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(queries)}
    none = {f"q{i}": ["x", f"d{i}"] for i in range(queries)}
    hybrid = {f"q{i}": [f"d{i}"] if i < better_on else ["x", "y", "z"] for i in range(queries)}
    report = score_rankings(qrels, {"none": none, "hybrid": hybrid})
    report.query_texts = {f"q{i}": f"question number {i}" for i in range(queries)}
    return report


def test_per_query_wins_sort_and_a_click_opens_the_question(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    widget.show()
    widget.show_report(report_with_per_query_scores(queries=6, better_on=2))
    table = widget.report_panel.per_query
    assert table.rowCount() == 6
    # two-line headers keep the strategy columns narrow, so the question stays readable
    assert [table.horizontalHeaderItem(c).text() for c in range(3)] == ["Query", "none\nMRR@10", "hybrid\nΔ 2▲ 4▼"]
    table.sortItems(2, Qt.SortOrder.DescendingOrder)
    assert [table.item(r, 2).text() for r in range(6)] == ["+0.500"] * 2 + ["-0.500"] * 4
    opened = []
    widget.query_opened.connect(opened.append)
    rect = table.visualItemRect(table.item(0, 0))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert opened and opened[0] in ("question number 0", "question number 1")
    significance = widget.report_panel.significance
    assert significance.item(0, 1).text() == significance.item(1, 0).text() != ""


def test_the_recommended_strategy_is_marked_and_becomes_the_workspace_default(qtbot, loop, service, tmp_path):
    preferences = Preferences(DictStore())  # the window's settings
    widget = CompareView(service, preferences=preferences)
    qtbot.addWidget(widget)
    widget.set_workspace(tmp_path / "proj")
    widget.show()
    widget.show_report(report_with_per_query_scores(queries=40, better_on=36))
    shown = widget.report_panel
    assert shown.metrics.verticalHeaderItem(1).text() == "★ hybrid"
    assert shown.recommendation.text().startswith("★ Recommended for this workspace: hybrid.")
    assert shown.use_button.text() == "Use hybrid for this workspace"  # the text and its button agree
    chosen = []
    widget.default_strategy_chosen.connect(chosen.append)
    qtbot.mouseClick(shown.use_button, Qt.MouseButton.LeftButton)
    assert chosen == ["hybrid"]
    again = CompareView(service, preferences=preferences)  # the next time the workspace is opened
    qtbot.addWidget(again)
    again.default_strategy_chosen.connect(chosen.append)
    again.set_workspace(tmp_path / "proj")
    assert chosen == ["hybrid", "hybrid"]


def test_a_small_set_recommends_none_and_says_why(qtbot, loop):
    widget = CompareView(None)
    qtbot.addWidget(widget)
    widget.show_report(report_with_per_query_scores(queries=6, better_on=4))
    recommendation = widget.report_panel.recommendation
    assert recommendation.text().startswith("★ Recommended for this workspace: none.")
    assert "not significant" in recommendation.text()


def test_an_evaluation_shows_that_it_is_computing_metrics_after_the_last_query(view, qtbot, tmp_path):
    queries = tmp_path / "one.jsonl"
    queries.write_text(json.dumps({"id": "q1", "text": "reverse a string",
                                   "relevant": [{"path": "text/strings.py", "symbol": "reverse_string"}]}) + "\n")
    view.load_query_set(queries)
    stages, texts = [], []
    view.stage_changed.connect(lambda stage: (stages.append(stage), texts.append(view.status.text())))
    task = view.run_query_set()
    qtbot.waitUntil(task.done, timeout=180_000)
    assert stages == ["querying", "computing", ""]
    assert "computing metrics" in texts[1]  # what the user read while ranx worked in a thread
    assert view.report_panel.report is not None and view.progress.maximum() > 0  # the busy bar is gone


def test_an_evaluation_is_kept_with_its_date_and_index_and_shown_when_the_workspace_opens_again(
        loop, qtbot, service, tmp_path):
    from services.storage.labels import default_labels_file, record_label

    workspace = tmp_path / "kept"  # its own workspace: its kept report is seen by no other test
    for name, text in FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    indexed = asyncio.ensure_future(service.index(workspace))
    qtbot.waitUntil(indexed.done, timeout=240_000)
    labels = default_labels_file(service.data_dir, workspace)
    record_label(labels, "check whether a number is prime", "maths.py", "is_prime", True)
    preferences = Preferences(DictStore())  # the window's settings, kept across restarts
    first = CompareView(service, preferences=preferences)
    qtbot.addWidget(first)
    first.set_workspace(workspace)
    assert first.load_query_set(labels) == 1
    qtbot.waitUntil(first.run_query_set().done, timeout=180_000)
    made = first.report_panel.report

    again = CompareView(service, preferences=preferences)  # the workspace opened again (a new window, after a restart)
    qtbot.addWidget(again)
    again.set_workspace(workspace)
    kept = again.report_panel.report
    assert kept is not None and kept.queries == made.queries
    assert kept.strategies["none"].metrics == made.strategies["none"].metrics
    metrics = again.report_panel.metrics
    assert metrics.rowCount() == first.report_panel.metrics.rowCount() and metrics.item(0, 0).text() == "1.000"
    assert again.status.text().startswith("Last evaluation: evaluated ")
    assert "chunks, updated" in again.status.text()
    again.set_workspace(workspace.parent)  # another workspace: not this one's report
    assert again.report_panel.report is None


def test_at_1024_wide_every_ranking_cell_keeps_its_score_and_movement(qtbot, loop):
    """Eight strategies side by side at 1024 wide, files with long names (issue 32: the cells lost score and
    movement): what a narrow column cuts is the file's name; the score and the movement fit (measured with
    the table's own font, so any font gives the same verdict)."""
    result = sample_result()
    long = [dataclasses.replace(r, chunk=dataclasses.replace(r.chunk, path=f"src/pkg/{'a_very_long_module_name_' * 2}{n}.py"))
            for n, r in enumerate(result.results)]
    result = dataclasses.replace(result, results=long)
    widget = CompareView(None)
    qtbot.addWidget(widget)
    names = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata", "bug-report", "tuned"]
    widget.rankings_panel.show_rankings({n: result for n in names})
    widget.resize(1024, 560)
    widget.show()
    table = widget.rankings_panel.rankings
    qtbot.waitUntil(lambda: table.viewport().width() > 0)
    metrics = table.fontMetrics()
    for col in range(table.columnCount()):
        for row in range(table.rowCount()):
            second = table.item(row, col).text().split("\n")[1]
            kept = second.split(" · ")[0]  # "0.930 ▲2"
            assert metrics.horizontalAdvance(kept) + 12 <= table.columnWidth(col), (kept, table.columnWidth(col))
            assert second.endswith(".py")  # the file's name comes last: it is what gets cut


def test_in_the_window_a_selected_result_shows_its_code_and_why_and_a_fallback_says_why(
        qtbot, window, service, workspace):
    """Issue 52, point 7: the Compare strategies tab of the real window previews the selected result's code with
    its why rows, and a strategy that fell back says so in its header and why beside it."""
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=240_000)
    window.compare_action.trigger()
    compare = window.compare_view
    compare.set_question("check whether a number is prime")
    qtbot.waitUntil(compare.run_question().done, timeout=120_000)
    panel = compare.rankings_panel
    listed = asyncio.ensure_future(service.strategies())
    qtbot.waitUntil(listed.done)
    unavailable = {s.name: s.reason for s in listed.result() if not s.available}

    names = column_titles(panel.rankings)
    tuned = names.index("tuned")  # no labels yet: it falls back to the vector ranking, and says why
    reason = panel.results["tuned"].fallback_reason
    assert reason and "label" in reason
    header = panel.rankings.horizontalHeaderItem(tuned)
    assert header.text().endswith("\nfell back to none") and header.toolTip() == f"tuned fell back to none: {reason}"
    assert panel.fallbacks.isVisible() and f"tuned fell back to none: {reason}" in panel.fallbacks.text()
    for name, why in unavailable.items():  # and the strategies not run, with theirs
        assert f"{name} ({why})" in panel.fallbacks.text()
    assert all(not h.text().endswith("fell back to none") for h in map(panel.rankings.horizontalHeaderItem,
                                                                       range(len(names))) if h is not header)

    assert panel.code.item is None and not panel.why.rows()
    panel.rankings.setCurrentCell(0, names.index("none"))
    item = panel.rankings.item(0, names.index("none")).data(ResultRole)
    assert panel.code.isVisible() and panel.code.item is item
    assert "def is_prime(n):" in panel.code.editor.toPlainText()
    assert panel.why.heading.text().startswith("Why is_prime scores") and "by none" in panel.why.heading.text()
    panel.rankings.setCurrentCell(0, tuned)
    assert "(tuned fell back)" in panel.why.heading.text()
    why = panel.why.table
    assert any(reason in note for note in (why.item(r, 3).text() for r in range(why.rowCount())))
    window.navigation.open_selected()  # Ctrl+E opens the row on screen: Compare's
    assert window.navigation.shown_code_view() is panel.code
