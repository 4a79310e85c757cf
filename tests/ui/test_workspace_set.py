"""The window's workspace set ("also search in") on the real engine, offscreen: one question over three
workspaces gives one merged ranking whose rows name their workspace."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.core.models import Chunk, MultiQueryResult, ResultChunk, WorkspaceHit
from services.engine.service import LocalEngine
from tests.helpers.editor import opened, recording_editor
from tests.helpers.workspaces import QUESTION, small_workspaces
from ui.main_window import MainWindow
from ui.viewmodels.workspace_set import hit_row, others

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


@pytest.fixture
def service(tmp_path):
    svc = LocalEngine(data_dir=tmp_path / "data")
    yield svc
    svc.close()


def test_the_set_offers_the_known_workspaces_but_the_open_one_and_rows_name_the_workspace():
    assert others("/w/a", ["/w/a", "/w/b", "/w/b", "/w/c"]) == ["/w/b", "/w/c"]
    hit = WorkspaceHit("/w/b", "b", 2, 0.016, ResultChunk(Chunk("x.py", "python", 3, 9, "", symbol="f"), 1, 0.7,
                                                           1, 0.7))
    assert hit_row(hit) == ("2", "b", "0.02 (#1 there, 0.700)", "x.py:3-9", "f")


@pytest.mark.slow
def test_one_question_over_three_workspaces_in_the_window(loop, qtbot, service, qsettings, tmp_path):
    workspace = shutil.copytree(SAMPLE, tmp_path / "sample")
    backend, frontend = small_workspaces(tmp_path / "more")
    for folder in (backend, frontend):
        task = asyncio.ensure_future(service.index(folder))
        qtbot.waitUntil(task.done, timeout=240_000)
        assert task.result().files_indexed == 1
    qsettings.setValue("recentWorkspaces", [str(backend)])  # opened once before: offered in the set
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=240_000)
    view = window.workspace_set
    assert [view.candidates.item(i).data(256) for i in range(view.candidates.count())] == [str(backend)]
    window.workspace_set_action.trigger()
    assert window.tabs.currentWidget() is view
    view.add_workspace(str(backend))  # tick the offered one
    view.add_workspace(str(frontend))  # and add a folder (what "Add folder…" does once chosen)
    assert view.also() == [str(backend), str(frontend)]
    window.query_bar.query.setText(QUESTION)
    window.run_query()
    qtbot.waitUntil(lambda: view.result is not None, timeout=60_000)
    rows = view.rows()
    assert {row[1] for row in rows} == {"sample", "backend", "frontend"}  # merged by evidence, each row labelled
    evidence = [float(row[2].split()[0]) for row in rows]
    assert evidence == sorted(evidence, reverse=True)
    assert ("backend", "store.py:1-4") in {(row[1], row[3]) for row in rows}
    assert ("frontend", "notes.js:1-4") in {(row[1], row[3]) for row in rows}
    assert "over 3 workspaces" in view.title.text()
    assert isinstance(view.result, MultiQueryResult) and view.result.workspaces[0] == str(workspace.resolve())
    # the list opens: the selected hit previewed from its own workspace; Ctrl+E opens the row on screen
    row = next(r for r, hit in enumerate(view.result.results) if hit.name == "frontend")
    view.table.selectRow(row)
    hit = view.result.results[row]
    assert view.code.item is hit.result and view.code.workspace == hit.workspace
    assert hit.result.chunk.content.strip().splitlines()[0] in view.code.editor.toPlainText()
    record = recording_editor(window, tmp_path / "opened.txt")
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: opened(record) is not None, timeout=30_000)
    assert opened(record) == (str(Path(hit.workspace) / hit.result.chunk.path), hit.result.chunk.start_line)
    view.grab().save(str(tmp_path / "workspace-set.png"))
    window.shutdown()


@pytest.mark.slow
def test_a_workspace_not_indexed_yet_is_said_with_an_action_while_the_others_answer(loop, qtbot, service,
                                                                                        qsettings, tmp_path):
    """Ticking a folder never indexed: the open workspace still answers, the banner names the folder with an
    "Index backend" action, which indexes it and asks again, now over both (issue 40)."""
    backend, frontend = small_workspaces(tmp_path / "more")
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.open_workspace(str(frontend)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=240_000)
    view = window.workspace_set
    window.workspace_set_action.trigger()
    view.add_workspace(str(backend))  # never indexed
    window.query_bar.query.setText(QUESTION)
    window.run_query()
    qtbot.waitUntil(lambda: view.result is not None, timeout=60_000)
    assert {row[1] for row in view.rows()} == {"frontend"}  # the indexed one answered
    assert str(backend.resolve()) in view.result.unanswered
    assert window.messages.isVisible() and "backend is not indexed yet" in window.messages.label.text()
    assert window.messages.action_button.text() == "Index backend"
    window.messages.action_button.click()
    qtbot.waitUntil(lambda: view.result is not None and not view.result.unanswered, timeout=240_000)
    assert {row[1] for row in view.rows()} == {"frontend", "backend"}
    window.shutdown()
