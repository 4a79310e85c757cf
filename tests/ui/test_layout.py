"""What a user sees at 1024×700 and at the window's minimum size, on the real engine and the sample
workspace: file names kept when a location is cut, readable Symbol cells, why rows in view, a one-line
status bar whatever the question, the palette's strategies and history, a question per workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QStyleOptionViewItem

from services.core.messages import MAX_QUESTION_CHARS
from services.core.models import Chunk, ResultChunk
from services.engine.service import LocalEngine
from ui.main_window import MainWindow
from ui.viewmodels.ranking import fit_location
from ui.viewmodels.ranking import symbol_text

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
TRACEBACK = ("SearchEngine.score crashes when a note has no tags\n\nTraceback (most recent call last):\n"
             '  File "/home/me/app/notes/search.py", line 47, in score\n'
             "    hits = sum(1 for k in keywords if k in note.tags)\nTypeError: 'NoneType' object is not iterable\n")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from tests.conftest import indexed_sample

    root = tmp_path_factory.mktemp("layout")
    yield from indexed_sample(root)


@pytest.fixture
def window(loop, qtbot, indexed, qsettings):
    service, workspace = indexed
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.strategies_loaded.done, timeout=60_000)
    task = window.open_workspace(str(workspace))
    qtbot.waitUntil(task.done, timeout=60_000)
    yield window
    window.shutdown()


def ask(qtbot, window, question: str, strategy: str = "hybrid") -> None:
    assert window.query_bar.select_strategy(strategy)
    before = window.last_result
    window.run_query(question)
    qtbot.waitUntil(lambda: window.last_result is not before and window.last_result.strategy == strategy,
                    timeout=60_000)
    window.results.select_first()
    qtbot.waitUntil(lambda: window.results.why.table.rowCount() > 0, timeout=10_000)


def shown(table, row: int, title: str) -> str:
    """The text a cell paints (after its delegate fits it into the column); a column whose text a stacked
    row paints under another's (Location under Symbol): that second line."""
    model = table.model()
    index = model.index(row, model.column_of(title))
    if table.isColumnHidden(index.column()):
        for column in range(model.columnCount()):
            delegate = table.itemDelegateForColumn(column)
            if not table.isColumnHidden(column) and getattr(delegate, "below", None) == title:
                return row_lines_of(table, model.index(row, column))[1]
    option = QStyleOptionViewItem()
    option.rect = table.visualRect(index)
    option.fontMetrics = table.fontMetrics()
    option.font = table.font()
    table.itemDelegateForColumn(index.column()).initStyleOption(option, index)
    metrics = table.fontMetrics()
    return metrics.elidedText(option.text, option.textElideMode, option.rect.width() - 8)


def row_lines_of(table, index) -> list[str]:
    option = QStyleOptionViewItem()
    option.rect = table.visualRect(index)
    option.fontMetrics = table.fontMetrics()
    option.font = table.font()
    return table.itemDelegateForColumn(index.column()).lines(option, index)


def assert_readable(window, whole_names: bool = True) -> None:
    """Symbol has room; each location shows its file name (at the minimum size at least the name's
    start, never a folder in its place); the why panel shows three rows."""
    for table in (window.results.original_table, window.results.reranked_table):
        model = table.model()
        assert model.rowCount() > 0
        assert table.columnWidth(model.column_of("Symbol")) >= 90, "Symbol would show only '…'"
        for row in range(model.rowCount()):
            name, text = model.item(row).chunk.path.rsplit("/", 1)[-1], shown(table, row, "Location")
            if whole_names:
                assert name in text, (name, text)
            else:
                assert name in text or text.lstrip("…/").startswith(name[:6]), (name, text)
    why = window.results.why.table
    visible_rows = why.viewport().height() // why.verticalHeader().defaultSectionSize()
    assert visible_rows >= min(3, why.rowCount()), f"the why panel shows {visible_rows} rows"


@pytest.mark.slow
def test_the_window_draws_with_the_fonts_the_project_ships(window):
    """Text, code and paths use DejaVu from resources/fonts, whatever fonts fontconfig would pick on
    this machine (Noto or URW where installed), so the window's size is the same everywhere."""
    from PySide6.QtGui import QFontInfo

    from ui.theme import MONO, SANS

    assert QFontInfo(window.query_bar.font()).family() == SANS
    assert QFontInfo(window.code.editor.font()).family() == MONO
    assert QFontInfo(window.code.editor.font()).fixedPitch()


