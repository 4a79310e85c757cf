"""Issue 52, point 8, on the real window, the real engine and the sample workspace: the last crash is said
at the next start (after the first workspace opens), Back is disabled in a new workspace, a one-line chunk
reads "12" not "12-12", "1 workspace" is singular, the palette says when nothing matches, Shift+F10 opens
the context menu of what has the keyboard, and a paste offers no completion over the rankings."""

from __future__ import annotations

import shutil

from PySide6.QtCore import QTimer
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMenu

from services.core.models import MultiQueryResult
from tests.ui.factories import chunk
from tests.ui.test_desk import press
from tests.ui.test_layout import ask, indexed, window  # noqa: F401 (the module's indexed sample, its window)
from services.core.models import ResultChunk
from ui.viewmodels.ranking import location_text, symbol_text
from ui.viewmodels.workspace_set import summary_text


def test_the_last_crash_is_said_once_the_first_workspace_is_open(qtbot, loop, qsettings, indexed,  # noqa: F811
                                                                 tmp_path):
    from ui.main_window import MainWindow

    service, workspace = indexed
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.report_last_crash(tmp_path / "ke.log", tmp_path / "crash-report.txt")  # as app/gui.py starts it
    window.show()
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    assert window.messages.isVisible() and "stopped unexpectedly last time" in window.messages.text()
    assert str(tmp_path / "ke.log") in window.messages.text()
    window.shutdown()


def test_back_is_disabled_in_a_new_workspace(qtbot, window, indexed, tmp_path):  # noqa: F811
    _, workspace = indexed
    ask(qtbot, window, "save a note to disk")
    window.results.reranked_table.selectRow(1)
    window.navigation.open_graph_row(window.results.reranked_model.item(2))  # a jump: somewhere to go back to
    window.navigation.show_code(window.results.reranked_model.item(3))
    assert window.code.back_action.isEnabled()
    other = shutil.copytree(workspace / "notes", tmp_path / "other")
    qtbot.waitUntil(window.open_workspace(str(other)).done, timeout=60_000)
    assert not window.code.back_action.isEnabled() and not window.code.forward_action.isEnabled()


def test_a_one_line_chunk_reads_its_line_once(window):
    one = ResultChunk(chunk("src/conf.py", 12, 12, "VERSION", "variable"), 1, 0.5, 1, 0.5)
    nameless = ResultChunk(chunk("README.md", 1, 1, "", "text", "markdown"), 1, 0.5, 1, 0.5)
    assert location_text(one) == "src/conf.py:12" and symbol_text(nameless) == "README.md line 1"
    window.code.show_chunk(one)
    assert window.code.subtitle.text().startswith("src/conf.py:12 ") and "12-12" not in window.code.subtitle.text()


def test_one_workspace_is_singular():
    result = MultiQueryResult(question="q", strategy="none", results=[], workspaces=["/w/a"], searched={"/w/a": 3})
    assert " over 1 workspace (a 3)" in summary_text(result)


def test_the_palette_says_when_no_command_matches(qtbot, window):
    window.palette.open()
    qtbot.keyClicks(window.palette.filter, "zzzz")
    assert window.palette.shown_commands() == ["No command matches “zzzz”"]
    qtbot.keyClick(window.palette.filter, Qt.Key.Key_Return)  # nothing to run: the palette stays
    assert window.palette.isVisible()


def test_shift_f10_opens_the_context_menu_of_the_result_and_of_the_code(qtbot, window):
    ask(qtbot, window, "save a note to disk")
    seen: list[list[str]] = []

    def read_and_close() -> None:
        menu = QApplication.activePopupWidget()
        if isinstance(menu, QMenu):
            seen.append([a.text() for a in menu.actions()])
            menu.close()

    for widget, expected in ((window.results.reranked_table, "Copy path:line"), (window.code.editor, "Go to definition")):
        widget.setFocus()
        qtbot.waitUntil(widget.hasFocus)
        QTimer.singleShot(200, read_and_close)
        press(qtbot, window, "Shift+F10")
        qtbot.waitUntil(lambda: len(seen) == (1 if expected == "Copy path:line" else 2), timeout=5_000)
        assert expected in seen[-1], seen


def test_a_pasted_question_offers_no_completion(qtbot, window):
    query = window.query_bar.query
    window.query_bar.set_symbols(["__init__", "__repr__", "NoteStore"])
    query.setFocus()
    qtbot.waitUntil(query.hasFocus)
    popup = window.query_bar.completer.popup()
    QGuiApplication.clipboard().setText("TypeError in SearchEngine.score when called from __init__")
    press(qtbot, window, "Ctrl+V")
    qtbot.waitUntil(lambda: query.text().endswith("__init__"))
    for _ in range(3):
        QApplication.processEvents()
    assert not popup.isVisible()
    query.clear()
    qtbot.keyClicks(query, "__in")  # typed: completed as before
    qtbot.waitUntil(popup.isVisible)


def test_how_long_ago_moves_on_while_the_window_is_open(qtbot):
    from datetime import datetime, timedelta, timezone

    from tests.ui.factories import sample_health
    from ui.health_panel import HealthPanel

    panel = HealthPanel()
    qtbot.addWidget(panel)
    moment = (datetime.now(timezone.utc) - timedelta(seconds=86)).isoformat()
    panel.set_health(sample_health(updated_at=moment))
    assert "(just now)" in panel.values["Updated"].text()
    panel.clock.setInterval(100)  # its 30 s, sooner
    qtbot.waitUntil(lambda: "(2 min ago)" in panel.values["Updated"].text(), timeout=15_000)


def test_a_new_workspace_shows_no_run_of_the_last_one(qtbot, window, indexed, tmp_path):  # noqa: F811
    _, workspace = indexed
    qtbot.waitUntil(window.start_index(False).done, timeout=120_000)
    assert window.health_panel.progress_label.text()  # the run's outcome, for this workspace
    other = shutil.copytree(workspace / "notes", tmp_path / "other")
    qtbot.waitUntil(window.open_workspace(str(other)).done, timeout=60_000)
    assert window.health_panel.progress_label.text() == ""
