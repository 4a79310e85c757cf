"""Ctrl+F12 in the code pane: the outline of the file shown, as the index has cut it into chunks (classes,
functions, methods, sections), in file order. Type to filter, Enter goes there, Escape closes."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from services.core.models import ResultChunk
from ui.viewmodels.ranking import location_text, symbol_text

ItemRole = Qt.ItemDataRole.UserRole + 1


def outline_text(item: ResultChunk) -> str:
    """"  45  SearchEngine.score · method" (a member indented under its class)."""
    chunk = item.chunk
    depth = "    " * (chunk.qualified_name or "").count(".")
    return f"{chunk.start_line:>5}  {depth}{symbol_text(item)} · {chunk.kind}"


class OutlinePopup(QFrame):
    chosen = Signal(object)  # the ResultChunk of the row chosen

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("outline")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.title = QLabel("")
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter the outline")
        self.filter.textChanged.connect(self._filter)
        self.filter.installEventFilter(self)
        self.list = QListWidget()
        self.list.itemActivated.connect(lambda row: self._choose(row))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.title)
        layout.addWidget(self.filter)
        layout.addWidget(self.list, 1)
        self.hide()

    def show_outline(self, path: str, items: list[ResultChunk], over: QWidget) -> None:
        """List `items` (the file's chunks) in file order, floating over `over` (the code pane)."""
        self.list.clear()
        for item in sorted(items, key=lambda i: (i.chunk.start_line, i.chunk.end_line)):
            row = QListWidgetItem(outline_text(item))
            row.setData(ItemRole, item)
            row.setToolTip(location_text(item))
            self.list.addItem(row)
        self.title.setText(f"Outline of {path}: {len(items)} chunks" if items else f"{path} has no chunks in the index")
        corner = over.mapTo(self.window(), over.rect().topLeft())
        width, height = min(520, over.width() - 20), min(480, max(over.height() - 20, 200))
        self.setGeometry(corner.x() + (over.width() - width) // 2, corner.y() + 10, width, height)
        self.filter.clear()
        self.list.setCurrentRow(0)
        self.show()
        self.raise_()
        self.filter.setFocus()

    def rows(self) -> list[str]:
        return [self.list.item(n).text() for n in range(self.list.count()) if not self.list.item(n).isHidden()]

    def _filter(self, text: str) -> None:
        words = text.lower().split()
        first = None
        for n in range(self.list.count()):
            row = self.list.item(n)
            row.setHidden(not all(w in row.text().lower() for w in words))
            if first is None and not row.isHidden():
                first = n
        if first is not None:
            self.list.setCurrentRow(first)

    def _choose(self, row: QListWidgetItem | None) -> None:
        if row is None:
            return
        self.hide()
        self.chosen.emit(row.data(ItemRole))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if watched is self.filter and event.type() == QEvent.Type.KeyPress:
            key = event.key()
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self._choose(self.list.currentItem())
                return True
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                rows = [n for n in range(self.list.count()) if not self.list.item(n).isHidden()]
                if rows:
                    at = rows.index(self.list.currentRow()) if self.list.currentRow() in rows else 0
                    step = 1 if key == Qt.Key.Key_Down else -1
                    self.list.setCurrentRow(rows[max(0, min(at + step, len(rows) - 1))])
                return True
        if watched is self.filter and event.type() == QEvent.Type.FocusOut:
            self.hide()
        return False
