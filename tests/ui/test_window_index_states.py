"""The index's life cycle as a user meets it in the real window: a folder renamed away and back,
an empty folder, an interrupted first index reopened, a catch-up run cancelled.

Real LocalEngine (real model, Chroma, watchdog) in a temp data dir; a copy of tests/sample_workspace."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.engine.service import LocalEngine
from ui.main_window import MainWindow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
INDEX_TIMEOUT = 240_000


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


def grow(workspace: Path, files: int = 60) -> None:
    """More to embed than the sample holds, so a run lasts long enough to be watched and cancelled."""
    extra = workspace / "generated"
    extra.mkdir()
    for n in range(files):
        body = "\n\n".join(f"def step_{n}_{k}(value):\n    \"\"\"Step {k} of stage {n}.\"\"\"\n    return value * {k} + {n}\n"
                           for k in range(8))
        (extra / f"stage_{n}.py").write_text(body)


def test_an_interrupted_first_index_reopened_resumes_and_its_catch_up_can_be_cancelled(loop, qtbot, qsettings,
                                                                                        tmp_path):
    workspace = tmp_path / "sample"
    shutil.copytree(SAMPLE, workspace)
    grow(workspace)
    first = LocalEngine(data_dir=tmp_path / "data2")
    win = MainWindow(first, qsettings)
    qtbot.addWidget(win)
    win.show()
    wait_task(qtbot, win.open_workspace(str(workspace)))
    win.start_index(False)
    # progress is on screen: status bar (stage, files, chunks, rate, ETA, device) and the title
    qtbot.waitUntil(lambda: any(e.phase == "embedding" and e.files_done for e in win.progress_events),
                    timeout=INDEX_TIMEOUT)
    assert "Embedding" in win.index_status.text() and "chunks" in win.index_status.text()
    assert " on cpu" in win.index_status.text() or " on cuda" in win.index_status.text()
    assert "indexing" in win.windowTitle()
    qtbot.keyClick(win, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)  # Ctrl+.
    qtbot.waitUntil(lambda: not win.runner.is_running("index"), timeout=INDEX_TIMEOUT)
    assert win.last_report.cancelled
    win.close()
    first.close()

    service = LocalEngine(data_dir=tmp_path / "data2")  # the app opened again
    try:
        win = MainWindow(service, qsettings)
        qtbot.addWidget(win)
        win.show()
        health = wait_task(qtbot, win.open_workspace(str(workspace)))
        assert health.state == "interrupted" and "chunks done" in health.message
        assert "model" not in win.messages.text()
        # opening catches up: the engine's run resumes the first index, shown and cancellable like F5's
        qtbot.waitUntil(lambda: win.health_panel.running == "auto" and "Embedding" in win.index_status.text(),
                        timeout=INDEX_TIMEOUT)
        assert win.health_panel.badge.text() == "resuming…" and win.health_panel.cancel_button.isEnabled()
        # the banner follows the state: no "stopped at … · Resume indexing" while the run goes on
        assert not (win.messages.isVisible() and "stopped at" in win.messages.text())
        assert "indexing 0 %" not in win.windowTitle()  # of the whole index: it starts where it stopped
        qtbot.keyClick(win, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: win.health_panel.running == "" and win.health_panel.badge.text() == "cancelled",
                        timeout=60_000)
        assert win.health.state == "interrupted"  # and no catch-up run starts again: automatic indexing is paused
        qtbot.waitUntil(lambda: "Automatic indexing paused — stopped at" in win.messages.text(), timeout=30_000)
        assert win.messages.action_button.text() == "Resume" and win.health_panel.running == ""
        qtbot.mouseClick(win.messages.action_button, Qt.MouseButton.LeftButton)  # a normal run: no question
        qtbot.waitUntil(lambda: not win.runner.is_running("index"), timeout=INDEX_TIMEOUT)
        qtbot.waitUntil(lambda: win.health_panel.badge.text() == "up to date", timeout=60_000)
        assert not win.last_report.rebuilt_reason and win.health.run_chunks_total == 0
        assert win.windowTitle() == "Knowledge Explorer — sample"
        win.shutdown()
    finally:
        service.close()


def test_an_empty_folder_is_empty_and_f5_while_checking_keeps_the_badge(qtbot, window, service, tmp_path,
                                                                        monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    opening_read = asyncio.Event()
    real_health = service.health

    async def health(path):  # the opening's read of the health comes back only after F5's run ended
        found = await real_health(path)
        if not opening_read.is_set():
            opening_read.set()
            await released.wait()
        return found

    released = asyncio.Event()
    monkeypatch.setattr(service, "health", health)
    task = window.open_workspace(str(empty))
    assert window.health_panel.badge.text() == "checking…"
    badges = []  # every badge shown from F5 on
    set_badge = window.health_panel._set_badge
    monkeypatch.setattr(window.health_panel, "_set_badge", lambda text, state: (badges.append(text),
                                                                                 set_badge(text, state)))
    window.request_index(False)  # F5 while the badge says "checking…"
    assert window.health_panel.badge.text() == "indexing…"
    qtbot.waitUntil(lambda: not window.runner.is_running("index"), timeout=INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: window.health is not None and window.health.state == "empty", timeout=30_000)
    released.set()
    wait_task(qtbot, task)  # the stale read (from before the run) is not shown over the run's result
    qtbot.waitUntil(lambda: window.health_panel.running == "" and window.health_panel.badge.text() == "empty",
                    timeout=30_000)
    assert "nothing to index" in window.health_panel.badge.toolTip()
    assert "not indexed" not in badges


def test_the_first_window_fits_a_1440_by_900_screen():
    from PySide6.QtCore import QRect

    from ui.main_window import first_size

    width, height = first_size(QRect(0, 0, 1440, 860))  # 1440×900 less a 40-pixel panel
    assert width <= 1440 and height + 40 <= 860  # the frame and title bar fit: the status bar is on screen


def test_partial_results_say_what_the_vector_search_covered_and_unindexed_files_are_not_modified(tmp_path):
    from dataclasses import replace

    from services.retrieval.search_steps import file_states
    from tests.ui.factories import sample_result
    from ui.viewmodels.results import searched_text, summary_text

    partial = replace(sample_result(), total_chunks_searched=7206, chunks_with_vectors=360)
    assert searched_text(partial) == ("searched 360 of 7,206 chunks with vectors (5 %); "
                                      "keyword search covers all")
    assert "searched 360 of 7,206 chunks with vectors" in summary_text(partial, "")
    assert searched_text(replace(partial, chunks_with_vectors=None)) == "7,206 chunks searched"
    (tmp_path / "new.py").write_text("x = 1\n")
    assert file_states(tmp_path, ["new.py"], {}) == {"new.py": ""}  # not indexed yet: not "(modified)"
