"""The window's Files view on the real engine (model, Chroma) and the sample workspace, offscreen."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from PySide6.QtCore import Qt

from services.core.models import RankedFile
from services.engine.service import LocalEngine
from tests.helpers.editor import opened, recording_editor
from ui.main_window import MainWindow
from ui.viewmodels.files import movement_text, why_cells

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


@pytest.fixture
def service(tmp_path):
    svc = LocalEngine(data_dir=tmp_path / "data")
    yield svc
    svc.close()


def test_movement_says_how_the_strategy_moved_a_file():
    assert [movement_text(RankedFile("a.py", 2, 1.0, original)) for original in (5, 1, 2, None)] == \
        ["▲3", "▼1", "", "new"]


@pytest.mark.slow
def test_a_fused_file_s_why_rows_say_the_fusion_sets_its_score_and_bars_compare_the_additions():
    from services.core.models import Signal

    signals = (Signal("traceback", 2.0, 3.0, "add", "named in 7 traceback frames, innermost"),
               Signal("bm25", 9.1, 0.75, "add", "whole-file keywords: repr"),
               Signal("fused by rank", 0.0587, 0.0587, "set", "#1 by bug-report, #2 by metadata, fused by rank"))
    cells = why_cells(signals)
    assert [amount for amount, _, _ in cells] == ["+3.00", "+0.75", "= 0.059"]
    assert [share for _, share, _ in cells] == [1.0, 0.25, 0.0]  # the fused score is not an addition
    assert cells[2][2].startswith("fused by rank: sets the score to 0.059")


def test_the_files_tab_answers_the_question_with_files_and_says_why(loop, qtbot, service, qsettings, tmp_path):
    workspace = shutil.copytree(SAMPLE, tmp_path / "sample")
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=240_000)
    window.files_action.trigger()
    assert window.tabs.currentWidget() is window.files_view
    window.query_bar.query.setText("save a note to disk")
    window.run_query()
    view = window.files_view
    qtbot.waitUntil(lambda: view.answer is not None, timeout=60_000)
    rows = [view.table.item(r, 3).text() for r in range(view.table.rowCount())]
    assert rows[0] == "notes/store.py" and len(rows) == len(set(rows)) >= 3
    assert "save" in view.table.item(0, 4).text() and view.table.item(0, 0).text() == "1"
    assert view.answer.strategy in view.title.text()
    why = dict((name, note) for name, _, note in view.why_rows())  # the first file is selected
    assert why["bm25"].startswith("whole-file keywords:") and "save" in why["bm25"]
    view.table.selectRow(1)
    assert view.heading.text().startswith(f"Why {rows[1]} is #2")
    # the list opens: a preview of the selected file with its best chunk marked; Ctrl+E, Enter and
    # double-click open the row on screen (never the Explore tab's hidden selection)
    qtbot.waitUntil(lambda: window.code.item is not None, timeout=60_000)  # Explore's (hidden) selection
    row = next(r for r in range(1, len(rows)) if rows[r] != window.code.item.chunk.path)
    view.table.selectRow(row)
    best = view.answer.files[row].chunks[0]
    assert view.code.item.chunk.path == rows[row] and view.code.editor.marked == (best.start_line, best.end_line)
    assert view.code.editor.toPlainText() == (workspace / rows[row]).read_text().rstrip("\n")
    record = recording_editor(window, tmp_path / "opened.txt")
    qtbot.keyClick(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: opened(record) is not None, timeout=30_000)
    assert opened(record) == (str(workspace / rows[row]), best.start_line)
    record.unlink()
    view.table.setFocus()
    view.table.selectRow(0)
    qtbot.keyClick(view.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: opened(record) is not None, timeout=30_000)
    assert opened(record)[0] == str(workspace / rows[0])
    qtbot.waitUntil(window.run_query().done, timeout=60_000)  # the same question again: no second file answer
    assert window.questions.refresh_files() is None and view.answer is not None
    view.grab().save(str(tmp_path / "files.png"))
    window.shutdown()
