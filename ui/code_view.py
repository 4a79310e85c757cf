"""Code view: the selected chunk with its context, Pygments highlighting, line numbers, chunk lines marked."""

from __future__ import annotations

import os
import shlex
import subprocess
from functools import lru_cache
from pathlib import Path, PurePosixPath

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.styles import get_style_by_name
from pygments.token import Token
from pygments.util import ClassNotFound
from PySide6.QtCore import QRect, QSize, QUrl, Qt, Signal
from PySide6.QtGui import (
    QColor, QDesktopServices, QFont, QFontDatabase, QPainter, QSyntaxHighlighter, QTextCharFormat,
    QTextCursor, QTextFormat,
)
from PySide6.QtWidgets import (
    QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QTextEdit, QVBoxLayout, QWidget,
)

from services.models import ResultChunk

PYGMENTS_STYLE = "default"
CHUNK_BACKGROUND = QColor("#fff6d5")
GUTTER_BACKGROUND = QColor("#f4f5f7")
GUTTER_TEXT = QColor("#9aa0a6")
GUTTER_CHUNK_TEXT = QColor("#3c4043")

LANGUAGE_LEXERS = {"typescript": "typescript", "javascript": "javascript", "csharp": "csharp",
                   "kotlin": "kotlin", "swift": "swift", "go": "go", "rust": "rust",
                   "java": "java", "python": "python", "markdown": "markdown", "cpp": "cpp", "c": "c"}


@lru_cache(maxsize=64)
def _lexer_for_language(language: str):
    """By name: a name lookup never scans plugin entry points (a filename lookup does, ~200 ms)."""
    try:
        return get_lexer_by_name(LANGUAGE_LEXERS.get(language, language), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=64)
def _lexer_for_suffix(suffix: str):
    try:
        return get_lexer_for_filename("x" + suffix, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def lexer_for(path: str, language: str):
    """A cached Pygments lexer for a chunk (instances are reused: lexers keep no state)."""
    return _lexer_for_language(language) or _lexer_for_suffix(PurePosixPath(path).suffix.lower())


def preload_lexers(languages: list[str]) -> None:
    """Import and compile the lexers for these languages (run in a worker thread, off the GUI thread)."""
    for language in languages:
        lexer = _lexer_for_language(language)
        if lexer is not None:
            for _ in lexer.get_tokens("x = 1\n"):
                pass


def _formats_for_style(style_name: str) -> dict:
    style = get_style_by_name(style_name)
    formats = {}
    for token, spec in style:
        fmt = QTextCharFormat()
        if spec["color"]:
            fmt.setForeground(QColor("#" + spec["color"]))
        if spec["bold"]:
            fmt.setFontWeight(QFont.Weight.Bold)
        if spec["italic"]:
            fmt.setFontItalic(True)
        formats[token] = fmt
    return formats


class PygmentsHighlighter(QSyntaxHighlighter):
    """Lexes the whole text once with Pygments, then paints each block from the per-line spans."""

    def __init__(self, document, style_name: str = PYGMENTS_STYLE) -> None:
        super().__init__(document)
        self._formats = _formats_for_style(style_name)
        self._lines: list[list[tuple[int, int, QTextCharFormat]]] = []

    def set_source(self, text: str, lexer) -> None:
        """Re-colour the document already holding `text`."""
        self.prepare(text, lexer)
        self.rehighlight()

    def prepare(self, text: str, lexer) -> None:
        """Lex `text` ahead of setting it on the document (setPlainText highlights right away)."""
        self._lines = self._spans(text, lexer)

    def _format(self, token) -> QTextCharFormat | None:
        while token is not None:
            fmt = self._formats.get(token)
            if fmt is not None and fmt.hasProperty(QTextFormat.Property.ForegroundBrush):
                return fmt
            token = token.parent
        return None

    def _spans(self, text: str, lexer) -> list[list[tuple[int, int, QTextCharFormat]]]:
        lines: list[list[tuple[int, int, QTextCharFormat]]] = [[]]
        column = 0
        for token, value in lexer.get_tokens(text):
            fmt = self._format(token) if token not in (Token.Text, Token.Text.Whitespace) else None
            parts = value.split("\n")
            for i, part in enumerate(parts):
                if i > 0:
                    lines.append([])
                    column = 0
                if part and fmt is not None:
                    lines[-1].append((column, len(part), fmt))
                column += len(part)
        return lines

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        number = self.currentBlock().blockNumber()
        if number < len(self._lines):
            for start, length, fmt in self._lines[number]:
                self.setFormat(start, length, fmt)


class _Gutter(QWidget):
    def __init__(self, editor: "CodeEditor") -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event) -> None:  # noqa: N802
        self.editor.paint_gutter(event)


