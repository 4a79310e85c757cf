"""The two rankings side by side, with selection kept in step by chunk id."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, QRect, Qt, Signal
from PySide6.QtGui import QAction, QColor, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView, QHeaderView, QLabel, QMenu, QSplitter, QStyledItemDelegate, QTableView, QVBoxLayout,
    QWidget,
)

from services.core.models import QueryResult, ResultChunk, StrategyInfo
from ui.actions import window_action
from ui.ranking_model import NEW_COLOR, ORIGINAL, RERANKED, SCORE_COLUMNS, RankingModel, ScoreBarRole
from ui.viewmodels.ranking import elide_name, fit_location, location_text
from ui.viewmodels.results import same_chunk_row, searched_text
from ui.why_view import ElidedLabel, WhyView


class ElideDelegate(QStyledItemDelegate):
    """Elides on one side: Location keeps its end (file name and lines) visible."""

    def __init__(self, mode: Qt.TextElideMode, parent=None) -> None:
        super().__init__(parent)
        self.mode = mode

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt API)
        super().initStyleOption(option, index)
        option.textElideMode = self.mode


class FittingDelegate(QStyledItemDelegate):
    """A cell's text made to fit its width by `fit(text, fits)` (the shortening each column wants)."""

    elide: Qt.TextElideMode | None = None  # what Qt does with a text still too long (None: the view's mode)

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt API)
        super().initStyleOption(option, index)
        room = option.rect.width() - 12
        metrics = option.fontMetrics
        option.text = self.fit(option.text, lambda t: metrics.horizontalAdvance(t) <= room)
        if self.elide is not None:
            option.textElideMode = self.elide

    def fit(self, text: str, fits) -> str:
        return text


class NameDelegate(FittingDelegate):
    """Qualified names cut in the middle, so the class stays ("FixtureManager.…factories")."""

    def fit(self, text: str, fits) -> str:
        return elide_name(text, fits)


class LocationDelegate(FittingDelegate):
    """Location as "…/store.py:39-45" when the folders do not fit, then "store.py:39-45", then "store.py"."""

    elide = Qt.TextElideMode.ElideRight

    def fit(self, text: str, fits) -> str:
        return fit_location(text, fits)


class ScoreBarDelegate(QStyledItemDelegate):
    """A score as a bar relative to the best score in the same list (scores of different strategies
    live on different scales; bars are comparable), with the raw value as text."""

    def paint(self, painter, option, index) -> None:
        fraction = index.data(ScoreBarRole)
        if fraction is not None:
            rect = option.rect.adjusted(2, 4, -2, -4)
            colour = QColor(NEW_COLOR)
            colour.setAlpha(60)
            painter.fillRect(QRect(rect.left(), rect.top(), int(rect.width() * fraction), rect.height()), colour)
        super().paint(painter, option, index)


class ColumnFitter(QObject):
    """Keeps Symbol and Location readable in a narrow table: Kind goes first, then the other list's
    score column (its value stays in the tooltips), then # and Δ narrow."""

    MIN_TEXT = 140  # pixels Symbol needs to show a name

    def __init__(self, table: QTableView, model: RankingModel) -> None:
        super().__init__(table)
        self.table, self.model = table, model
        digit = table.fontMetrics().horizontalAdvance("0")
        self.wide = {title: digit * width + 16 for title, width in FIXED_COLUMNS}
        self.narrow = {**self.wide, "#": digit * 2 + 10, "Δ": digit * 3 + 10}
        table.viewport().installEventFilter(self)
        model.modelReset.connect(lambda: self.fit(table.viewport().width()))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Resize:
            self.fit(event.size().width())
        return False

    def fit(self, width: int) -> None:
        columns = [t for t in self.wide if t in self.model.columns]
        other_score = "Reranked" if self.model.side == ORIGINAL else "Vector"
        steps = [(set(), self.wide), ({"Kind"}, self.wide), ({"Kind", other_score}, self.wide),
                 ({"Kind", other_score}, self.narrow)]
        short, full = self.location_needs()
        for hidden, sizes in steps:
            left = width - sum(sizes[t] for t in columns if t not in hidden)
            if left >= self.MIN_TEXT + short:
                break
        for title in columns:
            column = self.model.column_of(title)
            self.table.setColumnHidden(column, title in hidden)
            self.table.setColumnWidth(column, sizes[title])
        spare = left - short - self.symbol_needs()  # what the longest name leaves beside "file:line"
        location = short + max(0, min(full - short, spare))
        location = min(location, left - self.MIN_TEXT)
        if location < short:  # not even "file:line" fits: Symbol gives up to 40 px of its minimum for it
            location = min(short, left - self.MIN_TEXT + 40)
        location = max(60, location)
        self.table.setColumnWidth(self.model.column_of("Location"), location)

    def symbol_needs(self) -> int:
        """Pixels for the longest name in Symbol."""
        metrics = self.table.fontMetrics()
        column = self.model.column_of("Symbol")
        names = [self.model.index(row, column).data() or "" for row in range(self.model.rowCount())]
        return max((metrics.horizontalAdvance(n) for n in names), default=0) + 16

    def location_needs(self) -> tuple[int, int]:
        """Pixels for the longest file name with its first line, and for the longest "…/file:lines" (Symbol
        stretches over what Location leaves)."""
        metrics = self.table.fontMetrics()
        locations = [location_text(self.model.item(row)) for row in range(self.model.rowCount())]
        names = [f"{c.path.rsplit('/', 1)[-1]}:{c.start_line}" for c in
                 (self.model.item(row).chunk for row in range(self.model.rowCount()))]
        short = max((metrics.horizontalAdvance(n) for n in names), default=0) + 16
        full = max((metrics.horizontalAdvance(fit_location(loc, lambda t: "/" not in t[2:])) for loc in locations),
                   default=0) + 16
        return short, full


