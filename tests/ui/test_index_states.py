"""The index's life cycle as a user meets it in the real window: a folder renamed away and back,
an empty folder, an interrupted first index reopened, a catch-up run cancelled.

Real KnowledgeService (real model, Chroma, watchdog) in a temp data dir; a copy of tests/sample_workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.engine.service import KnowledgeService
from ui.main_window import MainWindow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
INDEX_TIMEOUT = 240_000


@pytest.fixture
def service(tmp_path):
    svc = KnowledgeService(data_dir=tmp_path / "data")
    yield svc
    svc.close()


@pytest.fixture
def window(loop, qtbot, service, qsettings):
    win = MainWindow(service, qsettings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(win.strategies_loaded.done)
    yield win
    win.shutdown()


def wait_task(qtbot, task, timeout=60_000):
    qtbot.waitUntil(task.done, timeout=timeout)
    return task.result()


def indexed_copy(qtbot, win, tmp_path) -> Path:
    workspace = tmp_path / "sample"
    shutil.copytree(SAMPLE, workspace)
    wait_task(qtbot, win.open_workspace(str(workspace)))
    wait_task(qtbot, win.start_index(False), INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: win.health_panel.badge.text() == "up to date", timeout=30_000)
    return workspace


def test_a_folder_renamed_away_edited_and_renamed_back_keeps_every_chunk(qtbot, window, tmp_path):
    workspace = indexed_copy(qtbot, window, tmp_path)
    before = window.health
    moved = tmp_path / "renamed"
    workspace.rename(moved)
    window.query_bar.query.setText("note store")
    qtbot.keyClick(window.query_bar.query, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.runner.is_running("query"), timeout=30_000)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "folder missing", timeout=30_000)
    edited = next(p for p in sorted(moved.rglob("*.py")))
    with edited.open("a") as handle:
        handle.write("\n# one more line\n")
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "folder missing", timeout=30_000)
    moved.rename(workspace)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=INDEX_TIMEOUT)
    after = window.health
    assert (after.files, after.chunks) == (before.files, before.chunks)
    assert window.session.last_report is None or not window.session.last_report.files_removed
