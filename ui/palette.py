"""Command palette (Ctrl+K): every action of its window with its shortcut, filtered as you type (on its name
and its tooltip), plus extra commands such as "Use strategy: …"."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFrame, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from ui.actions import VIEW, Place, window_action

ActionRole = Qt.ItemDataRole.UserRole + 1


def action_label(action: QAction) -> str:
    return action.text().replace("&", "").rstrip("…").strip()


class CommandPalette(QFrame):
    """Floats over the top of its parent; Enter runs the chosen action, Escape closes."""

    def __init__(self, parent: QWidget, extra: Callable[[], list[QAction]] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("commandPalette")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.open_action = window_action(self, "Command palette…", "Ctrl+K", self.open, place=Place(210, VIEW, 0, 5))
        self.extra = extra  # commands that change while the window is open (the strategies)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Type a command…")
        self.filter.textChanged.connect(self._refill)
        self.filter.installEventFilter(self)
        self.list = QListWidget()
        self.list.itemActivated.connect(self._run)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        self.hide()

    def open(self) -> None:
        host = self.parentWidget()
        width = min(560, host.width() - 40)
        self.setGeometry((host.width() - width) // 2, 40, width, min(360, host.height() - 80))
        self.filter.clear()
        self._refill("")
        self.show()
        self.raise_()
        self.filter.setFocus()

    def commands(self) -> list[QAction]:
        """The actions placed on the window, this palette's own left out."""
        return [a for a in self.window().actions() if a.text() and a is not self.open_action]

    def shown_commands(self) -> list[str]:
        return [self.list.item(row).text() for row in range(self.list.count())]

    def _refill(self, text: str) -> None:
        words = text.lower().split()
        self.list.clear()
        for action in [*self.commands(), *(self.extra() if self.extra else [])]:
            label = action_label(action)
            searched = f"{label} {action.toolTip()}".lower()
            if not action.isEnabled() or not all(w in searched for w in words):
                continue
            shortcut = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            item = QListWidgetItem(f"{label}    {shortcut}" if shortcut else label)
            item.setData(ActionRole, action)
            self.list.addItem(item)
        if not self.list.count() and words:  # never a blank list
            item = QListWidgetItem(f"No command matches “{text.strip()}”")
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.addItem(item)
        self.list.setCurrentRow(0)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.filter and event.type() == QEvent.Type.KeyPress:
            key = event.key()
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                if self.list.currentItem() is not None:
                    self._run(self.list.currentItem())
                return True
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                step = 1 if key == Qt.Key.Key_Down else -1
                self.list.setCurrentRow(max(0, min(self.list.currentRow() + step, self.list.count() - 1)))
                return True
        if watched is self.filter and event.type() == QEvent.Type.FocusOut and not self.list.hasFocus():
            self.hide()
        return False

    def _run(self, item: QListWidgetItem) -> None:
        action = item.data(ActionRole)
        if action is None:  # the "no command matches" line
            return
        self.hide()
        action.trigger()
