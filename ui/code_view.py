"""Code view: the selected chunk with its context, Pygments highlighting, line numbers, chunk lines marked."""

from __future__ import annotations

import html
import re
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path, PurePosixPath

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.styles import get_style_by_name
from pygments.token import Token
from pygments.util import ClassNotFound
from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction, QColor, QFont, QPainter, QSyntaxHighlighter, QTextCharFormat,
    QTextCursor, QTextDocument, QTextFormat,
)
from PySide6.QtWidgets import (
    QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QSizePolicy, QTextEdit, QVBoxLayout, QWidget,
)

from services.core import files
from services.core.models import Chunk, ResultChunk
from ui.actions import SEARCH, Place, window_action
from ui.editor import AUTO, EditorError, open_at_line
from ui.peek import PeekFrame
from ui.theme import mono_font
from ui.viewmodels.breadcrumbs import SEPARATOR, Crumb, crumbs
from ui.viewmodels.navigation import Navigation
from ui.viewmodels.ranking import fit_location, lines_text
from ui.why_view import ElidedLabel

PYGMENTS_STYLE = "default"
LEXED_FILES = 8  # whole files whose lexing is kept (Back / Forward between them shows them at once)
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
        self._lines: list[list[tuple]] = []
        self._lexed: OrderedDict[tuple, list] = OrderedDict()  # (file text, lexer) -> its spans, the last few files

    def set_source(self, text: str, lexer) -> None:
        """Re-colour the document already holding `text`."""
        self.prepare(text, lexer)
        self.rehighlight()

    def prepare(self, text: str, lexer, whole: str | None = None, offset: int = 0) -> None:
        """Lex ahead of setting `text` on the document (setPlainText highlights right away).

        With `whole` (the full file `text` is a slice of, starting at line index `offset`), the
        whole file is lexed and the slice's lines taken from it, so a slice starting inside a
        docstring or comment is coloured as in the file, not from a wrong lexer state."""
        if whole is None:
            self._lines = self._spans(text, lexer)
        else:
            key = (whole, lexer)  # chunks of one file, and Back / Forward between files, reuse its lexing
            if key not in self._lexed:
                self._lexed[key] = self._spans(whole, lexer)
                while len(self._lexed) > LEXED_FILES:
                    self._lexed.popitem(last=False)
            self._lexed.move_to_end(key)
            count = text.count("\n") + 1
            self._lines = self._lexed[key][offset:offset + count]

    def token_at(self, block_number: int, column: int):
        """The Pygments token type painted at a position (None for plain text)."""
        spans = self._lines[block_number] if block_number < len(self._lines) else []
        return next((token for start, length, _fmt, token in spans if start <= column < start + length), None)

    def _format(self, token) -> QTextCharFormat | None:
        while token is not None:
            fmt = self._formats.get(token)
            if fmt is not None and fmt.hasProperty(QTextFormat.Property.ForegroundBrush):
                return fmt
            token = token.parent
        return None

    def _spans(self, text: str, lexer) -> list[list[tuple]]:
        """Per line: (column, length, format, token type) for every coloured token."""
        lines: list[list[tuple]] = [[]]
        column = 0
        for token, value in lexer.get_tokens(text):
            fmt = self._format(token) if token not in (Token.Text, Token.Text.Whitespace) else None
            parts = value.split("\n")
            for i, part in enumerate(parts):
                if i > 0:
                    lines.append([])
                    column = 0
                if part and fmt is not None:
                    lines[-1].append((column, len(part), fmt, token))
                column += len(part)
        return lines

    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt API)
        number = self.currentBlock().blockNumber()
        if number < len(self._lines):
            for start, length, fmt, _token in self._lines[number]:
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
    """Read-only code editor with a line-number gutter starting at an arbitrary first line, and a keyboard
    caret (the arrows move it, Shift selects), as an editor's read-only view."""

    definition_clicked = Signal()  # Ctrl+click: the name under the mouse (the caret is put there first)
    hovered = Signal(str, QPoint)  # the mouse rests on a name: it, and where (global) to say what it is

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByKeyboard
                                     | Qt.TextInteractionFlag.TextSelectableByMouse)
        self.viewport().setMouseTracking(True)
        self.rest = QTimer(self)  # the mouse rests this long on a name before it is explained
        self.rest.setSingleShot(True)
        self.rest.setInterval(600)
        self.rest.timeout.connect(self._rested)
        self.resting_at = QPoint()
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(mono_font())
        self.first_line = 1
        self.marked: tuple[int, int] | None = None  # absolute line numbers, inclusive
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._update_margins)
        self.updateRequest.connect(self._update_gutter)
        self._update_margins()

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().mouseMoveEvent(event)
        if not event.buttons():
            self.resting_at = event.position().toPoint()
            self.rest.start()

    def leaveEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().leaveEvent(event)
        self.rest.stop()

    def _rested(self) -> None:
        cursor = self.cursorForPosition(self.resting_at)
        name = identifier_at(cursor.block().text(), cursor.positionInBlock())
        if name:
            self.hovered.emit(name, self.viewport().mapToGlobal(self.resting_at))

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.setTextCursor(self.cursorForPosition(event.position().toPoint()))
            self.definition_clicked.emit()

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


