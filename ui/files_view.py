"""The Files view: a question answered as ranked files (rank, movement, score, path elided from the
left, its best chunks), and for the selected file the signals that put it there."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QListView, QListWidget, QListWidgetItem, QSplitter,
    QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from services.core.models import FileAnswer, RankedFile
from ui.code_view import CodeView
from ui.results_view import ElideDelegate
from ui.viewmodels.files import (
    STRIP_FILES, chunks_text, file_preview, file_tip, heading_text, movement_text, strip_text, summary_text, why_cells,
)
from ui.why_view import BarDelegate, BarRole

EMPTY = "Ask a question: the files that answer it show here, best first."


def _table(columns: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().hide()
    table.setShowGrid(False)
    table.setWordWrap(False)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    return table


class FilesView(QWidget):
    """set_answer(answer) shows a FileAnswer; selecting a file shows why it ranks there and previews it
    (its best chunk marked); Enter or double-click opens it (`open_requested`)."""

    open_requested = Signal()

    COLUMNS = ["#", "Δ", "Score", "File", "Best chunks"]
    WHY_COLUMNS = ["Signal", "Adds", "", "Why"]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.answer: FileAnswer | None = None
        self.title = QLabel(EMPTY)
        self.title.setObjectName("paneTitle")
        self.table = _table(self.COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setItemDelegateForColumn(3, ElideDelegate(Qt.TextElideMode.ElideLeft, self.table))
        header = self.table.horizontalHeader()
        for column in (0, 1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.heading = QLabel("Select a file to see why it ranks where it does.")
        self.heading.setWordWrap(True)
        self.why = _table(self.WHY_COLUMNS)
        self.why.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.why.setItemDelegateForColumn(2, BarDelegate(self.why))
        why_header = self.why.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.Interactive, QHeaderView.ResizeMode.Stretch)):
            why_header.setSectionResizeMode(column, mode)
        self.why.setColumnWidth(2, 200)
        why = QWidget()
        why_layout = QVBoxLayout(why)
        why_layout.setContentsMargins(0, 0, 0, 0)
        why_layout.addWidget(self.heading)
        why_layout.addWidget(self.why, 1)
        self.code = CodeView()  # the selected file, its best chunk marked
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(why)
        lower.addWidget(self.code)
        lower.setStretchFactor(0, 2)
        lower.setStretchFactor(1, 3)
        lower.setChildrenCollapsible(False)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(lower)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.splitter, 1)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.activated.connect(lambda _index: self.open_requested.emit())
        self.table.setToolTip("Enter or double-click opens the file in your editor (Ctrl+E)")

    def set_answer(self, answer: FileAnswer | None) -> None:
        self.answer = answer
        self.table.setRowCount(0)
        self.show_why(None)
        if answer is None:
            self.title.setText(EMPTY)
            return
        self.title.setText(summary_text(answer))
        self.table.setRowCount(len(answer.files))
        for row, file in enumerate(answer.files):
            cells = (str(file.rank), movement_text(file), f"{file.score:.2f}", file.path, chunks_text(file))
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(file.path if column == 3 else text)
                self.table.setItem(row, column, item)
        if answer.files:
            self.table.selectRow(0)

    def selected(self) -> RankedFile | None:
        rows = self.table.selectionModel().selectedRows()
        return self.answer.files[rows[0].row()] if self.answer and rows else None

    def _selection_changed(self) -> None:
        file = self.selected()
        self.show_why(file)
        self.code.show_chunk(file_preview(self.code.workspace, file) if file and self.code.workspace else None)

    def show_why(self, file: RankedFile | None) -> None:
        self.why.setRowCount(0)
        if file is None or self.answer is None:
            self.heading.setText("Select a file to see why it ranks where it does.")
            return
        self.heading.setText(heading_text(self.answer, file))
        self.why.setRowCount(len(file.signals))
        for row, (signal, (amount, share, tip)) in enumerate(zip(file.signals, why_cells(file.signals))):
            bar = QTableWidgetItem()
            bar.setData(BarRole, share)
            cells = (QTableWidgetItem(signal.name), QTableWidgetItem(amount), bar, QTableWidgetItem(signal.note))
            for column, cell in enumerate(cells):
                cell.setToolTip(tip)
                self.why.setItem(row, column, cell)

    def why_rows(self) -> list[tuple[str, str, str]]:
        """(signal, what it adds, why) per row, as shown."""
        return [(self.why.item(r, 0).text(), self.why.item(r, 1).text(), self.why.item(r, 3).text())
                for r in range(self.why.rowCount())]


class FileStrip(QWidget):
    """The Explore tab's "Files" strip: the question's best files on one line above the chunks, each with its
    why in its tooltip; choosing one (`file_chosen`, RankedFile) shows it in the code pane and its why rows."""

    file_chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.answer: FileAnswer | None = None
        self.title = QLabel("Files")
        self.title.setObjectName("paneTitle")
        self.title.setToolTip("The question answered as files (the Files tab, Ctrl+Shift+F): for a question in "
                              "words the engine is surer of its files than of its passages")
        self.list = QListWidget()
        self.list.setFlow(QListView.Flow.LeftToRight)
        self.list.setWrapping(False)
        self.list.setSpacing(2)
        self.list.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setFixedHeight(self.list.fontMetrics().height() + 14)
        self.list.currentRowChanged.connect(self._chosen)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.list, 1)
        self.hide()

    def set_answer(self, answer: FileAnswer | None) -> None:
        """Show `answer`'s best files (None or no files: the strip goes)."""
        self.answer = answer
        self.list.blockSignals(True)
        self.list.clear()
        for file in answer.files[:STRIP_FILES] if answer else []:
            item = QListWidgetItem(strip_text(file))
            item.setToolTip(file_tip(file))
            self.list.addItem(item)
        self.list.setCurrentRow(-1)
        self.list.blockSignals(False)
        self.setVisible(self.list.count() > 0)

    def shown_paths(self) -> list[str]:
        """The files on the strip, in order."""
        return [file.path for file in self.answer.files[:self.list.count()]] if self.answer else []

    def choose(self, row: int) -> None:
        self.list.setCurrentRow(row)

    def clear_choice(self) -> None:
        self.list.blockSignals(True)
        self.list.setCurrentRow(-1)
        self.list.clearSelection()
        self.list.blockSignals(False)

    def _chosen(self, row: int) -> None:
        if self.answer is not None and 0 <= row < self.list.count():
            self.file_chosen.emit(self.answer.files[row])
