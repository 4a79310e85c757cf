"""The workspace set: tick other workspaces to search with the open one ("also search in"); the
question's results, merged over all of them, each name the workspace it comes from."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QListWidget, QListWidgetItem, QPushButton,
    QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from services.core.models import MultiQueryResult, WorkspaceHit
from ui.code_view import CodeView
from ui.results_view import LocationDelegate, NameDelegate
from ui.viewmodels.workspace_set import hit_row, others, summary_text

EMPTY = "Tick workspaces to search with the open one, then ask a question: one ranking over all of them."


class WorkspaceSetView(QWidget):
    """set_candidates(current, known) lists the workspaces to tick; also() the ticked ones;
    set_result(result) shows a MultiQueryResult; the selected hit is previewed, and Enter or double-click
    opens it (`open_requested`). `changed` fires when the set changes."""

    changed = Signal()
    open_requested = Signal()
    COLUMNS = ["#", "Workspace", "Evidence", "Location", "Symbol"]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.result: MultiQueryResult | None = None
        self.current = ""
        self.candidates = QListWidget()
        self.candidates.setObjectName("workspaceSet")
        self.candidates.setMaximumHeight(110)
        self.candidates.setToolTip("Workspaces searched with the open one (each needs its own index)")
        self.candidates.itemChanged.connect(lambda _item: self.changed.emit())
        self.add_button = QPushButton("Add folder…")
        self.add_button.clicked.connect(self._choose_folder)
        self.title = QLabel(EMPTY)
        self.title.setObjectName("paneTitle")
        self.title.setWordWrap(True)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setToolTip("Enter or double-click opens the result in your editor (Ctrl+E)")
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        header = self.table.horizontalHeader()
        for column in (0, 1, 2):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.setItemDelegateForColumn(3, LocationDelegate(self.table))
        self.table.setItemDelegateForColumn(4, NameDelegate(self.table))
        top = QHBoxLayout()
        top.addWidget(QLabel("Also search in:"), 0, Qt.AlignmentFlag.AlignTop)
        top.addWidget(self.candidates, 1)
        top.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(top)
        layout.addWidget(self.title)
        self.code = CodeView()  # the selected hit, in its own workspace
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.code)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)
        layout.addWidget(self.splitter, 1)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.activated.connect(lambda _index: self.open_requested.emit())

    def set_candidates(self, current: str, known: list[str]) -> None:
        """List `known` workspaces but the open one, keeping what was ticked."""
        ticked = set(self.also())
        self.current = current
        self.candidates.blockSignals(True)
        self.candidates.clear()
        for path in others(current, known):
            self._add(path, path in ticked)
        self.candidates.blockSignals(False)

    def add_workspace(self, path: str, ticked: bool = True) -> None:
        existing = [self.candidates.item(i) for i in range(self.candidates.count())]
        found = next((item for item in existing if item.data(Qt.ItemDataRole.UserRole) == path), None)
        if found is not None:
            found.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        elif others(self.current, [path]):
            self._add(path, ticked)
            self.changed.emit()

    def _add(self, path: str, ticked: bool) -> None:
        item = QListWidgetItem(f"{Path(path).name}  —  {path}")
        item.setData(Qt.ItemDataRole.UserRole, path)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
        self.candidates.addItem(item)

    def _choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Also search in", self.current or str(Path.home()))
        if path:
            self.add_workspace(path)

    def also(self) -> list[str]:
        items = [self.candidates.item(i) for i in range(self.candidates.count())]
        return [i.data(Qt.ItemDataRole.UserRole) for i in items if i.checkState() == Qt.CheckState.Checked]

    def set_result(self, result: MultiQueryResult) -> None:
        self.result = result
        self.title.setText(summary_text(result))
        self.table.setRowCount(0)
        for row, hit in enumerate(result.results):
            self.table.insertRow(row)
            for column, text in enumerate(hit_row(hit)):
                item = QTableWidgetItem(text)
                item.setToolTip(hit.workspace if column == 1 else text)
                self.table.setItem(row, column, item)
        if result.results:
            self.table.selectRow(0)
        else:
            self.code.show_chunk(None)

    def selected(self) -> WorkspaceHit | None:
        rows = self.table.selectionModel().selectedRows()
        return self.result.results[rows[0].row()] if self.result and rows else None

    def _selection_changed(self) -> None:
        hit = self.selected()
        if hit is not None:
            self.code.set_workspace(hit.workspace)
        self.code.show_chunk(hit.result if hit else None)

    def rows(self) -> list[tuple[str, ...]]:
        return [tuple(self.table.item(r, c).text() for c in range(self.table.columnCount()))
                for r in range(self.table.rowCount())]
