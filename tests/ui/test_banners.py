"""Issue 32, point 8, on the real engine and the sample workspace at 1024×700: a floating banner never
covers the health panel's Reindex / Full rebuild / Cancel buttons or its checkbox, and the panel's scroll
position does not carry over to the next workspace."""

from __future__ import annotations

import shutil

from PySide6.QtCore import QPoint, QRect

from tests.ui.test_daily_layout import window  # noqa: F401 (the window at 1024×700 on the indexed sample)
from tests.ui.test_layout import indexed  # noqa: F401
from ui.message_bar import WARNING

LONG = ("The folder of sample is missing (moved, renamed or deleted). Its index is kept as it is; nothing is "
        "indexed or deleted until the folder is back.")


def box(widget, window) -> QRect:
    return QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())


def scrolled_to(window, control) -> bool:
    """Scroll the health panel to `control`, again while the window settles at its new width (1280 wide moves
    the panel beside the code: a scroll made before that lands short); whether it can be seen."""
    window.health_scroll.ensureWidgetVisible(control)
    return not control.visibleRegion().isEmpty()


def test_a_banner_never_covers_the_health_panels_controls(qtbot, window):  # noqa: F811
    panel = window.health_panel
    window.health_panel.show_action.trigger()  # Ctrl+Shift+H: the health dock
    for width in (1024, 1280):
        window.resize(width, 700)
        qtbot.waitUntil(lambda: window.width() == width)
        window.messages.show_message(LONG, WARNING, action_text="Resume", action=lambda: None)
        qtbot.waitUntil(window.messages.isVisible)
        controls = [panel.reindex_button, panel.rebuild_button, panel.cancel_button, panel.auto_reindex]
        for control in controls:  # scrolled into view, as a user reaching for it would
            qtbot.waitUntil(lambda: scrolled_to(window, control))
            banner = box(window.messages, window)
            assert not banner.intersects(box(control, window)), (control.text(), banner, box(control, window))
        assert window.messages.label.isVisible() and banner.width() >= 200
    # the dock is beside the tabs, not in them: the banner has the tabs' whole width
    assert banner.width() >= window.centralWidget().width() - 40


def test_the_health_panels_scroll_position_starts_at_the_top_for_each_workspace(qtbot, window, indexed,  # noqa: F811
                                                                                 tmp_path):
    _, workspace = indexed
    window.resize(1024, 700)
    window.health_panel.show_action.trigger()  # Ctrl+Shift+H: the health dock, floating and short
    window.health_dock.setFloating(True)
    window.health_dock.resize(320, 240)
    bar = window.health_scroll.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.setValue(bar.maximum())
    other = shutil.copytree(workspace / "notes", tmp_path / "other")
    qtbot.waitUntil(window.open_workspace(str(other)).done, timeout=60_000)
    assert bar.value() == 0