def identifier_at(line: str, column: int) -> str:
    """The name at `column` of `line`: the identifier there, as `Class.name` when it is reached through a
    class (`Node.from_parent`), alone otherwise (`self.config.getini` with the cursor in getini: `getini`)."""
    for match in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", line):
        if match.start() <= column <= match.end():
            parts = line[match.start():match.end()].split(".")
            upto = line[match.start():column].count(".") + 1
            parts = parts[:upto]
            return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]
    return ""


def file_slice(path: Path, text: str, first_line: int, anyway: bool = False) -> str | None:
    """The whole file when `text` is exactly its lines from `first_line` on, or `anyway` (else None)."""
    try:
        whole = files.read_text(path)
    except (OSError, UnicodeDecodeError):
        return None
    if anyway:
        return whole
    lines = whole.split("\n")
    shown = text.split("\n")
    if lines[first_line - 1:first_line - 1 + len(shown)] != shown:
        return None
    return whole


class FindBar(QWidget):
    """Ctrl+F in the code pane: a text box, the match count, previous / next (Shift+Enter / Enter, Shift+F3 /
    F3); Escape closes it and gives the keyboard back to the code, its caret on the match."""

    def __init__(self, editor: CodeEditor) -> None:
        super().__init__()
        self.editor = editor
        self.text = QLineEdit()
        self.text.setPlaceholderText("Find in file")
        self.text.setClearButtonEnabled(True)
        self.text.textChanged.connect(lambda _text: self.find_match(from_start=True))
        self.text.installEventFilter(self)
        self.count = QLabel("")
        self.count.setObjectName("findCount")
        self.previous_button = QPushButton("↑")
        self.previous_button.setToolTip("Previous match (Shift+Enter, Shift+F3)")
        self.previous_button.clicked.connect(lambda: self.find_match(backward=True))
        self.next_button = QPushButton("↓")
        self.next_button.setToolTip("Next match (Enter, F3)")
        self.next_button.clicked.connect(lambda: self.find_match())
        close = QPushButton("✕")
        close.setToolTip("Close (Escape)")
        close.clicked.connect(self.close_bar)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 0, 8, 0)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.count)
        for button in (self.previous_button, self.next_button, close):
            button.setFixedWidth(button.fontMetrics().horizontalAdvance("↓") + 24)
            layout.addWidget(button)
        self.hide()

    def open_bar(self) -> None:
        """Show the bar with the selected text (or the box's last text), all of it selected."""
        selected = self.editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.text.setText(selected)
        self.show()
        self.text.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.text.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.editor.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def find_match(self, backward: bool = False, from_start: bool = False) -> bool:
        """Select the next (or previous) match after the caret, wrapping round the file; False when none."""
        needle = self.text.text()
        if not needle:
            self.count.setText("")
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        if from_start:  # the text changed: the first match from where the caret's selection starts
            cursor = self.editor.textCursor()
            cursor.setPosition(cursor.selectionStart())
            self.editor.setTextCursor(cursor)
        found = self.editor.find(needle, flags)
        if not found:  # round the end of the file
            cursor = self.editor.textCursor()
            cursor.movePosition(QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start)
            self.editor.setTextCursor(cursor)
            found = self.editor.find(needle, flags)
        total = self.editor.toPlainText().lower().count(needle.lower())
        if found:
            before = self.editor.toPlainText()[:self.editor.textCursor().selectionStart()].lower().count(needle.lower())
            self.count.setText(f"{before + 1} of {total}")
        else:
            self.count.setText("no match")
        return found

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.text and event.type() == QEvent.Type.KeyPress:
            key, shift = event.key(), bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_F3):
                self.find_match(backward=shift)
                return True
            if key == Qt.Key.Key_Escape:
                self.close_bar()
                return True
        return False