class CodeEditor(QPlainTextEdit):
    """Read-only code editor with a line-number gutter starting at an arbitrary first line."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(max(font.pointSizeF(), 10.0))
        self.setFont(font)
        self.first_line = 1
        self.marked: tuple[int, int] | None = None  # absolute line numbers, inclusive
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._update_margins)
        self.updateRequest.connect(self._update_gutter)
        self._update_margins()

    def gutter_width(self) -> int:
        last = self.first_line + max(self.blockCount(), 1) - 1
        digits = max(3, len(str(last)))
        return 14 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margins(self, *_args) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _update_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def paint_gutter(self, event) -> None:
        painter = QPainter(self._gutter)
        painter.fillRect(event.rect(), GUTTER_BACKGROUND)
        block = self.firstVisibleBlock()
        number = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        width = self._gutter.width() - 6
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible() and bottom >= event.rect().top():
                line = self.first_line + number
                inside = self.marked is not None and self.marked[0] <= line <= self.marked[1]
                painter.setPen(GUTTER_CHUNK_TEXT if inside else GUTTER_TEXT)
                painter.drawText(0, top, width, height, Qt.AlignmentFlag.AlignRight, str(line))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())
            number += 1
        painter.end()

    def line_text(self, line: int) -> str:
        """Text of an absolute line number ("" when outside the shown context)."""
        block = self.document().findBlockByNumber(line - self.first_line)
        return block.text() if block.isValid() else ""

    def marked_block_numbers(self) -> list[int]:
        return [s.cursor.blockNumber() for s in self.extraSelections()]

    def show_code(self, text: str, first_line: int, marked: tuple[int, int] | None) -> None:
        self.first_line = max(first_line, 1)
        self.marked = marked
        self.setPlainText(text)
        self._update_margins()
        self._mark_lines()

    def _mark_lines(self) -> None:
        selections = []
        if self.marked is not None:
            fmt = QTextCharFormat()
            fmt.setBackground(CHUNK_BACKGROUND)
            fmt.setProperty(QTextFormat.Property.FullWidthSelection, True)
            for line in range(self.marked[0], self.marked[1] + 1):
                block = self.document().findBlockByNumber(line - self.first_line)
                if not block.isValid():
                    continue
                sel = QTextEdit.ExtraSelection()
                sel.format = fmt
                sel.cursor = QTextCursor(block)
                selections.append(sel)
        self.setExtraSelections(selections)

    def scroll_to_line(self, line: int) -> None:
        block = self.document().findBlockByNumber(max(line - self.first_line, 0))
        if block.isValid():
            cursor = QTextCursor(block)
            self.setTextCursor(cursor)
            # put the chunk start a few lines below the top
            self.verticalScrollBar().setValue(max(block.blockNumber() - 3, 0))


def editor_command(path: str, line: int) -> list[str] | None:
    """The $VISUAL/$EDITOR command to open `path` at `line`, or None when neither is set."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        return None
    return [*shlex.split(editor), f"+{line}", path]


class CodeView(QWidget):
    """Header (symbol, path) + "Open in editor" + the code editor."""

    open_failed = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.workspace = ""
        self.item: ResultChunk | None = None
        self.title = QLabel("No chunk selected")
        self.title.setObjectName("codeTitle")
        self.subtitle = QLabel("Select a result to see its code")
        self.subtitle.setObjectName("codeSubtitle")
        self.subtitle.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open in editor")
        self.open_button.setToolTip("Open the file at the chunk's first line ($VISUAL / $EDITOR, else the system default)")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self.open_in_editor)
        self.editor = CodeEditor()
        self.highlighter = PygmentsHighlighter(self.editor.document())

        header = QHBoxLayout()
        names = QVBoxLayout()
        names.setSpacing(0)
        names.addWidget(self.title)
        names.addWidget(self.subtitle)
        header.addLayout(names, 1)
        header.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignVCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        header.setContentsMargins(8, 0, 8, 0)
        layout.addLayout(header)
        layout.addWidget(self.editor, 1)

    def set_workspace(self, workspace: str) -> None:
        self.workspace = workspace

    def show_chunk(self, item: ResultChunk | None) -> None:
        self.item = item
        if item is None:
            self.title.setText("No chunk selected")
            self.subtitle.setText("Select a result to see its code")
            self.open_button.setEnabled(False)
            self.highlighter.prepare("", TextLexer())
            self.editor.show_code("", 1, None)
            return
        chunk = item.chunk
        name = chunk.qualified_name or chunk.symbol or chunk.path.rsplit("/", 1)[-1]
        self.title.setText(f"{name}  ·  {chunk.kind}")
        self.subtitle.setText(f"{chunk.path}:{chunk.start_line}-{chunk.end_line}   ({chunk.language})")
        self.open_button.setEnabled(bool(self.workspace))
        if item.context:
            text, first = item.context, item.context_start_line or chunk.start_line
        else:
            text, first = chunk.content, chunk.start_line
        text = text.rstrip("\n")
        self.highlighter.prepare(text, lexer_for(chunk.path, chunk.language))
        self.editor.show_code(text, first, (chunk.start_line, chunk.end_line))
        self.editor.scroll_to_line(chunk.start_line)

    def file_path(self) -> str:
        if self.item is None:
            return ""
        return str(Path(self.workspace) / self.item.chunk.path)

    def open_in_editor(self) -> None:
        if self.item is None:
            return
        path, line = self.file_path(), self.item.chunk.start_line
        if not Path(path).exists():
            self.open_failed.emit(f"{self.item.chunk.path} was deleted since it was indexed.")
            return
        command = editor_command(path, line)
        try:
            if command is not None:
                subprocess.Popen(command, start_new_session=True)  # noqa: S603 (user's own editor)
            elif not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
                self.open_failed.emit(f"No application could open {path}")
        except OSError as exc:
            self.open_failed.emit(f"Could not start the editor: {exc}")
