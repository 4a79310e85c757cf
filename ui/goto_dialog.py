"""The go to file (Ctrl+P) / go to symbol (Ctrl+T) finder: floats over the window like the command palette.

A text box, the matches updated as you type (asked of the engine in a task: typing never waits on it),
matched characters in bold, a preview of the selected match. Enter opens it in the window's code pane at
the definition, Ctrl+E in the editor, Escape closes. The logic is ui/viewmodels/goto.py.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QApplication, QFrame, QLabel, QLineEdit, QListWidget, QListWidgetItem, QSplitter, QStyle, QStyledItemDelegate,
    QVBoxLayout, QWidget,
)

from services.core.models import GotoHit, ResultChunk
from ui.actions import SEARCH, Place, window_action
from ui.async_runner import AsyncRunner, describe_error
from ui.code_view import CodeView
from ui.viewmodels.goto import (
    FILES, PLACEHOLDERS, SYMBOLS, GotoViewModel, count_text, distinct_tails, empty_text, row_html,
)

HitRole = Qt.ItemDataRole.UserRole + 1
KeepRole = Qt.ItemDataRole.UserRole + 2  # the last folders that tell the row's path from the others'
OPEN_IN_EDITOR = QKeySequence("Ctrl+E")


MARGIN = 4  # around a row's text


def row_document(hit: GotoHit, selected: bool, font, width: int, keep: int = 0) -> QTextDocument:
    """A row as rich text laid out for `width` (its path cut to fit, its last `keep` folders kept, matched
    characters in bold)."""
    bold = QFont(font)
    bold.setBold(True)
    metrics = QFontMetrics(bold)
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setDocumentMargin(MARGIN)
    document.setHtml(row_html(hit, selected, lambda text: metrics.horizontalAdvance(text) <= width - 4 * MARGIN,
                              keep))
    return document


class RowDelegate(QStyledItemDelegate):
    """Paints a match's row from its hit (no widget per row): the whole row as tall as its text, so an
    underscore is never clipped, and the path fitted to the row's width as it is now."""

    def paint(self, painter, option, index) -> None:
        hit = index.data(HitRole)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        document = row_document(hit, selected, option.font, option.rect.width(), index.data(KeepRole) or 0)
        painter.save()
        painter.translate(option.rect.topLeft())
        document.drawContents(painter)
        painter.restore()

    def sizeHint(self, option, index) -> QSize:  # noqa: N802 (Qt API)
        document = row_document(index.data(HitRole), False, option.font, max(option.rect.width(), 200),
                                index.data(KeepRole) or 0)
        return QSize(int(document.idealWidth()), int(document.size().height()))