FIXED_COLUMNS = (("#", 3), ("Δ", 4), ("Kind", 9), ("Vector", 8), ("Reranked", 9))  # title, width in digits (Vector reads Keyword too)


def make_table(model: RankingModel) -> QTableView:
    table = QTableView()
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.setShowGrid(False)
    table.setWordWrap(False)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.verticalHeader().hide()
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
    table.setTabKeyNavigation(False)
    header = table.horizontalHeader()
    header.setHighlightSections(False)
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    digit = table.fontMetrics().horizontalAdvance("0")
    for title, width in FIXED_COLUMNS:
        if title in model.columns:
            column = model.column_of(title)
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
            table.setColumnWidth(column, digit * width + 16)
    header.setSectionResizeMode(model.column_of("Symbol"), QHeaderView.ResizeMode.Stretch)
    header.setSectionResizeMode(model.column_of("Location"), QHeaderView.ResizeMode.Fixed)  # ColumnFitter sizes it
    table.setItemDelegateForColumn(model.column_of("Location"), LocationDelegate(table))
    table.setItemDelegateForColumn(model.column_of("Symbol"), NameDelegate(table))
    for title in SCORE_COLUMNS:
        table.setItemDelegateForColumn(model.column_of(title), ScoreBarDelegate(table))
    header.setMinimumSectionSize(digit * 2 + 8)
    table.column_fitter = ColumnFitter(table, model)
    return table


class RankingPane(QWidget):
    def __init__(self, title: str, model: RankingModel, parent=None) -> None:
        super().__init__(parent)
        self.title = ElidedLabel(title)  # a long fallback reason must not squeeze the other pane
        self.title.setObjectName("paneTitle")
        self.model = model
        self.table = make_table(model)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)


