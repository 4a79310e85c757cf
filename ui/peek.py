"""Alt+F12 in the code pane: peek at a definition without leaving the place being read, as an editor's
"Peek Definition": a frame under the caret's line with the definition's code. Enter (or double-click) goes
there; Escape closes it and the caret is where it was."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from services.core.models import ResultChunk
from ui.theme import mono_font
from ui.viewmodels.ranking import lines_text

PEEK_LINES = 14  # the frame's height in lines of code


class PeekFrame(QFrame):
    """Floats over `editor` (a CodeEditor), below a line; `opened(ResultChunk)`: Enter, or Go to."""

    opened = Signal(object)

    def __init__(self, editor: QPlainTextEdit) -> None:
        super().__init__(editor)
        self.editor = editor
        self.item: ResultChunk | None = None
        self.setObjectName("peek")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.title = QLabel("")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        go = QPushButton("Go to")
        go.setToolTip("Show the definition in the code pane (Enter)")
        go.clicked.connect(self.open_it)
        close = QPushButton("Close")
        close.setToolTip("Back to the code (Escape)")
        close.clicked.connect(self.close_peek)
        self.code = QPlainTextEdit()
        self.code.setReadOnly(True)
        self.code.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.code.setFont(mono_font())
        self.code.installEventFilter(self)
        self.code.viewport().installEventFilter(self)
        header = QHBoxLayout()
        header.addWidget(self.title, 1)
        header.addWidget(go)
        header.addWidget(close)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 6)
        layout.addLayout(header)
        layout.addWidget(self.code, 1)
        self.hide()

    def show_peek(self, item: ResultChunk, line_bottom: int) -> None:
        """The definition `item`, its code from its first line, in a frame whose top is at `line_bottom` (the
        bottom of the caret's line, in the editor's coordinates) or above the line when there is no room."""
        self.item = item
        chunk = item.chunk
        name = chunk.qualified_name or chunk.symbol
        self.title.setText(f"{name}  ·  {chunk.kind}  ·  {chunk.path}:{lines_text(chunk.start_line, chunk.end_line)}")
        self.code.setPlainText(chunk.content.rstrip("\n"))
        spacing = self.code.fontMetrics().lineSpacing()
        height = min(spacing * PEEK_LINES + self.title.sizeHint().height() + 24, self.editor.height() - 8)
        top = line_bottom if line_bottom + height <= self.editor.height() else max(line_bottom - spacing - height, 0)
        self.setGeometry(4, top, self.editor.width() - 8, height)
        self.show()
        self.raise_()
        self.code.setFocus(Qt.FocusReason.OtherFocusReason)

    def open_it(self) -> None:
        item = self.item
        self.close_peek()
        if item is not None:
            self.opened.emit(item)

    def close_peek(self) -> None:
        self.hide()
        self.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.KeyPress:
            if event.key() == Qt.Key.Key_Escape:
                self.close_peek()
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.open_it()
                return True
        if event.type() == QEvent.Type.MouseButtonDblClick:
            self.open_it()
            return True
        return False