class CodeView(QWidget):
    """Header (symbol, path) + "Open in editor" + the code editor; Back / Forward over what it showed, each
    place with where the reader was in it; the editor's keys: F12 / Ctrl+click go to the definition of the
    name at the caret (the window asks the engine), Ctrl+F finds in the file."""

    open_failed = Signal(str)
    went_to = Signal(object)  # Back / Forward: the window shows this ResultChunk again (its tab forward)
    definition_requested = Signal(str)  # F12 / Ctrl+click: the name at the caret
    hover_requested = Signal(str, QPoint)  # the mouse rests on a name: its signature and docstring, there
    outline_requested = Signal()  # Ctrl+F12: the outline of the file shown
    peek_requested = Signal(str)  # Alt+F12: the name at the caret, its definition to peek at (show_peek)
    chunks_wanted = Signal(str)  # a file shown whose chunks the breadcrumbs need (set_file_chunks)
    open_requested = Signal(object)  # a breadcrumb or a peek's Go to: the window shows this ResultChunk

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.workspace = ""
        self.item: ResultChunk | None = None
        self.whole_text: str | None = None  # the file as it was read, when the whole file is shown
        # a long name or path never widens the window: it ends in "…" (a path loses its folders first), whole
        # in the tooltip
        self.title = ElidedLabel("No chunk selected", fixed=False)
        self.title.setObjectName("codeTitle")
        self.subtitle = ElidedLabel("Select a result to see its code", shorten=fit_location, fixed=False)
        self.subtitle.setObjectName("codeSubtitle")
        self.subtitle.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.editor_preset = AUTO
        self.jetbrains_launcher = "idea"
        self.custom_command = ""  # for the custom preset: a template with {path} and {line}
        self.open_button = QPushButton("Open in editor")
        self.open_button.setToolTip("Open the file in your editor at the caret's line, the chunk's first until "
                                    "you move it (Ctrl+E, Enter or double-click on a result; choose the editor "
                                    "in Settings ▸ Editor)")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self.open_in_editor)
        self.whole_file = QPushButton("Whole file")
        self.whole_file.setCheckable(True)
        self.whole_file.setToolTip("Show the whole file, scrolled to the chunk (its lines stay marked); off: "
                                   "the chunk with a few lines around it")
        self.whole_file.toggled.connect(self._whole_file_toggled)
        self.editor = CodeEditor()
        self.highlighter = PygmentsHighlighter(self.editor.document())
        self.peek = PeekFrame(self.editor)
        self.peek.opened.connect(self.open_requested.emit)
        # where the caret is: "fixtures.py › FixtureRequest › getfixturevalue", each step a link
        self.breadcrumbs = QLabel("")
        self.breadcrumbs.setObjectName("breadcrumbs")
        self.breadcrumbs.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.breadcrumbs.setTextFormat(Qt.TextFormat.RichText)
        self.breadcrumbs.linkActivated.connect(self._crumb_clicked)
        self.breadcrumbs.setToolTip("Where the caret is; a step opens it (the file: its outline, Ctrl+F12)")
        self.file_chunks: tuple[str, list[ResultChunk]] = ("", [])  # the file's chunks, as the index has them
        self.steps: list[Crumb] = []
        self.editor.cursorPositionChanged.connect(self.update_breadcrumbs)

        header = QHBoxLayout()
        names = QVBoxLayout()
        names.setSpacing(0)
        names.addWidget(self.title)
        names.addWidget(self.subtitle)
        header.addLayout(names, 1)
        header.addWidget(self.whole_file, 0, Qt.AlignmentFlag.AlignVCenter)
        header.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignVCenter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        header.setContentsMargins(8, 0, 8, 0)
        self.find_bar = FindBar(self.editor)
        layout.addLayout(header)
        self.breadcrumbs.setContentsMargins(8, 0, 8, 0)
        layout.addWidget(self.breadcrumbs)
        layout.addWidget(self.find_bar)
        layout.addWidget(self.editor, 1)
        self.navigation: Navigation[ResultChunk] = Navigation()  # the places Back / Forward walk
        self.back_action = window_action(self, "Back", "Alt+Left", lambda: self._walk(self.navigation.back),
                                         "Back to where the code pane was", Place(260, SEARCH, 0, 2))
        self.forward_action = window_action(self, "Forward", "Alt+Right",
                                            lambda: self._walk(self.navigation.forward), "Forward again",
                                            Place(270, SEARCH, 0, 3))
        self._build_editor_actions()
        self.update_navigation()

    def update_navigation(self) -> None:
        """Back and Forward enabled when there is somewhere to go."""
        self.back_action.setEnabled(self.navigation.can_go_back())
        self.forward_action.setEnabled(self.navigation.can_go_forward())

    def _build_editor_actions(self) -> None:
        """The code pane's own keys (while it has the keyboard), also in its context menu."""
        def key(text: str, shortcuts, slot, tip: str = "") -> QAction:
            action = window_action(self, text, shortcuts, slot, tip)
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(action)
            return action

        self.definition_action = key("Go to definition", "F12", self.request_definition,
                                     "Go to the definition of the name at the caret (also Ctrl+click)")
        self.find_action = key("Find in file…", "Ctrl+F", self.find_bar.open_bar, "Find in the file shown")
        self.find_next_action = key("Find next", "F3", lambda: self.find_bar.find_match())
        self.find_previous_action = key("Find previous", "Shift+F3", lambda: self.find_bar.find_match(backward=True))
        self.peek_action = key("Peek definition", "Alt+F12", self.request_peek,
                               "The definition of the name at the caret in a frame here (Enter goes there)")
        self.outline_action = key("Outline of the file…", "Ctrl+F12", self.outline_requested.emit,
                                  "The file's classes, functions and sections as the index has them")
        self.editor_here_action = key("Open in editor at this line", "Ctrl+Shift+E", self.open_in_editor,
                                      "Open the file in your editor at the caret's line")
        self.editor.definition_clicked.connect(self.request_definition)
        self.editor.hovered.connect(self.hover_requested.emit)
        self.editor.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.editor.customContextMenuRequested.connect(self._context_menu)

    def _context_menu(self, pos) -> None:
        menu = self.editor.createStandardContextMenu()
        standard = menu.actions()  # Copy, Select All
        ours = [self.definition_action, self.peek_action, self.find_action, self.outline_action,
                self.editor_here_action]
        if standard:
            menu.insertActions(standard[0], ours)
            menu.insertSeparator(standard[0])
        else:
            menu.addActions(ours)
        menu.exec(self.editor.viewport().mapToGlobal(pos))

    def request_definition(self) -> None:
        name = self.name_under_cursor()
        if name:
            self.definition_requested.emit(name)

    def request_peek(self) -> None:
        name = self.name_under_cursor()
        if name:
            self.peek_requested.emit(name)

    def show_peek(self, item: ResultChunk) -> None:
        """The definition the window found for a peek, in a frame under the caret's line."""
        rect = self.editor.cursorRect()
        self.peek.show_peek(item, self.editor.viewport().mapTo(self.editor, rect.bottomLeft()).y() + 2)

    def set_file_chunks(self, path: str, items: list[ResultChunk]) -> None:
        """The chunks the index has for `path` (the breadcrumbs' steps and the outline's rows)."""
        self.file_chunks = (path, [i for i in items if i.chunk.path == path])
        self.update_breadcrumbs()

    def update_breadcrumbs(self) -> None:
        """The breadcrumbs for the caret's line: the file, then each enclosing class and function."""
        if self.item is None:
            self.steps = []
            self.breadcrumbs.setText("")
            return
        path = self.item.chunk.path
        known = self.file_chunks[1] if self.file_chunks[0] == path else [self.item]
        self.steps = crumbs(path, known, self.caret_line())
        links = [f'<a href="{n}" style="text-decoration:none">{html.escape(step.text)}</a>'
                 for n, step in enumerate(self.steps)]
        self.breadcrumbs.setText(SEPARATOR.join(links))

    def breadcrumb_texts(self) -> list[str]:
        return [step.text for step in self.steps]

    def _crumb_clicked(self, link: str) -> None:
        step = self.steps[int(link)] if link.isdigit() and int(link) < len(self.steps) else None
        if step is None:
            return
        if step.item is None:
            self.outline_requested.emit()
        else:
            self.open_requested.emit(step.item)

    def leave_place(self) -> None:
        """The pane is about to show another place: remember where the reader was in this one."""
        if self.navigation.current is not None and self.item is not None:
            self.navigation.current.where = self.place()

    def _walk(self, step) -> None:
        """Back / Forward: the place again, at the caret and view the reader left it with."""
        self.leave_place()
        item = step()
        if item is None:
            return
        self.update_navigation()
        self.went_to.emit(item)
        where = self.navigation.current.where if self.navigation.current is not None else None
        if where is not None and self.item is item:
            self.go_to_place(where)
        self.editor.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def set_workspace(self, workspace: str) -> None:
        self.workspace = workspace
        self.file_chunks = ("", [])

    def name_under_cursor(self) -> str:
        """The identifier (dotted parts included: `self.config.getini`) under the text cursor, "" if none."""
        cursor = self.editor.textCursor()
        return identifier_at(cursor.block().text(), cursor.positionInBlock())

    def name_subject(self) -> ResultChunk | None:
        """For Used by / Uses: the name under the cursor when the pane has the keyboard and the cursor is on
        another name than the code shown's, else None."""
        name = self.name_under_cursor() if self.editor.hasFocus() else ""
        shown = self.item
        if not name or shown is None or name in (shown.chunk.symbol, shown.chunk.qualified_name):
            return None
        named = Chunk(path=shown.chunk.path, language=shown.chunk.language, start_line=shown.chunk.start_line,
                      end_line=shown.chunk.end_line, content="", symbol=name, qualified_name=name, kind="name")
        return ResultChunk(named, 1, 0.0, None, None, "", 0)

    def show_chunk(self, item: ResultChunk | None, from_disk: bool = False) -> None:
        """Show `item`, scrolled to its lines; `from_disk`: the whole file as it is on disk now, even when it
        no longer matches the item's text (a save since the item was read)."""
        self.item = item
        if item is None:
            self.title.setText("No chunk selected")
            self.subtitle.setText("Select a result to see its code")
            self.open_button.setEnabled(False)
            self.highlighter.prepare("", TextLexer())
            self.editor.show_code("", 1, None)
            self.whole_text = None
            self.update_breadcrumbs()
            return
        chunk = item.chunk
        name = chunk.qualified_name or chunk.symbol or chunk.path.rsplit("/", 1)[-1]
        self.title.setText(f"{name}  ·  {chunk.kind}")
        language = f"   ({chunk.language})" if chunk.language else ""
        self.subtitle.setText(f"{chunk.path}:{lines_text(chunk.start_line, chunk.end_line)}{language}")
        self.open_button.setEnabled(bool(self.workspace))
        if item.context:
            text, first = item.context, item.context_start_line or chunk.start_line
        else:
            text, first = chunk.content, chunk.start_line
        text = text.rstrip("\n")
        whole = file_slice(Path(self.workspace) / chunk.path, text, first, from_disk) if self.workspace else None
        self.whole_text = whole if whole is not None and self.whole_file.isChecked() else None
        if self.whole_text is not None:
            text, first = self.whole_text.rstrip("\n"), 1
        self.highlighter.prepare(text, lexer_for(chunk.path, chunk.language), whole, first - 1)
        self.peek.hide()
        self.editor.show_code(text, first, (chunk.start_line, chunk.end_line))
        self.editor.scroll_to_line(chunk.start_line)
        if self.file_chunks[0] != chunk.path or from_disk:
            self.chunks_wanted.emit(chunk.path)
        self.update_breadcrumbs()

    def place(self) -> tuple[int, int, int]:
        """Where the reader is: the caret's line and column, and the first line in view (line numbers of the
        file)."""
        cursor = self.editor.textCursor()
        first = self.editor.first_line
        return first + cursor.blockNumber(), cursor.positionInBlock(), first + self.editor.verticalScrollBar().value()

    def go_to_place(self, place: tuple[int, int, int]) -> None:
        """The caret and the view back at `place` (as `place()` gave it), as near as the text now allows."""
        line, column, top = place
        document, first = self.editor.document(), self.editor.first_line
        block = document.findBlockByNumber(min(max(line - first, 0), document.blockCount() - 1))
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + min(column, max(block.length() - 1, 0)))
        self.editor.setTextCursor(cursor)
        self.editor.verticalScrollBar().setValue(top - first)

    def changed_on_disk(self) -> bool:
        """Whether the file shown was saved since it was shown (its lines on disk are not the ones shown)."""
        path = Path(self.workspace) / self.item.chunk.path if self.item is not None and self.workspace else None
        if path is None or not path.is_file():
            return False
        if self.whole_text is not None:
            return file_slice(path, "", 1, anyway=True) != self.whole_text
        return file_slice(path, self.editor.toPlainText(), self.editor.first_line) is None

    def show_again(self, fresh: ResultChunk | None = None) -> None:
        """The file shown changed on disk: show it as it is now, at the same place (caret and view); `fresh`:
        the shown chunk as a refreshed answer has it (its new lines), else the one shown."""
        place = self.place()
        self.show_chunk(fresh or self.item, from_disk=True)
        self.go_to_place(place)

    def _whole_file_toggled(self, _on: bool) -> None:
        self.show_chunk(self.item)

    def shown_lines(self) -> tuple[int, int]:
        """(first, last) line numbers of the text in the editor."""
        return self.editor.first_line, self.editor.first_line + self.editor.blockCount() - 1

    def file_path(self) -> str:
        if self.item is None:
            return ""
        return str(Path(self.workspace) / self.item.chunk.path)

    def caret_line(self) -> int:
        return self.editor.first_line + self.editor.textCursor().blockNumber()

    def open_in_editor(self) -> bool:
        """Open the shown file at the caret's line (the chunk's first line until the reader moves it); a
        failure is reported through open_failed."""
        if self.item is None or not self.workspace:
            return False
        if not Path(self.file_path()).exists():
            self.open_failed.emit(f"{self.item.chunk.path} was deleted since it was indexed.")
            return False
        try:
            open_at_line(self.editor_preset, self.file_path(), self.caret_line(),
                         self.jetbrains_launcher, self.custom_command)
        except EditorError as exc:
            self.open_failed.emit(str(exc))
            return False
        return True
