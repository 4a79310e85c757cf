"""The two rankings side by side, with selection kept in step by chunk id."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, QRect, Qt, Signal
from PySide6.QtGui import QAction, QBrush, QColor, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView, QApplication, QHeaderView, QLabel, QMenu, QSplitter, QStyle, QStyledItemDelegate,
    QStyleOptionViewItem, QTableView, QVBoxLayout, QWidget,
)

from services.core.models import QueryResult, ResultChunk, StrategyInfo
from ui.actions import RESULTS, Place, window_action
from ui.ranking_model import MUTED_COLOR, NEW_COLOR, ORIGINAL, RERANKED, SCORE_COLUMNS, RankingModel, ScoreBarRole
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
    """A cell's text made to fit its width by `fit(text, fits)` (the shortening each column wants). In a
    table whose rows are stacked (two lines: ColumnFitter), the cell shows `below`'s cell of the same row
    on its second line, quieter (the Location under the name, the movement under the rank, the other
    list's score under this list's)."""

    elide: Qt.TextElideMode | None = None  # what Qt does with a text still too long (None: the view's mode)
    below: str | None = None  # the column shown on the second line when the rows are stacked

    def __init__(self, parent=None, below: str | None = None) -> None:
        super().__init__(parent)
        if below is not None:
            self.below = below

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt API)
        super().initStyleOption(option, index)
        room = option.rect.width() - 12
        metrics = option.fontMetrics
        option.text = self.fit(option.text, lambda t: metrics.horizontalAdvance(t) <= room)
        if self.elide is not None:
            option.textElideMode = self.elide

    def fit(self, text: str, fits) -> str:
        return text

    def fit_below(self, text: str, fits) -> str:
        return text

    def stacked(self) -> bool:
        return bool(getattr(self.parent(), "stacked", False))

    def lines(self, option, index) -> list[str]:
        """The text each line of the cell shows, as painted (fitted to the cell's width)."""
        shown = QStyleOptionViewItem(option)
        self.initStyleOption(shown, index)
        if not self.stacked():
            return [shown.text]
        room = option.rect.width() - 12
        fits = lambda t: shown.fontMetrics.horizontalAdvance(t) <= room  # noqa: E731
        if self.below is None:
            return [shown.text, ""]
        return [shown.text, self.fit_below(str(self.below_index(index).data() or ""), fits)]

    def below_index(self, index):
        return index.siblingAtColumn(index.model().column_of(self.below))

    def paint(self, painter, option, index) -> None:
        if not self.stacked():
            super().paint(painter, option, index)
            return
        first, second = self.lines(option, index)
        shown = QStyleOptionViewItem(option)
        self.initStyleOption(shown, index)
        shown.text = ""
        style = shown.widget.style() if shown.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, shown, painter, shown.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        palette = option.palette
        text_colour = palette.highlightedText().color() if selected else palette.text().color()
        top, bottom = self.halves(option.rect)
        align = Qt.AlignmentFlag(int(index.data(Qt.ItemDataRole.TextAlignmentRole) or Qt.AlignmentFlag.AlignLeft))
        align = (align & ~Qt.AlignmentFlag.AlignVertical_Mask) | Qt.AlignmentFlag.AlignVCenter
        painter.save()
        painter.setFont(shown.font)
        first_colour = index.data(Qt.ItemDataRole.ForegroundRole)
        painter.setPen(text_colour if selected or first_colour is None else QBrush(first_colour).color())
        painter.drawText(top.adjusted(6, 0, -6, 0), align, first)
        if second:
            below = self.below_index(index) if self.below else None
            colour = below.data(Qt.ItemDataRole.ForegroundRole) if below is not None else None
            painter.setFont(below.data(Qt.ItemDataRole.FontRole) or shown.font if below is not None else shown.font)
            painter.setPen(text_colour if selected else QBrush(colour).color() if colour is not None else MUTED_COLOR)
            painter.drawText(bottom.adjusted(6, 0, -6, 0), align, second)
        painter.restore()

    @staticmethod
    def halves(rect: QRect) -> tuple[QRect, QRect]:
        half = rect.height() // 2
        return QRect(rect.left(), rect.top() + 2, rect.width(), half - 2), \
            QRect(rect.left(), rect.top() + half, rect.width(), rect.height() - half - 2)


class NameDelegate(FittingDelegate):
    """Qualified names cut in the middle, so the class stays ("FixtureManager.…factories"); stacked, the
    location under the name."""

    below = None

    def fit(self, text: str, fits) -> str:
        return elide_name(text, fits)

    def fit_below(self, text: str, fits) -> str:
        return fit_location(text, fits)


class LocationDelegate(FittingDelegate):
    """Location as "…/store.py:39-45" when the folders do not fit, then "store.py:39-45", then "store.py"."""

    elide = Qt.TextElideMode.ElideRight

    def fit(self, text: str, fits) -> str:
        return fit_location(text, fits)


class ScoreBarDelegate(FittingDelegate):
    """A score as a bar relative to the best score in the same list (scores of different strategies
    live on different scales; bars are comparable), with the raw value as text; stacked, the other list's
    score under it."""

    def paint(self, painter, option, index) -> None:
        fraction = index.data(ScoreBarRole)
        if fraction is not None:
            rect = self.halves(option.rect)[0] if self.stacked() else option.rect.adjusted(0, 4, 0, -4)
            rect = rect.adjusted(2, 0, -2, 0)
            colour = QColor(NEW_COLOR)
            colour.setAlpha(60)
            painter.fillRect(QRect(rect.left(), rect.top(), int(rect.width() * fraction), rect.height()), colour)
        super().paint(painter, option, index)


class ColumnFitter(QObject):
    """Keeps every ranking row readable: the whole name (or at least NAME_CHARS of it), its file and line,
    both scores and the movement. A wide table has one line per row, Kind the first column to go and #
    and Δ the next to narrow; a table too narrow for that stacks each row on two lines (the rank over its
    movement, the name over its location, this list's score over the other's) and keeps only those columns."""

    NAME_CHARS = 26  # characters of a name a one-line row must have room for, else rows are stacked

    def __init__(self, table: "RankingTable", model: RankingModel) -> None:
        super().__init__(table)
        self.table, self.model = table, model
        digit = table.fontMetrics().horizontalAdvance("0")
        self.wide = {title: digit * width + 16 for title, width in FIXED_COLUMNS}
        self.narrow = {**self.wide, "#": digit * 2 + 10, "Δ": digit * 3 + 10}
        header = table.horizontalHeader().fontMetrics()
        own = "Reranked" if model.side == RERANKED else "Vector"
        score = max(header.horizontalAdvance(t) for t in (own, "Keyword")) + 24  # the header's margins
        self.stacked_sizes = {**self.narrow, "#": digit * 3 + 12, own: max(score, digit * 5 + 16)}
        self.one_line = table.fontMetrics().height() + 8
        self.two_lines = table.fontMetrics().lineSpacing() * 2 + 8
        self.fitting = False
        self.partner: ColumnFitter | None = None  # the other ranking's: both stack their rows, or neither
        table.viewport().installEventFilter(self)
        model.modelReset.connect(lambda: self.fit(table.viewport().width()))

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Resize and event.size().width() != event.oldSize().width():
            self.fit(event.size().width())
        return False

    def fit(self, width: int) -> None:
        if self.fitting:  # the columns' own changes resize the viewport (a scroll bar comes or goes)
            return
        self.fitting = True
        try:
            self._fit(width)
        finally:
            self.fitting = False

    def one_line_plan(self, width: int) -> tuple[set[str], dict[str, int], int] | None:
        """The columns to hide, their sizes and the room left for Symbol and Location when rows of one
        line show every name (or NAME_CHARS of it) at `width`; None when the rows must be stacked."""
        columns = [t for t in self.wide if t in self.model.columns]
        short, _full = self.location_needs()
        name = min(self.symbol_needs(), self.table.fontMetrics().averageCharWidth() * self.NAME_CHARS + 16)
        for hidden, sizes in (({"Kind"}, self.wide), ({"Kind"}, self.narrow)):
            left = width - sum(sizes[t] for t in columns if t not in hidden)
            if left >= name + short:
                return hidden, sizes, left
        return None

    def _fit(self, width: int) -> None:
        """Rows of one line where both rankings can have them, else both stacked (the two read alike)."""
        columns = [t for t in self.wide if t in self.model.columns]
        short, full = self.location_needs()
        name = min(self.symbol_needs(), self.table.fontMetrics().averageCharWidth() * self.NAME_CHARS + 16)
        own = "Reranked" if self.model.side == RERANKED else "Vector"
        plan = self.one_line_plan(width)
        partner = self.partner
        if partner is not None and partner.one_line_plan(partner.table.viewport().width()) is None:
            plan = None
        hidden, sizes, left = plan or ({t for t in ("Kind", "Location", "Δ", "Vector", "Reranked") if t != own},
                                       self.stacked_sizes, 0)
        was = self.table.stacked
        self.table.stacked = plan is None
        rows = self.two_lines if self.table.stacked else self.one_line
        if self.table.verticalHeader().defaultSectionSize() != rows:
            self.table.verticalHeader().setDefaultSectionSize(rows)
        for title in columns:
            column = self.model.column_of(title)
            self.table.setColumnHidden(column, title in hidden)
            self.table.setColumnWidth(column, sizes[title])
        location_column = self.model.column_of("Location")
        self.table.setColumnHidden(location_column, self.table.stacked)
        if partner is not None and was != self.table.stacked:
            partner.refit()
        self.table.viewport().update()
        if self.table.stacked:
            return
        spare = left - short - self.symbol_needs()  # what the longest name leaves beside "file:line"
        location = short + max(0, min(full - short, spare))
        self.table.setColumnWidth(location_column, max(60, min(location, left - name)))

    def refit(self) -> None:
        self.fit(self.table.viewport().width())
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


class RankingTable(QTableView):
    """A ranking's table: its ColumnFitter, and whether its rows are stacked on two lines now."""

    stacked = False
    column_fitter: ColumnFitter


def make_table(model: RankingModel) -> RankingTable:
    table = RankingTable()
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
    table.setItemDelegateForColumn(model.column_of("Symbol"), NameDelegate(table, below="Location"))
    table.setItemDelegateForColumn(model.column_of("#"), FittingDelegate(table, below="Δ" if "Δ" in model.columns
                                                                        else None))
    for title in SCORE_COLUMNS:
        other = next(t for t in SCORE_COLUMNS if t != title)
        table.setItemDelegateForColumn(model.column_of(title), ScoreBarDelegate(table, below=other))
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
        self.left.table.column_fitter.partner = self.right.table.column_fitter
        self.right.table.column_fitter.partner = self.left.table.column_fitter
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
                                           lambda: self.focus_ranking(self.original_table),
                                           place=Place(110, RESULTS, 0, 0))
        self.reranked_action = window_action(self, "Go to the reranked ranking", "Ctrl+2",
                                             lambda: self.focus_ranking(self.reranked_table),
                                             place=Place(120, RESULTS, 0, 1))
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
    def original_table(self) -> RankingTable:
        return self.left.table

    @property
    def reranked_table(self) -> RankingTable:
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


