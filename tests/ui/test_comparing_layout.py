"""Issue 52, point 1, on the real engine and the sample workspace: the two rankings are read side by side
at 1024×700, 1280×800 and 1440×900 with the code pane beside or below them (every row's name whole, or
cut to 20 characters at the least, with its file, both scores and the movement), the row's tooltip names
its chunk, and a resize round trip keeps every panel, the why rows included."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.exceptions import TimeoutError as NotThere

from tests.ui.test_layout import ask, indexed, window  # noqa: F401 (the module's indexed sample, its window)
from ui.results_view import ranking_model, row_lines, shown_name
from ui.viewmodels.ranking import format_score, movement, symbol_text

SIZES = ((1024, 700), (1280, 800), (1440, 900))


def resize(qtbot, window, width: int, height: int) -> None:
    """The window at width x height. Asked a second time when the first left it a few pixels off: under load
    the offscreen platform can apply a stale geometry of the arrangement left behind (seen: 1024 x 707 for
    1024 x 700 once in a few runs of the whole ui tier), as a window manager asks again on its next configure."""
    def there() -> bool:
        return window.width() == width and window.height() == height

    window.resize(width, height)
    try:
        qtbot.waitUntil(there, timeout=2_000)
    except NotThere:
        window.resize(width, height)
        qtbot.waitUntil(there)
    QApplication.processEvents()  # the splits are restored once the arrangement is laid out (a posted zero timer)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_ranking_row_shows_its_name_file_scores_and_movement(qtbot, window, size):
    resize(qtbot, window, *size)
    ask(qtbot, window, "save a note to disk and list the titles of every note", "hybrid")
    assert window.code.isVisible() and window.code.width() >= 400
    for table in (window.results.original_table, window.results.reranked_table):
        model = ranking_model(table)
        assert model.rowCount() > 3
        for row in range(model.rowCount()):
            item, name = model.item(row), symbol_text(model.item(row))
            shown = shown_name(table, row)
            assert shown == name or ("…" in shown and len(shown) >= 20), (size, name, shown)
            text = "\n".join(row_lines(table, row))
            chunk = item.chunk
            assert chunk.path.rsplit('/', 1)[-1] in text, (size, text)  # its line too, where it fits
            vector, reranked = model.scores(item)
            assert format_score(vector) in text and format_score(reranked) in text, (size, text)
            if table is window.results.reranked_table:
                assert movement(item)[0] in text, (size, text)
            tooltip = model.index(row, model.column_of("#")).data(3)  # ToolTipRole
            assert tooltip.splitlines()[0].startswith(name) and chunk.path in tooltip.splitlines()[0], tooltip


def test_a_resize_round_trip_keeps_every_panel_and_the_why_rows(qtbot, window):
    resize(qtbot, window, 1440, 900)
    ask(qtbot, window, "save a note to disk", "hybrid")
    why = window.results.why.table
    rows = why.verticalHeader().defaultSectionSize()

    def every_panel_shown() -> bool:
        panels = (window.results.original_table, window.results.reranked_table, window.code.editor,
                  window.graph, window.results.explain, why)
        return all(p.isVisible() and p.height() > 0 for p in panels) and why.viewport().height() >= 3 * rows

    qtbot.waitUntil(every_panel_shown)
    resize(qtbot, window, 1024, 700)
    qtbot.waitUntil(lambda: window.arrangement.currentWidget() is window.below)
    window.graph.tabs.setCurrentIndex(1)  # the user reads Used by, the Why tab behind it
    assert window.graph.tabs.tabText(0) == "Why" and not window.results.explain.isVisible()
    for size in ((1440, 900), (1024, 700), (1440, 900)):
        resize(qtbot, window, *size)
    qtbot.waitUntil(lambda: window.arrangement.currentWidget() is window.bottom)
    qtbot.waitUntil(every_panel_shown)
    window.health_panel.show_action.trigger()  # Ctrl+Shift+H: the health dock, beside the rest
    qtbot.waitUntil(lambda: window.health_panel.isVisible() and window.health_panel.width() > 0)
    assert window.code.width() >= 400 and every_panel_shown()
