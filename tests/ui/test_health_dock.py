"""Issue 52, point 8, through the real window and the real engine: the index health dock at 1024×700 keeps its
reindex buttons on screen when the skipped-files list is long (the list scrolls, not the buttons); a cancelled
full rebuild reads as cancelled, with how far it got, and offers nothing that would do nothing."""

from __future__ import annotations

from PySide6.QtCore import QRect

INDEX_TIMEOUT = 240_000


def on_screen(widget, window) -> bool:
    """Whether the whole of `widget` is painted inside the window: shown, not clipped by a scroll area."""
    visible = widget.visibleRegion().boundingRect()
    inside = QRect(widget.mapTo(window, visible.topLeft()), visible.size())
    return widget.isVisible() and visible.size() == widget.size() and window.rect().contains(inside)


def test_at_1024_by_700_the_buttons_stay_visible_and_the_skipped_list_scrolls(qtbot, window, tmp_path):
    workspace = tmp_path / "images"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "draw.py").write_text("def draw(canvas):\n    '''Draw the shapes.'''\n    return canvas\n")
    for n in range(200):
        (workspace / "assets" / f"icon_{n:03}.png").parent.mkdir(exist_ok=True)
        (workspace / "assets" / f"icon_{n:03}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    window.resize(1024, 700)
    window.health_panel.show_action.setChecked(True)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=INDEX_TIMEOUT)
    panel = window.health_panel
    qtbot.waitUntil(lambda: panel.files.topLevelItemCount() == 200, timeout=30_000)
    assert panel.files_title.text() == "Stale and skipped files (0 stale, 200 skipped)"
    qtbot.waitUntil(lambda: window.health_dock.isVisible() and window.height() == 700)
    for button in (panel.reindex_button, panel.rebuild_button, panel.cancel_button, panel.auto_reindex):
        assert on_screen(button, window), button.text()
    assert panel.files.isVisible() and panel.files.verticalScrollBar().maximum() > 0  # the list scrolls


def cancelled_full_rebuild(qtbot, service, workspace, when):
    """The report of a full rebuild of `workspace` cancelled by the first progress event `when` accepts (set
    in the engine's thread, so the run stops right there)."""
    import asyncio
    import threading

    cancel = threading.Event()

    def progress(event):
        if when(event):
            cancel.set()

    task = asyncio.ensure_future(service.index(workspace, full=True, progress=progress, cancel=cancel))
    qtbot.waitUntil(task.done, timeout=INDEX_TIMEOUT)
    assert task.result().cancelled
    return task.result()


def indexed_sample(qtbot, service, tmp_path):
    import asyncio
    import shutil
    from pathlib import Path

    workspace = shutil.copytree(Path(__file__).resolve().parents[1] / "sample_workspace", tmp_path / "sample")
    task = asyncio.ensure_future(service.index(workspace))
    qtbot.waitUntil(task.done, timeout=INDEX_TIMEOUT)
    return workspace, task.result()


def test_a_rebuild_cancelled_once_its_vectors_were_made_reads_cancelled_and_offers_no_resume(
        qtbot, window, service, tmp_path):
    workspace, first = indexed_sample(qtbot, service, tmp_path)
    report = cancelled_full_rebuild(qtbot, service, workspace,  # the last window of vectors written
                                    lambda e: e.step == 2 and e.chunks_total and e.chunks_done == e.chunks_total)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    health = window.health
    assert health.state == "ready" and health.chunks_embedded == health.chunks  # nothing left to resume
    said = f"full rebuild cancelled after {report.files_indexed:,} of {first.files_indexed:,} files were read again"
    assert said in window.messages.text() and "interrupted" not in window.messages.text()
    assert not window.messages.action_button.isVisible()  # no Resume that would do nothing
    assert window.health_panel.badge.text() != "interrupted"


def test_a_rebuild_cancelled_before_its_vectors_reads_cancelled_and_resume_makes_them(
        qtbot, window, service, tmp_path):
    workspace, _ = indexed_sample(qtbot, service, tmp_path)
    cancelled_full_rebuild(qtbot, service, workspace, lambda e: e.step == 2)
    window.health_panel.auto_reindex.setChecked(False)  # no catch-up run on opening: the user resumes
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    health = window.health
    assert health.state == "interrupted" and health.run_chunks_done < health.run_chunks_total
    assert window.health_panel.badge.text() == "cancelled"
    done = f"{health.run_chunks_done:,} of {health.run_chunks_total:,} chunks done"
    assert "full rebuild cancelled after" in window.messages.text() and done in window.messages.text()
    assert window.messages.action_button.text() == "Resume"
    window.messages.action_button.click()
    qtbot.waitUntil(lambda: not window.runner.is_running("index") and window.last_report is not None,
                    timeout=INDEX_TIMEOUT)
    assert window.last_report.chunks_embedded == health.run_chunks_total - health.run_chunks_done
    qtbot.waitUntil(lambda: window.health.state == "ready", timeout=30_000)
    assert window.health.chunks_embedded == window.health.chunks and window.health_panel.badge.text() == "up to date"