def row_lines(table: QTableView, row: int) -> list[str]:
    """A ranking row as it is painted, each visible cell's lines joined per line ("1  FixtureManager.…  0.598",
    then the second line of a stacked row): what a user reads."""
    model = ranking_model(table)
    cells = []
    for column in range(model.columnCount()):
        if table.isColumnHidden(column):
            continue
        index = model.index(row, column)
        option = QStyleOptionViewItem()
        option.rect = table.visualRect(index)
        option.fontMetrics = table.fontMetrics()
        option.font = table.font()
        delegate = table.itemDelegateForColumn(column)
        lines = delegate.lines(option, index) if isinstance(delegate, FittingDelegate) else [str(index.data() or "")]
        cells.append(lines)
    return ["  ".join(cell[n] for cell in cells if n < len(cell)).strip() for n in range(max(map(len, cells)))]


def shown_name(table: QTableView, row: int) -> str:
    """The Symbol cell's name as painted (cut to its width)."""
    model = ranking_model(table)
    index = model.index(row, model.column_of("Symbol"))
    option = QStyleOptionViewItem()
    option.rect = table.visualRect(index)
    option.fontMetrics = table.fontMetrics()
    option.font = table.font()
    return cast(FittingDelegate, table.itemDelegateForColumn(index.column())).lines(option, index)[0]
