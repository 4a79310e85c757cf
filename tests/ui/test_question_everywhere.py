"""Issue 32: a question box on every tab, one question shared: the Files and Several-workspaces tabs show the
same box as Explore (Ctrl+L focuses it there), and a question asked on the Files tab is answered there and in
Explore. Real engine, the sample workspace indexed once."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.ui.test_daily_layout import window  # noqa: F401 (the window at 1024×700 on the indexed sample)
from tests.ui.test_layout import indexed  # noqa: F401


def test_every_tab_has_the_one_question_box(qtbot, window):  # noqa: F811
    bar = window.query_bar
    for tab in (window.files_view, window.workspace_set, window.explore):
        window.show_tab(tab)
        qtbot.waitUntil(lambda: bar.isVisible() and tab.isAncestorOf(bar))
        assert bar.geometry().top() < tab.height() // 4  # at the top of the tab
    window.show_tab(window.files_view)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.files_view and bar.query.hasFocus()
    qtbot.keyClicks(bar.query, "where is a note saved")
    qtbot.keyClick(bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.files_view.answer is not None
                    and window.files_view.answer.question == "where is a note saved", timeout=60_000)
    qtbot.waitUntil(lambda: window.last_result is not None and window.last_result.question == "where is a note saved",
                    timeout=60_000)
    window.show_tab(window.workspace_set)
    assert bar.query.text() == "where is a note saved" and window.workspace_set.isAncestorOf(bar)
    window.show_tab(window.explore)
    assert window.explore.isAncestorOf(bar) and window.results.reranked_model.rowCount() > 0
