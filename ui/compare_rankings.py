"""The Compare tab's rankings: one column per strategy (rows = rank), which strategy fell back and why, and the
selected result's why rows beside its code.

Right-click a ranked result to label it relevant / not relevant: the engine keeps the label (Engine.record_label),
so a remote engine's labels stay on its server; the cells are coloured with the labels of the question on screen.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QMenu, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from services.core.models import QueryResult, ResultChunk
from ui.async_runner import AsyncRunner, describe_error
from ui.code_view import CodeView
from ui.viewmodels.compare import CompareViewModel, grade_of
from ui.viewmodels.ranking import location_text, movement, symbol_text, why_summary
from ui.why_view import ElidedLabel, WhyView

RELEVANT_COLOR = QColor("#2e9d57")
NOT_RELEVANT_COLOR = QColor("#d1483f")
LABELS_KEY = "compare-labels"
ResultRole = Qt.ItemDataRole.UserRole + 11


def fallback_text(name: str, result: QueryResult) -> str:
    """"tuned fell back to none: needs 5 labels…" (its results are the vector ranking, `none`'s); "" when it ran."""
    return f"{name} fell back to none: {result.fallback_reason}" if result.fallback_reason else ""


def not_run_text(skipped: dict[str, str]) -> str:
    """"not run: cross-encoder (no weights on this machine), llm (no endpoint)"; "" when every strategy ran."""
    return "not run: " + ", ".join(f"{name} ({why})" for name, why in skipped.items()) if skipped else ""


def cell_text(item: ResultChunk) -> str:
    """Name and file name (folders are in the tooltip): the part that tells results apart stays visible."""
    chunk = item.chunk
    name = chunk.qualified_name or chunk.symbol
    file = chunk.path.rsplit("/", 1)[-1]
    return f"{name}  ·  {file}" if name else symbol_text(item)


def ranked_cell_text(item: ResultChunk, reranked: bool) -> str:
    """Two lines, each short enough for a narrow column: the name, then the score and, for a reranked
    column, the movement, then the file name, so a column too narrow cuts the file's name, never the score
    or the movement (the whole path is in the tooltip)."""
    chunk = item.chunk
    name = chunk.qualified_name or chunk.symbol or symbol_text(item)
    file = chunk.path.rsplit("/", 1)[-1]
    move = f" {movement(item)[0]}" if reranked else ""
    return f"{name}\n{item.score:.3f}{move} · {file}"


class RankingsPanel(QSplitter):
    """The rankings over what tells them apart: which strategy fell back and why, then the selected
    result's why rows beside its code."""

    message = Signal(str)  # what became of a label: "Labelled … as relevant", "Label not saved: …"

    def __init__(self, model: CompareViewModel | None = None, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.model = model  # None without an engine: nothing is labelled
        self.workspace = ""
        self.results: dict[str, QueryResult] = {}
        self.skipped: dict[str, str] = {}  # the strategies not run for the question on screen, and why
        self.grades: dict[tuple[str, str], int] = {}  # the engine's labels for the question on screen
        self.runner = AsyncRunner(self)
        self.rankings = self._rankings_table()
        self._build()

    def _rankings_table(self) -> QTableWidget:
        table = QTableWidget(0, 0)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._label_menu)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        table.horizontalHeader().setMinimumSectionSize(60)  # every strategy fits in 1024 pixels
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().lineSpacing() * 2 + 8)  # two-line cells
        table.setWordWrap(False)
        table.setSelectionMode(QTableWidget.SelectionMode.MultiSelection)
        table.currentCellChanged.connect(self._select_same_chunk)
        return table

    def _build(self) -> None:
        top = QWidget()
        layout = QVBoxLayout(top)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.rankings, 1)
        self.fallbacks = ElidedLabel("", lines=2)  # each fallback's reason (the headers say "fell back to none")
        self.fallbacks.setObjectName("compareFallbacks")
        layout.addWidget(self.fallbacks)
        self.why = WhyView()
        self.code = CodeView()  # the selected result's code
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self.why)
        lower.addWidget(self.code)
        lower.setChildrenCollapsible(False)
        self.addWidget(top)
        self.addWidget(lower)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        self.setChildrenCollapsible(False)

    def set_workspace(self, workspace: str) -> None:
        self.workspace = workspace
        self.code.set_workspace(workspace)

    # ------------------------------------------------------------------ display
    def show_rankings(self, results: dict[str, QueryResult], skipped: dict[str, str] | None = None) -> None:
        """One column per strategy; row r holds each strategy's rank r+1. A strategy that fell back says so in
        its header, and why in the header's tooltip and the line under the table, with those not run."""
        self.results, self.skipped = results, skipped or {}
        table = self.rankings
        table.clear()
        table.setColumnCount(len(results))
        table.setRowCount(max((len(r.results) for r in results.values()), default=0))
        for col, (name, result) in enumerate(results.items()):
            header = QTableWidgetItem(self._column_title(name, result))
            header.setToolTip(fallback_text(name, result) or f"{name}: its ranking of the question")
            table.setHorizontalHeaderItem(col, header)
            for item in result.results:
                table.setItem(item.rank - 1, col, self._ranking_cell(item, result.reranked))
        notes = [fallback_text(n, r) for n, r in results.items()] + [not_run_text(self.skipped)]
        self.fallbacks.setText("; ".join(note for note in notes if note))
        self.fallbacks.setVisible(bool(self.fallbacks.text()))
        self.why.set_item(None)
        self.code.show_chunk(None)
        self._colour_labels()

    def _select_same_chunk(self, row: int, column: int, *_ignored) -> None:
        """Selecting a result selects the same chunk in every other strategy's column."""
        table = self.rankings
        current = table.item(row, column)
        item: ResultChunk | None = current.data(ResultRole) if current else None
        table.blockSignals(True)
        table.clearSelection()
        for r in range(table.rowCount()):
            for c in range(table.columnCount()):
                other = table.item(r, c)
                if item is not None and other is not None and other.data(ResultRole).chunk.id == item.chunk.id:
                    other.setSelected(True)
        table.blockSignals(False)
        self._preview(column, item)

    def _preview(self, column: int, item: ResultChunk | None) -> None:
        """The selected result's code and why rows, by the strategy of its column."""
        self.code.show_chunk(item)
        if item is None or not 0 <= column < len(self.results):
            self.why.set_item(None)
            return
        name, result = list(self.results.items())[column]
        self.why.set_item(item, f"the vector ranking ({name} fell back)" if result.fallback_reason else name)

    def selected_ranks(self) -> dict[str, int]:
        """{strategy: rank} of the selected chunk in each column that has it."""
        names = list(self.results)
        return {names[cell.column()]: cell.row() + 1 for cell in self.rankings.selectedItems()}

    @staticmethod
    def _column_title(name: str, result: QueryResult) -> str:
        total = result.timings_ms.get("total")
        title = f"{name}\n{total:.0f} ms" if total is not None else name
        return title + ("\nfell back to none" if result.fallback_reason else "")

    @staticmethod
    def _ranking_cell(item: ResultChunk, reranked: bool = False) -> QTableWidgetItem:
        cell = QTableWidgetItem(ranked_cell_text(item, reranked))
        was = "new (keyword match)" if item.original_rank is None else f"vector rank {item.original_rank}"
        why = why_summary(item) if reranked and item.signals else ""
        cell.setToolTip(f"{location_text(item)}\n"
                        f"score {item.score:.3f}, {was}" + (f"\nwhy: {why}" if why else ""))
        cell.setData(ResultRole, item)
        return cell

    # ------------------------------------------------------------------ labels
    def _label_menu(self, pos) -> None:
        cell = self.rankings.itemAt(pos)
        if cell is None or cell.data(ResultRole) is None:
            return
        menu = QMenu(self)
        menu.addAction("Mark relevant", lambda: self.label_cell(cell.row(), cell.column(), True))
        menu.addAction("Mark not relevant", lambda: self.label_cell(cell.row(), cell.column(), False))
        menu.exec(self.rankings.viewport().mapToGlobal(pos))

    def label_cell(self, row: int, column: int, relevant: bool) -> asyncio.Task | None:
        """Label the result at (row, column) of the rankings for the current question, through the engine;
        the task ends once the label is stored and the rankings are coloured with it."""
        cell = self.rankings.item(row, column)
        item: ResultChunk | None = cell.data(ResultRole) if cell else None
        question = next(iter(self.results.values())).question if self.results else ""
        if item is None or not question or self.model is None or not self.workspace:
            return None
        verdict = "relevant" if relevant else "not relevant"
        return self.runner.run(self._label(question, item, relevant), key=LABELS_KEY, context="Saving the label",
                               on_result=lambda _: self.message.emit(f"Labelled {cell_text(item)} as {verdict}"),
                               on_error=lambda error: self.message.emit(f"Label not saved: {describe_error(error)}"))

    async def _label(self, question: str, item: ResultChunk, relevant: bool) -> None:
        assert self.model is not None
        await self.model.mark(self.workspace, question, item, relevant)
        self._show_grades(await self.model.grades(self.workspace, question))

    def _colour_labels(self) -> asyncio.Task | None:
        """Fetch the engine's labels for the question on screen and colour the rankings with them."""
        if not self.results or self.model is None or not self.workspace:
            return None
        question = next(iter(self.results.values())).question
        return self.runner.run(self.model.grades(self.workspace, question), key=LABELS_KEY, context="Reading labels",
                               on_result=self._show_grades)

    def _show_grades(self, grades: dict[tuple[str, str], int]) -> None:
        self.grades = grades
        for row in range(self.rankings.rowCount()):
            for col in range(self.rankings.columnCount()):
                self._colour_cell(self.rankings.item(row, col), grades)

    @staticmethod
    def _colour_cell(cell: QTableWidgetItem | None, labels: dict[tuple[str, str], int]) -> None:
        item: ResultChunk | None = cell.data(ResultRole) if cell is not None else None
        if cell is None or item is None:
            return
        grade = grade_of(item, labels)
        if grade is None:
            cell.setBackground(QBrush())
        else:
            colour = QColor(RELEVANT_COLOR if grade > 0 else NOT_RELEVANT_COLOR)
            colour.setAlpha(60)
            cell.setBackground(QBrush(colour))
