"""Issue 52, point 7, through the real window and the real engine: a question in words, whose chunk answer leads
with documentation, shows the question's best files above the chunks in the Explore tab (fixtures.py first,
ahead of the documentation), asked once the chunk answer is in; a file of the strip opens in the code pane with
its why rows; a name asked shows no strip.

Real LocalEngine (model, Chroma) in a temp data dir; tests/helpers/pytest_like.py's small pytest-shaped workspace."""

from __future__ import annotations

from PySide6.QtCore import QPoint

from tests.helpers.pytest_like import FIXTURES_FILE, QUESTION, pytest_like
from ui.results_view import ranking_model

INDEX_TIMEOUT = 240_000


def top_of(widget, window) -> int:
    return widget.mapTo(window, QPoint(0, 0)).y()


def documentation(path: str) -> bool:
    return path.endswith((".rst", ".md", ".txt"))


def test_a_question_in_words_shows_its_files_above_the_chunks(qtbot, window, tmp_path):
    workspace = pytest_like(tmp_path)
    window.resize(1024, 700)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=INDEX_TIMEOUT)
    assert window.query_bar.select_strategy("none")  # the vector ranking: documentation first, as observed
    window.run_query(QUESTION)
    strip = window.file_strip
    qtbot.waitUntil(lambda: window.last_result is not None and strip.isVisible(), timeout=60_000)

    ranking = ranking_model(window.results.reranked_table)
    chunks = [ranking.item(row).chunk.path for row in range(ranking.rowCount())]
    assert documentation(chunks[0]), chunks  # the chunks lead with documentation...
    shown = strip.shown_paths()  # ...the strip above them leads with the code that answers
    assert shown[0] == FIXTURES_FILE and not any(map(documentation, shown)), shown
    assert strip.list.item(0).text() == "1 _pytest/fixtures.py"
    assert "why: " in strip.list.item(0).toolTip() and FIXTURES_FILE in strip.list.item(0).toolTip()
    tables = window.results.reranked_table
    assert top_of(strip, window) + strip.height() <= top_of(tables, window)
    assert not strip.list.visualItemRect(strip.list.item(0)).isEmpty()
    code_before = window.code.item  # the top chunk, selected when the chunk answer came
    assert code_before is not None and code_before.chunk.path == chunks[0]

    strip.choose(0)  # opens in the code pane, with why it ranks there
    assert window.code.item.chunk.path == FIXTURES_FILE
    assert window.code.editor.toPlainText().startswith('"""Fixture definitions')
    assert window.results.why.heading.text().startswith(f"Why {FIXTURES_FILE} is #1")
    assert window.results.why.rows() and not window.results.selected_chunk()
    window.code.back_action.trigger()  # a place Back returns from
    assert window.code.item.chunk.id == code_before.chunk.id

    window.run_query("FixtureManager")  # a name: its definition leads the chunks, no strip
    qtbot.waitUntil(lambda: window.last_result.question == "FixtureManager", timeout=60_000)
    assert window.last_result.reading == "name" and not strip.isVisible()