class ResultsView(QWidget):
    """Left: the vector ranking (QueryResult.original). Right: the reranked ranking (QueryResult.results)."""

    chunk_selected = Signal(object)  # ResultChunk or None
    label_requested = Signal(object, bool)  # ResultChunk, relevant?
    reveal_requested = Signal(object)  # ResultChunk: show its file in the file manager
    more_hits_requested = Signal(object)  # ResultChunk: the question again, within its file
    show_requested = Signal()  # Ctrl+1 / Ctrl+2: the window brings the Explore tab forward

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.original_model = RankingModel(ORIGINAL, self)
        self.reranked_model = RankingModel(RERANKED, self)
        self.left = RankingPane("Vector ranking", self.original_model)
        self.right = RankingPane("Reranked", self.reranked_model)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.left)
        self.splitter.addWidget(self.right)
        self.splitter.setChildrenCollapsible(False)
        self.legend = ElidedLabel("", lines=2)  # two lines at most: the why rows keep their room
        self.legend.setObjectName("scoreLegend")
        self.why = WhyView()
        self.explain = explain = QWidget()  # the legend and the why view, hidden while the code takes the room
        explain_layout = QVBoxLayout(explain)
        explain_layout.setContentsMargins(0, 0, 0, 0)
        explain_layout.addWidget(self.legend)
        explain_layout.addWidget(self.why, 1)
        self.vertical = QSplitter(Qt.Orientation.Vertical)
        self.vertical.addWidget(self.splitter)
        self.vertical.addWidget(explain)
        self.vertical.setStretchFactor(0, 3)
        self.vertical.setStretchFactor(1, 2)
        self.vertical.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.vertical)
        self._syncing = False
        self.result: QueryResult | None = None
        self.strategy_labels: dict[str, str] = {}
        self.strategy_infos: dict[str, StrategyInfo] = {}  # for each strategy's score legend
        self.chunk_selected.connect(self._explain)
        for table, other in ((self.left.table, self.right.table), (self.right.table, self.left.table)):
            table.selectionModel().currentRowChanged.connect(
                lambda current, _prev, t=table, o=other: self._row_changed(t, o, current))
            table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            table.customContextMenuRequested.connect(lambda pos, t=table: self._label_menu(t, pos))
        self._build_actions()

    def _build_actions(self) -> None:
        """The Results menu's Ctrl+1 / Ctrl+2, named in the tables' tooltips."""
        self.vector_action = window_action(self, "Go to the vector ranking", "Ctrl+1",
                                           lambda: self.focus_ranking(self.original_table))
        self.reranked_action = window_action(self, "Go to the reranked ranking", "Ctrl+2",
                                             lambda: self.focus_ranking(self.reranked_table))
        self.reranked_table.setToolTip("Reranked ranking (Ctrl+2): Enter or double-click opens the "
                                       "result in your editor (Ctrl+E)")
        self.original_table.setToolTip("Vector ranking (Ctrl+1): Enter or double-click opens the "
                                       "result in your editor (Ctrl+E)")

    def focus_ranking(self, table: QTableView) -> None:
        """Give a ranking the keyboard, its first row selected when none is."""
        self.show_requested.emit()
        table.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if table.model().rowCount() and not table.selectionModel().hasSelection():
            table.selectRow(0)

    @property
    def original_table(self) -> QTableView:
        return self.left.table

    @property
    def reranked_table(self) -> QTableView:
        return self.right.table

    def set_strategies(self, infos: list[StrategyInfo]) -> None:
        """Labels for pane titles and legends for the score scales."""
        self.strategy_labels = {info.name: info.label or info.name for info in infos}
        self.strategy_infos = {info.name: info for info in infos}

    def set_result(self, result: QueryResult | None) -> None:
        self.result = result
        info = self.strategy_infos.get(result.strategy) if result else None
        for model in (self.original_model, self.reranked_model):
            model.legend = info.legend if info else ""
        self._syncing = True
        try:
            self.original_model.set_result(result)
            self.reranked_model.set_result(result)
        finally:
            self._syncing = False
        label = self.strategy_labels.get(result.strategy, result.strategy) if result else ""
        if result is None:
            self.right.title.setText("Reranked")
        elif result.reranked:
            self.right.title.setText(f"Reranked · {label} · from {result.pool_size} candidates"
                                     if result.pool_size else f"Reranked · {label}")
        elif result.fallback_reason:
            self.right.title.setText(f"Not reranked · {result.fallback_reason}")
        else:
            self.right.title.setText(f"Reranked · {label} (order unchanged)")
        side = "Keyword ranking" if result is not None and result.original_ranking == "keyword" else "Vector ranking"
        self.left.title.setText(side if result is None else f"{side} · {searched_text(result)}")
        self.legend.setText(self._legend_text(result, info))
        self.chunk_selected.emit(None)

    @staticmethod
    def _legend_text(result: QueryResult | None, info: StrategyInfo | None) -> str:
        if result is None:
            return ""
        reranked = info.legend if info and info.legend else ""
        if result.fallback_reason:
            reranked = "fell back to the vector ranking, so cosine similarity 0–1."
        scores = [r.score for r in result.results]
        here = f"this question {min(scores):.3f} to {max(scores):.3f}; " if scores else ""
        notes = dict.fromkeys(note for note in (result.strategy_note, result.reading_note) if note)  # a name's: one
        reading = " ".join(note[:1].upper() + note[1:] + "." for note in notes)
        original = ("Keyword: BM25 over the best, 0–1." if result.original_ranking == "keyword"
                    else "Vector: cosine similarity 0–1.")
        parts = (reading, f"Reranked: {here}{reranked}" if reranked else "", original,
                 "Bars: relative to the best in each list.")
        return "  ".join(part for part in parts if part)

    def _explain(self, item: ResultChunk | None) -> None:
        """The why view follows the selection; an original-side row is explained by its reranked twin."""
        label = self.strategy_labels.get(self.result.strategy, self.result.strategy) if self.result else ""
        if self.result is not None and self.result.fallback_reason:
            label = f"the vector ranking ({label} fell back)"
        if item is None or self.result is None:
            self.why.set_item(None)
            return
        reranked = next((r for r in self.result.results if r.chunk.id == item.chunk.id), None)
        if reranked is None:
            self.why.set_item(None)
            self.why.heading.setText(f"{item.chunk.qualified_name or item.chunk.path} is #{item.rank} in the vector "
                                     f"ranking but not in the reranked top {len(self.result.results)}.")
            return
        self.why.set_item(reranked, label)

    def select_chunk(self, chunk) -> bool:
        """Select the row showing `chunk` (or its definition after an edit), reranked side first, without
        taking the focus; False when neither list has it."""
        for table in (self.reranked_table, self.original_table):
            model = ranking_model(table)
            row = same_chunk_row(chunk, [model.item(n) for n in range(model.rowCount())])
            if row is not None:
                table.selectRow(row)
                table.scrollTo(model.index(row, 0))
                return True
        return False

    def select_first(self) -> None:
        table = self.reranked_table if self.reranked_model.rowCount() else self.original_table
        if table.model().rowCount():
            table.setFocus()
            table.selectRow(0)

    def label_actions(self, table: QTableView, row: int) -> list[QAction]:
        """'Mark relevant' / 'Mark not relevant' for a row (labels feed evaluation on your own code)."""
        item = ranking_model(table).item(row)
        actions = []
        for text, relevant in (("Mark relevant for this question", True),
                               ("Mark not relevant for this question", False)):
            action = QAction(text, table)
            action.triggered.connect(lambda _=False, i=item, r=relevant: self.label_requested.emit(i, r))
            actions.append(action)
        return actions

    def row_actions(self, table: QTableView, row: int) -> list[QAction]:
        """A result's menu: copy "path:line", reveal its file, more hits in its file, then the labels."""
        item = ranking_model(table).item(row)
        chunk = item.chunk
        entries = [("Copy path:line", lambda: QGuiApplication.clipboard().setText(f"{chunk.path}:{chunk.start_line}")),
                   ("Reveal in folder", lambda: self.reveal_requested.emit(item)),
                   (f"More hits in {chunk.path.rsplit('/', 1)[-1]}", lambda: self.more_hits_requested.emit(item))]
        actions = []
        for text, slot in entries:
            action = QAction(text, table)
            action.triggered.connect(lambda _=False, s=slot: s())
            actions.append(action)
        separator = QAction(table)
        separator.setSeparator(True)
        return actions + [separator] + self.label_actions(table, row)

    def _label_menu(self, table: QTableView, pos) -> None:
        index = table.indexAt(pos)
        if not index.isValid():
            return
        menu = QMenu(table)
        menu.addActions(self.row_actions(table, index.row()))
        menu.exec(table.viewport().mapToGlobal(pos))

    def selected_chunk(self) -> ResultChunk | None:
        for table in (self.reranked_table, self.original_table):
            index = table.selectionModel().currentIndex()
            if index.isValid() and table.selectionModel().isRowSelected(index.row()):
                return ranking_model(table).item(index.row())
        return None

    def _row_changed(self, table: QTableView, other: QTableView, current) -> None:
        if self._syncing:
            return
        if not current.isValid():
            return
        item = ranking_model(table).item(current.row())
        self._syncing = True
        try:
            row = other.model().row_of(item.chunk.id)
            selection = other.selectionModel()
            if row is None:
                selection.clearSelection()
                selection.setCurrentIndex(other.model().index(-1, -1),
                                          QItemSelectionModel.SelectionFlag.NoUpdate)
            else:
                index = other.model().index(row, 0)
                selection.setCurrentIndex(
                    index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                    | QItemSelectionModel.SelectionFlag.Rows)
                other.scrollTo(index)
        finally:
            self._syncing = False
        self.chunk_selected.emit(item)


def ranking_model(table: QTableView) -> RankingModel:
    """The rankings' model of one of the two tables."""
    return cast(RankingModel, table.model())
