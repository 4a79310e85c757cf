"""Issue 32, point 9, through the real window and the real engine on copies of the sample workspace: the
result menu (copy path:line, reveal in folder, more hits in this file), each workspace's own strategy and
last answer (kept while switching and across a restart), and a question answered from the kept index while
the workspace folder is missing."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import QObject, QSettings, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication

from tests.ui.test_layout import ask, indexed  # noqa: F401 (indexed: the module's indexed sample)
from ui.main_window import MainWindow


@pytest.fixture
def service(indexed):  # noqa: F811
    return indexed[0]


def new_window(qtbot, service, settings) -> MainWindow:
    window = MainWindow(service, settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.strategies_loaded.done, timeout=60_000)
    return window


@pytest.fixture
def window(loop, qtbot, service, qsettings):
    window = new_window(qtbot, service, qsettings)
    yield window
    window.shutdown()


def open_indexed(qtbot, window, folder) -> None:
    qtbot.waitUntil(window.open_workspace(str(folder)).done, timeout=60_000)
    if not window.health.indexed or window.health.stale_files:
        qtbot.waitUntil(window.start_index(False).done, timeout=240_000)
        qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=60_000)


class Opened(QObject):
    """Receives the file URLs the window asks the desktop to open (Qt's own URL handler hook)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls = []

    @Slot("QUrl")
    def open(self, url) -> None:
        self.urls.append(url.toLocalFile())


def test_the_result_menu_copies_path_line_reveals_the_folder_and_finds_more_hits_in_the_file(
        qtbot, window, indexed):  # noqa: F811
    _, workspace = indexed
    open_indexed(qtbot, window, workspace)
    ask(qtbot, window, "save a note to disk", "hybrid")
    table = window.results.reranked_table
    item = table.model().item(0)
    actions = {a.text(): a for a in window.results.row_actions(table, 0) if a.text()}
    file = item.chunk.path.rsplit("/", 1)[-1]
    assert {"Copy path:line", "Reveal in folder", f"More hits in {file}", "Mark relevant for this question"} <= set(actions)

    actions["Copy path:line"].trigger()
    assert QGuiApplication.clipboard().text() == f"{item.chunk.path}:{item.chunk.start_line}"

    opened = Opened()
    QDesktopServices.setUrlHandler("file", opened, "open")
    try:
        actions["Reveal in folder"].trigger()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert opened.urls == [str((workspace / item.chunk.path).parent)]

    before = window.last_result
    actions[f"More hits in {file}"].trigger()
    qtbot.waitUntil(lambda: window.last_result is not before, timeout=60_000)
    hits = window.last_result.results
    assert hits and {r.chunk.path for r in hits} == {item.chunk.path} and len(hits) > 1
    assert window.query_bar.path_glob.text() == item.chunk.path  # "Clear filters" gives the whole list back


def test_each_workspace_keeps_its_strategy_and_last_answer_across_switches_and_a_restart(
        qtbot, window, indexed, service, qsettings, tmp_path):  # noqa: F811
    _, first = indexed
    second = shutil.copytree(first / "notes", tmp_path / "second")
    open_indexed(qtbot, window, second)
    open_indexed(qtbot, window, first)
    ask(qtbot, window, "save a note to disk", "heuristic")
    shown = [r.chunk.id for r in window.last_result.results]

    qtbot.waitUntil(window.open_workspace(str(second)).done, timeout=60_000)
    assert window.query_bar.query.text() == "" and window.last_result is None
    ask(qtbot, window, "load every note", "none")

    window.open_workspace(str(first))  # its last answer is on screen at once, with its own strategy
    assert window.query_bar.strategy_name() == "heuristic"
    assert window.query_bar.query.text() == "save a note to disk"
    assert window.results.reranked_model.rowCount() == len(shown)
    qtbot.waitUntil(lambda: not window.runner.is_running("workspace") and not window.runner.is_running("query"),
                    timeout=60_000)
    assert [r.chunk.id for r in window.last_result.results] == shown
    window.save_settings()
    window.shutdown()

    again = new_window(qtbot, service, QSettings(qsettings.fileName(), QSettings.Format.IniFormat))
    try:
        qtbot.waitUntil(again.open_workspace(str(second)).done, timeout=60_000)
        assert again.query_bar.strategy_name() == "none" and again.query_bar.query.text() == "load every note"
        qtbot.waitUntil(lambda: again.last_result is not None and bool(again.last_result.results), timeout=60_000)
        assert again.results.reranked_model.rowCount() > 0
    finally:
        again.shutdown()


def test_a_question_while_the_folder_is_missing_is_answered_from_the_kept_index(qtbot, window, indexed,  # noqa: F811
                                                                                tmp_path):
    _, sample = indexed
    folder = shutil.copytree(sample / "notes", tmp_path / "moving")
    open_indexed(qtbot, window, folder)
    folder.rename(tmp_path / "moved")  # unmounted, renamed: the index is kept
    qtbot.waitUntil(window.open_workspace(str(folder)).done, timeout=60_000)
    assert window.health.state == "folder-missing"
    ask(qtbot, window, "save a note to disk", "hybrid")
    result = window.last_result
    assert result.results and result.results[0].chunk.path.endswith("store.py")
    assert all(r.stale == "" for r in result.results)  # a missing folder says nothing about its files
    assert window.messages.level != "error" or not window.messages.isVisible()