def test_at_1024x700_and_at_the_minimum_size_names_and_why_rows_stay_readable(qtbot, window):
    window.resize(1024, 700)
    ask(qtbot, window, "save a note to disk", "hybrid")
    qtbot.waitUntil(lambda: window.width() == 1024)
    assert_readable(window)
    window.resize(window.minimumSize())
    qtbot.waitUntil(lambda: window.size() == window.minimumSize())
    ask(qtbot, window, "save a note to disk", "rrf")
    assert_readable(window, whole_names=False)
    assert window.minimumWidth() <= 1024 and window.minimumHeight() <= 700


@pytest.mark.slow
def test_a_pasted_traceback_keeps_the_status_bar_one_line(qtbot, window):
    window.resize(1024, 700)
    ask(qtbot, window, "save a note to disk")
    one_line = window.statusBar().height()
    ask(qtbot, window, TRACEBACK, "bug-report")
    text = window.status_results.text()
    assert "\n" not in text and "SearchEngine.score crashes" in text
    assert window.statusBar().height() == one_line
    assert window.results.why.table.rowCount() > 0
    legend = window.results.legend.text()
    assert "0 to " in legend and "Reranked: this question " in legend  # bug-report's scale and this question's range


@pytest.mark.slow
def test_a_12000_character_bug_report_is_answered_and_one_over_the_limit_is_refused(qtbot, window):
    """The window applies the limit every face applies, and says how a long question was read."""
    from tests.test_long_questions import bug_report

    ask(qtbot, window, bug_report(12_000), "bug-report")
    assert window.last_result.results[0].chunk.path == "notes/search.py"
    note = window.messages.text()
    assert "12,000 characters" in note and f"the limit is {MAX_QUESTION_CHARS:,}" in note and "most telling words" in note
    window.run_query("x" * (MAX_QUESTION_CHARS + 1))
    over = f"{MAX_QUESTION_CHARS + 1:,} characters; the limit is {MAX_QUESTION_CHARS:,}"
    qtbot.waitUntil(lambda: over in window.messages.text(), timeout=30_000)


def test_the_palette_finds_history_and_strategies(qtbot, window):
    window.palette.open()
    qtbot.keyClicks(window.palette.filter, "history")
    assert any(c.startswith("Recent and pinned questions") for c in window.palette.shown_commands())
    window.palette.filter.clear()
    qtbot.keyClicks(window.palette.filter, "hybrid")
    assert window.palette.shown_commands() == ["Use strategy: Hybrid BM25 + semantic"]
    qtbot.keyClick(window.palette.filter, Qt.Key.Key_Return)
    assert window.query_bar.strategy_name() == "hybrid" and not window.palette.isVisible()


@pytest.mark.slow
def test_each_workspace_keeps_its_own_question(qtbot, window, indexed, tmp_path):
    _, sample = indexed
    other = tmp_path / "other"
    shutil.copytree(SAMPLE / "notes", other)
    window.query_bar.query.setText("where are notes saved")
    qtbot.waitUntil(window.open_workspace(str(other)).done, timeout=60_000)
    assert window.query_bar.query.text() == ""
    window.query_bar.query.setText("something else")
    qtbot.waitUntil(window.open_workspace(str(sample)).done, timeout=60_000)
    assert window.query_bar.query.text() == "where are notes saved"


@pytest.mark.slow
def test_an_editor_failure_message_goes_away_by_itself(qtbot, window):
    window.code.open_failed.emit("No application is set up to open store.py.")
    assert window.messages.isVisible()
    qtbot.waitUntil(lambda: not window.messages.isVisible(), timeout=15_000)


def test_text_chunks_of_one_file_read_differently():
    def text_chunk(start: int, content: str) -> ResultChunk:
        chunk = Chunk("doc/en/how-to/fixtures.rst", "text", start, start + 20, content)
        return ResultChunk(chunk, 1, 0.5, 1, 0.5)

    names = {symbol_text(text_chunk(1, "Fixtures\n========\n\nintro")),
             symbol_text(text_chunk(40, "Scope\n-----\n\nsession")),
             symbol_text(text_chunk(80, "plain text without a heading\nmore")),
             symbol_text(text_chunk(120, "more plain text"))}
    assert len(names) == 4
    assert "§ Fixtures · fixtures.rst" in names and "fixtures.rst lines 80–100" in names


def test_a_location_keeps_its_file_name_when_cut():
    def fits(width):
        return lambda text: len(text) <= width

    text = "doc/en/how-to/fixtures.rst:120-160 (modified)"
    assert fit_location(text, fits(100)) == text
    assert fit_location(text, fits(34)) == "…/fixtures.rst:120-160 (modified)"
    assert fit_location(text, fits(31)) == "fixtures.rst:120-160 (modified)"
    assert fit_location(text, fits(14)) == "fixtures.rst"
    assert fit_location(text, fits(3)) == "fixtures.rst"  # then Qt elides its end


