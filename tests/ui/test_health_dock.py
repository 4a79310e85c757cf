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
