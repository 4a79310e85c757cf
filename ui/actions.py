"""A window-wide action as every view builds its own: text, shortcut(s), a tooltip naming the first
shortcut, the action log, and the slot. The main window only places them (menus, toolbar)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence

from ui.action_log import record


def window_action(parent: QObject, text: str, shortcuts: str | list[str], slot: Callable[[], object] | None,
                  tip: str = "") -> QAction:
    """`shortcuts`: one key sequence, or several (the first is the one the tooltip shows)."""
    keys = [QKeySequence(key) for key in ([shortcuts] if isinstance(shortcuts, str) else shortcuts)]
    action = QAction(text, parent)
    action.setShortcuts(keys)
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.setToolTip(f"{tip or text.rstrip('…')} ({keys[0].toString(QKeySequence.SequenceFormat.NativeText)})")
    action.triggered.connect(lambda _checked=False: record(text))
    if slot is not None:
        action.triggered.connect(lambda _checked=False: slot())
    return action