def test_the_judgements_dialog_explains_itself_in_its_body(qtbot, loop, tmp_path):
    from PySide6.QtWidgets import QLabel

    from ui.compare import CompareView

    view = CompareView(None)
    qtbot.addWidget(view)
    dialog = view.qrels_dialog(tmp_path)
    qtbot.addWidget(dialog)
    texts = [label.text() for label in dialog.findChildren(QLabel) if label.objectName() == "qrelsHelp"]
    assert texts and "query_id" in texts[0] and "Cancel to use the relevant results" in texts[0]


def test_compare_cells_show_file_names_and_every_strategy_at_1024(qtbot, loop):
    from ui.compare import CompareView
    from tests.ui.factories import sample_result

    view = CompareView(None)
    qtbot.addWidget(view)
    view.resize(1024, 600)
    view.show()
    result = sample_result()
    names = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata", "bug-report", "tuned"]
    view.rankings_panel.show_rankings({name: result for name in names})
    table = view.rankings_panel.rankings
    qtbot.waitUntil(lambda: table.viewport().width() > 900)
    header = table.horizontalHeader()
    assert all(header.sectionViewportPosition(c) + header.sectionSize(c) <= table.viewport().width() + 1
               for c in range(len(names))), "every strategy's column is in view"
    metrics = table.fontMetrics()
    for column in range(len(names)):
        for row in range(table.rowCount()):
            item = table.item(row, column)
            if item is None:
                continue
            file_line = item.text().split("\n")[1]
            shown = metrics.elidedText(file_line, Qt.TextElideMode.ElideRight, header.sectionSize(column) - 8)
            assert shown.split(" · ")[0] == file_line.split(" · ")[0], (shown, file_line)


def test_the_compare_tab_with_a_report_fits_1024x700(qtbot, loop):
    from services.evaluation.report import EvalReport, StrategyReport
    from ui.compare import CompareView

    view = CompareView(None)
    qtbot.addWidget(view)
    names = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata", "bug-report", "tuned"]
    metrics = {"mrr@10": 0.5, "ndcg@10": 0.5, "p@5": 0.1, "r@10": 0.5, "r@100": 1.0}
    report = EvalReport({n: StrategyReport(n, dict(metrics), [5.0]) for n in names}, 13, 24)
    report.skipped = {"cross-encoder": "model not installed", "llm": "set KE_LLM_BASE_URL"}
    view.show_report(report)
    view.resize(1024, 560)  # what the window leaves the tab at 1024×700
    view.show()
    assert view.minimumSizeHint().height() <= 560
    table = view.report_panel.metrics
    qtbot.waitUntil(lambda: table.viewport().height() > 0)
    shown = sum(1 for row in range(len(names)) if table.rowViewportPosition(row) + table.rowHeight(row)
                <= table.viewport().height())
    assert shown == len(names), f"{shown} of {len(names)} strategies in view"


@pytest.mark.slow
def test_a_strategy_that_falls_back_still_explains_its_results(qtbot, window):
    ask(qtbot, window, "save a note to disk", "tuned")  # no labels: tuned falls back
    heading = window.results.why.heading.text()
    assert "fell back" in heading
    rows = window.results.why.rows()
    assert [name for name, _, _ in rows] == ["cosine similarity"]
    assert "cosine similarity 0–1" in window.results.legend.text()


@pytest.mark.slow
def test_a_name_answered_by_keyword_says_so_above_and_below_the_original_side(qtbot, window):
    """`auto` answers a defined name from the keyword table (issue 44): the left pane is the keyword ranking,
    and the legend reads its scores as BM25, not cosines."""
    ask(qtbot, window, "validate_title", "auto")
    assert window.last_result.original_ranking == "keyword"
    assert window.results.left.title.text().startswith("Keyword ranking · ")
    legend = window.results.legend.text()
    assert "Keyword: BM25 over the best, 0–1." in legend and "cosine similarity 0–1" not in legend.split("Reranked")[0]
    assert score_headers(window) == ["Keyword", "Keyword"]  # the score column of both panes
    ask(qtbot, window, "save a note to disk", "auto")  # words: the vector ranking again
    assert window.results.left.title.text().startswith("Vector ranking · ")
    assert "Vector: cosine similarity 0–1." in window.results.legend.text()
    assert score_headers(window) == ["Vector", "Vector"]


def score_headers(window) -> list[str]:
    """The header of the first ranking's score column, as each pane's table shows it."""
    models = (window.results.original_model, window.results.reranked_model)
    return [m.headerData(m.column_of("Vector"), Qt.Orientation.Horizontal) for m in models]
