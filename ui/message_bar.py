"""Message banner (no modal dialogs, so nothing blocks and tests never hang).

It floats over the bottom of its host widget instead of taking a place in a layout, so showing
or hiding it never moves the rows under the mouse."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QStyle, QToolButton, QWidget

ERROR, WARNING, INFO = "error", "warning", "info"
PLACE_EVENTS = (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.Show, QEvent.Type.Hide)


class MessageBar(QFrame):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.level = INFO
        self.avoid: list[QWidget] = []  # float_over's: widgets the banner keeps clear of
        self.watched: dict[int, QWidget] = {}  # the host, `avoid` and every widget between them
        self.icon = QLabel()
        self.icon.setObjectName("messageIcon")
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.action_button = QPushButton()
        self.action_button.setObjectName("messageAction")
        self.action_button.hide()
        self.action_button.clicked.connect(self._run_action)
        self._action = None
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(self.icon)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action_button)
        layout.addWidget(self.close_button)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self.hide()

    def show_message(self, text: str, level: str = ERROR, timeout_ms: int = 0,
                     action_text: str = "", action=None) -> None:
        """Show `text`; with `action_text` and a callable `action`, add a one-click button."""
        self.level = level
        self._action = action
        self.action_button.setText(action_text)
        self.action_button.setVisible(bool(action_text and action))
        self.setProperty("level", level)
        self.style().unpolish(self)
        self.style().polish(self)
        pixmap = {ERROR: QStyle.StandardPixmap.SP_MessageBoxCritical,
                  WARNING: QStyle.StandardPixmap.SP_MessageBoxWarning,
                  INFO: QStyle.StandardPixmap.SP_MessageBoxInformation}[level]
        self.icon.setPixmap(self.style().standardIcon(pixmap).pixmap(18, 18))
        self.label.setText(text)
        self._place()
        self.show()
        if timeout_ms:
            self._timer.start(timeout_ms)
        else:
            self._timer.stop()

    def float_over(self, host, avoid=()) -> None:
        """Overlay the bottom edge of `host` (follows its size), left of any visible widget in `avoid`
        that reaches that edge (a panel of buttons the banner must never cover)."""
        self.setParent(host)
        self.avoid = list(avoid)
        self._watch()
        self._place()

    def _watch(self) -> None:
        """Follow the host, the widgets to avoid and every widget between them and the host (a splitter moving
        them moves no widget of `avoid` itself)."""
        host = self.parentWidget()
        if host is None:
            return
        self.watched = {id(host): host}
        for widget in self.avoid:
            step: QWidget | None = widget
            while step is not None and step is not host:
                self.watched[id(step)] = step
                step = step.parentWidget()
        for widget in self.watched.values():
            widget.installEventFilter(self)  # installing twice keeps one filter

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.ParentChange and watched in self.avoid:
            self._watch()  # moved into another arrangement of the window
        if event.type() in PLACE_EVENTS and id(watched) in self.watched:
            self._place()
        return False

    def _place(self) -> None:
        host = self.parentWidget()
        if host is None:
            return
        right = host.width() - 12
        for widget in self.avoid:
            if widget.isVisible():
                box = QRect(widget.mapTo(host, QPoint(0, 0)), widget.size())
                if box.bottom() >= host.height() - 60:  # it reaches the edge the banner floats over
                    right = min(right, box.left() - 8)
        width = max(right - 12, 200)
        layout = self.layout()
        height = layout.heightForWidth(width) if layout.hasHeightForWidth() else self.sizeHint().height()
        height = max(height, self.minimumSizeHint().height())
        self.setGeometry(12, host.height() - height - 8, width, height)
        self.raise_()

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def _run_action(self) -> None:
        action = self._action
        self.hide()
        if action is not None:
            action()