class GotoDialog(QFrame):
    """`workspace()` names the open workspace; `on_open(item, in_editor)` opens a match (a ResultChunk)."""

    def __init__(self, parent: QWidget, model: GotoViewModel, workspace: Callable[[], str],
                 on_open: Callable[[ResultChunk, bool], None]) -> None:
        super().__init__(parent)
        self.setObjectName("gotoFinder")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.model, self.workspace, self.on_open = model, workspace, on_open
        self.building: Callable[[], bool] = lambda: False  # whether an index run is under way (the window's)
        self.runner = AsyncRunner(self)
        self.previewed: ResultChunk | None = None
        self.filter = QLineEdit()
        self.filter.textChanged.connect(self.ask)
        self.filter.installEventFilter(self)
        self.list = QListWidget()
        self.list.setItemDelegate(RowDelegate(self.list))
        self.list.currentRowChanged.connect(self._selected)  # a row number: no None crosses the binding
        self.list.itemActivated.connect(lambda _item: self.open_current(False))
        self.status = QLabel()
        self.status.setObjectName("gotoStatus")
        self.preview = CodeView()
        self.preview.open_button.hide()  # Enter and Ctrl+E open it
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.list)
        split.addWidget(self.preview)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.filter)
        layout.addWidget(split, 1)
        layout.addWidget(self.status)
        self.hide()
        self.file_action = window_action(self, "Go to file…", "Ctrl+P", lambda: self.open(FILES),
                                         "Go to file: find an indexed file by name (latex.py:120 for a line)",
                                         Place(220, SEARCH, 0, 0))
        self.symbol_action = window_action(self, "Go to symbol…", "Ctrl+T", lambda: self.open(SYMBOLS),
                                           "Go to symbol: find a definition by name (fm: FixtureManager, Class.method)",
                                           Place(230, SEARCH, 0, 1))

    # --- opening and asking ---
    def open(self, target: str) -> None:
        host = self.parentWidget()
        width, height = min(1100, host.width() - 40), min(560, host.height() - 60)
        self.setGeometry((host.width() - width) // 2, 30, width, height)
        self.model.start(target, self.workspace())
        self.preview.set_workspace(self.model.workspace)
        self.filter.setPlaceholderText(PLACEHOLDERS[target])
        self.filter.blockSignals(True)
        self.filter.clear()
        self.filter.blockSignals(False)
        self.ask("")
        self.show()
        self.raise_()
        self.filter.setFocus()

    def ask(self, text: str) -> None:
        """Ask the engine for `text` in a task; a newer keystroke cancels the one still waiting."""
        if not self.model.workspace or not text.strip():
            self.runner.cancel("goto")
            self._show_rows([])
            return
        self.runner.run(self.model.search(text), key="goto", context="Go to",
                        on_result=self._answered, on_error=self._failed)

    def _answered(self, answer) -> None:
        if answer is not None:
            self._show_rows(answer.hits)

    def _failed(self, error: BaseException) -> None:
        self._show_rows([], describe_error(error))

    def _show_rows(self, hits: list[GotoHit], problem: str = "") -> None:
        self.list.clear()
        tails = distinct_tails([hit.path for hit in hits])
        for hit in hits:
            item = QListWidgetItem()
            item.setData(HitRole, hit)
            item.setData(KeepRole, tails[hit.path])
            item.setToolTip(f"{hit.path}:{hit.start_line}")
            self.list.addItem(item)
        answer = self.model.answer
        if hits:
            self.status.setText(count_text(answer.matched if answer else len(hits), len(hits))
                                + "   ·   Enter: code pane   Ctrl+E: editor   Esc: close")
            self.list.setCurrentRow(0)
        else:
            self.status.setText(problem or empty_text(self.model.target, self.model.workspace, answer,
                                                      self.filter.text(), self.building()))
            self.previewed = None
            self.preview.show_chunk(None)

    def row_text(self, row: int) -> str:
        """A row as it is painted, in plain text (what a user reads)."""
        item = self.list.item(row)
        document = row_document(item.data(HitRole), False, self.list.font(), self.list.viewport().width(),
                                item.data(KeepRole) or 0)
        return document.toPlainText()

    # --- the selected match ---
    def current_hit(self) -> GotoHit | None:
        item = self.list.currentItem()
        return item.data(HitRole) if item is not None else None

    def shown_labels(self) -> list[str]:
        return [self.list.item(row).data(HitRole).label for row in range(self.list.count())]

    def _selected(self, row: int) -> None:
        item = self.list.item(row) if row >= 0 else None
        if item is None:
            return
        self.runner.run(self.model.preview(item.data(HitRole)), key="preview", context="Preview",
                        on_result=self._show_preview)

    def _show_preview(self, item: ResultChunk) -> None:
        self.previewed = item
        self.preview.show_chunk(item)

    def open_current(self, in_editor: bool) -> None:
        """Open the selected match (Enter: the code pane; Ctrl+E: the editor too), once its code is read."""
        hit = self.current_hit()
        if hit is None:
            return
        self.hide()
        item = self.previewed
        if item is not None and (item.chunk.path, item.chunk.start_line) == (hit.path, max(hit.start_line, 1)):
            self.on_open(item, in_editor)
            return
        self.runner.run(self.model.preview(hit), key="open", context="Go to",
                        on_result=lambda chosen: self.on_open(chosen, in_editor))

    # --- keys ---
    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is not self.filter:
            return False
        if event.type() == QEvent.Type.ShortcutOverride and event.keyCombination() == OPEN_IN_EDITOR[0]:
            event.accept()  # Ctrl+E here opens the match, not the window's selected result
            return True
        if event.type() == QEvent.Type.KeyPress:
            return self._key(event)
        if event.type() == QEvent.Type.FocusOut:
            focused = QApplication.focusWidget()
            if focused is None or not self.isAncestorOf(focused):
                self.hide()
        return False

    def _key(self, event) -> bool:
        key = event.key()
        if key == Qt.Key.Key_Escape:
            self.hide()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.open_current(False)
        elif event.keyCombination() == OPEN_IN_EDITOR[0]:
            self.open_current(True)
        elif key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
            step = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_PageDown: 10, Qt.Key.Key_PageUp: -10}[key]
            self.list.setCurrentRow(max(0, min(self.list.currentRow() + step, self.list.count() - 1)))
        else:
            return False
        return True


__all__ = ["FILES", "SYMBOLS", "GotoDialog"]
