"""The Compare tab's evaluation report: the recommendation, the metrics table and bar charts (quality metrics,
latency), and beside them the per-query and significance tables, all filled from one EvalReport."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import (
    QHBoxLayout, QHeaderView, QLabel, QPushButton, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from services.evaluation.metrics import PRIMARY
from services.evaluation.report import BASELINE, COLUMNS, EvalReport, Recommendation
from ui.compare_rankings import NOT_RELEVANT_COLOR, RELEVANT_COLOR

BAR_COLORS = ["#2f7bd8", "#2e9d57", "#e0a030", "#8e5bd8", "#d1483f"]
QUESTION_MIN_WIDTH = 260  # per-query table: the question column never shrinks below this (it scrolls instead)
SHORT_NAMES = {"keyword-boost": "kw-boost", "heuristic": "heurist.", "metadata": "meta", "bug-report": "bug-rep",
               "cross-encoder": "x-encoder"}


def legend_html(labels: list[str]) -> str:
    """A chart's legend as a line of coloured squares and names (the colours _grouped_bars uses)."""
    return "&nbsp;&nbsp;".join(f"<span style='color:{BAR_COLORS[i % len(BAR_COLORS)]}'>■</span>&nbsp;{label}"
                               for i, label in enumerate(labels))


def short_name(name: str) -> str:
    """A strategy's name short enough for a chart's axis, where eight sit side by side."""
    return SHORT_NAMES.get(name, name if len(name) <= 9 else name[:8] + "…")


class NumberItem(QTableWidgetItem):
    """A table cell that sorts by its number, not its text."""

    def __init__(self, value: float, text: str) -> None:
        super().__init__(text)
        self.value = value

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


class ReportPanel(QSplitter):
    """The Metrics tab: the recommendation and its button over the metrics table, the charts below. It also
    fills per_query and significance, the tables of the two tabs beside it."""

    query_opened = Signal(str)  # a per-query row was clicked: open this question in Explore

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.workspace = ""  # the use button shows only with a workspace open
        self.report: EvalReport | None = None
        self.recommended: Recommendation | None = None
        self.note = ""  # when the report on screen was made, and on which index
        self.addWidget(self._metrics_box())
        self.addWidget(self._charts())
        self.per_query = self._per_query_table()
        self.significance = self._significance_table()

    # ------------------------------------------------------------------ layout
    def _recommendation_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.recommendation = QLabel("")
        self.recommendation.setObjectName("recommendation")
        self.recommendation.setWordWrap(True)
        self.use_button = QPushButton("Use for this workspace")
        self.use_button.hide()
        row.addWidget(self.recommendation, 1)
        row.addWidget(self.use_button)
        return row

    def _metrics_box(self) -> QWidget:
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(self._recommendation_row())
        self.metrics = QTableWidget(0, 0)
        self.metrics.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.metrics.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.metrics.verticalHeader().setDefaultSectionSize(self.metrics.fontMetrics().lineSpacing() + 8)  # compact
        top_layout.addWidget(self.metrics, 1)
        return top

    def _charts(self) -> QSplitter:
        charts = QSplitter(Qt.Orientation.Horizontal)
        self.quality_plot = pg.PlotWidget(title="Quality per strategy", background=None)
        self.latency_plot = pg.PlotWidget(title="Latency per strategy (ms)", background=None)
        # the legends are labels above the charts, never drawn over a bar
        self.quality_legend = QLabel(legend_html([label for _, label in COLUMNS]))
        self.latency_legend = QLabel(legend_html(["p50", "p95"]))
        for plot, legend in ((self.quality_plot, self.quality_legend), (self.latency_plot, self.latency_legend)):
            legend.setObjectName("chartLegend")
            box = QWidget()
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            box_layout.setSpacing(0)
            box_layout.addWidget(legend)
            box_layout.addWidget(plot, 1)
            charts.addWidget(box)
        charts.setStretchFactor(0, 1)
        charts.setStretchFactor(1, 1)  # the latency axis needs the room for eight names too
        charts.setMinimumHeight(120)
        return charts

    def _per_query_table(self) -> QTableWidget:
        table = QTableWidget(0, 0)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        table.setToolTip("MRR@10 of `none` and each strategy's change per query; click a query to open it in "
                         "Explore")
        table.cellClicked.connect(self._open_query_row)
        return table

    @staticmethod
    def _significance_table() -> QTableWidget:
        table = QTableWidget(0, 0)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setToolTip("p-value of a paired t-test on MRR@10 between two strategies "
                         "(below 0.05: the difference is unlikely to be chance)")
        return table

    # ------------------------------------------------------------------ display
    def show_report(self, report: EvalReport, note: str = "") -> None:
        """The report in every table and chart; `note` (when and on which index it was made) follows the
        recommendation."""
        self.report, self.note = report, note
        self.recommended = report.recommend() if report.strategies else None
        self._fill_metrics_table(report)
        self._show_recommendation(self.recommended)
        self._fill_per_query(report)
        self._fill_significance(report)
        self._plot(report)

    def clear(self) -> None:
        """No report: no recommendation, an empty metrics table."""
        self.report, self.recommended, self.note = None, None, ""
        self._show_recommendation(None)
        self.metrics.setRowCount(0)

    def _show_recommendation(self, best: Recommendation | None) -> None:
        if best is None:
            self.recommendation.setText("")
            self.use_button.hide()
            return
        self.recommendation.setText(f"★ Recommended for this workspace: {best.strategy}. Why: {best.reason}"
                                    + (f" ({self.note})" if self.note else ""))
        self.recommendation.setToolTip(self.recommendation.text())
        self.use_button.setText(f"Use {best.strategy} for this workspace")
        self.use_button.setVisible(bool(self.workspace))

    def _fill_metrics_table(self, report: EvalReport) -> None:
        head = [label for _, label in COLUMNS] + ["p vs none", "W/T/L", "p50 ms", "p95 ms"]
        names = list(report.strategies)
        best = report.recommend().strategy if names else ""
        table = self.metrics
        table.clear()
        table.clearSpans()
        notes = {**{n: f"not run: {r}" for n, r in report.skipped.items()},
                 **{n: f"failed: {e}" for n, e in report.failed.items()}}
        table.setRowCount(len(names) + len(notes))
        table.setColumnCount(len(head))
        table.setHorizontalHeaderLabels(head)
        table.setVerticalHeaderLabels([f"★ {n}" if n == best else n for n in names] + list(notes))
        bold = QFont(table.font())
        bold.setBold(True)
        for row, name in enumerate(names):
            strategy = report.strategies[name]
            p = report.p_value(name)
            cells = [self._metric_cell(report, name, key) for key, _ in COLUMNS] + [
                QTableWidgetItem("" if name == BASELINE or p is None else f"{p:.3g}"),
                QTableWidgetItem("" if name == BASELINE or not report.per_query
                                 else "/".join(map(str, report.wins_losses(name)))),
                QTableWidgetItem(f"{strategy.latency_ms_p50:.0f}"), QTableWidgetItem(f"{strategy.latency_ms_p95:.0f}")]
            for col, cell in enumerate(cells):
                if name == best:
                    cell.setFont(bold)
                table.setItem(row, col, cell)
        table.resizeColumnsToContents()  # before the spanned "not run" rows, which must not widen a column
        for row, note in enumerate(notes.values(), len(names)):
            table.setItem(row, 0, QTableWidgetItem(note))
            table.setSpan(row, 0, 1, len(head))  # a long reason must not widen the first column
        rows = table.verticalHeader().defaultSectionSize() * min(table.rowCount(), 9)  # 8 strategies and a note
        table.setMinimumHeight(rows + table.horizontalHeader().sizeHint().height() + 2 * table.frameWidth() + 2)

    def _fill_per_query(self, report: EvalReport) -> None:
        """One row per query: `none`'s MRR@10, then each strategy's change; sortable; click to explore."""
        table = self.per_query
        table.setSortingEnabled(False)
        table.clear()
        others = [n for n in report.per_query if n != BASELINE]
        base = report.per_query.get(BASELINE, {})
        scored = base or next(iter(report.per_query.values()), {})
        ids = [q for q in report.query_texts if q in scored] or list(scored)
        table.setColumnCount(2 + len(others))
        table.setRowCount(len(ids))
        wins = {n: report.wins_losses(n) for n in others}
        table.setHorizontalHeaderLabels(["Query", f"none\n{PRIMARY.upper()}"]  # two lines: narrow columns
                                        + [f"{n}\nΔ {wins[n][0]}▲ {wins[n][2]}▼" for n in others])
        for row, qid in enumerate(ids):
            text = report.query_texts.get(qid, qid)
            query = QTableWidgetItem(" ".join(text.split())[:200])
            query.setData(Qt.ItemDataRole.UserRole, text)
            query.setToolTip(text[:1000])
            table.setItem(row, 0, query)
            table.setItem(row, 1, NumberItem(base.get(qid, 0.0), f"{base.get(qid, 0.0):.3f}"))
            for col, name in enumerate(others, 2):
                change = report.per_query[name].get(qid, 0.0) - base.get(qid, 0.0)
                cell = NumberItem(change, "=" if abs(change) < 1e-9 else f"{change:+.3f}")
                if abs(change) >= 1e-9:
                    cell.setForeground(QBrush(RELEVANT_COLOR if change > 0 else NOT_RELEVANT_COLOR))
                table.setItem(row, col, cell)
        table.setSortingEnabled(True)
        header = table.horizontalHeader()
        for col in range(1, table.columnCount()):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)  # the question keeps a readable width
        numbers = sum(max(table.sizeHintForColumn(c), header.sectionSizeHint(c))
                      for c in range(1, table.columnCount()))
        table.setColumnWidth(0, max(QUESTION_MIN_WIDTH, table.viewport().width() - numbers - 4))

    def _open_query_row(self, row: int, _column: int) -> None:
        item = self.per_query.item(row, 0)
        if item is not None:
            self.query_opened.emit(item.data(Qt.ItemDataRole.UserRole))

    def _fill_significance(self, report: EvalReport) -> None:
        names = list(report.strategies)
        table = self.significance
        table.clear()
        table.setRowCount(len(names))
        table.setColumnCount(len(names))
        table.setHorizontalHeaderLabels(names)
        table.setVerticalHeaderLabels(names)
        for r, a in enumerate(names):
            for c, b in enumerate(names):
                p = report.p_value(a, b) if a != b else None
                cell = QTableWidgetItem("" if p is None else f"{p:.3g}")
                if p is not None and p < 0.05:
                    cell.setForeground(QBrush(RELEVANT_COLOR))
                table.setItem(r, c, cell)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

    @staticmethod
    def _metric_cell(report: EvalReport, name: str, key: str) -> QTableWidgetItem:
        value = report.strategies[name].metrics[key]
        change = report.delta(name, key)
        if name == BASELINE or change is None:
            return QTableWidgetItem(f"{value:.3f}")
        cell = QTableWidgetItem(f"{value:.3f} ({change:+.3f})")
        if abs(change) >= 0.0005:
            cell.setForeground(QBrush(RELEVANT_COLOR if change > 0 else NOT_RELEVANT_COLOR))
        return cell

    # ------------------------------------------------------------------ charts
    def _plot(self, report: EvalReport) -> None:
        names = list(report.strategies)
        ticks = [[(i, short_name(name)) for i, name in enumerate(names)]]
        self._grouped_bars(self.quality_plot, names, [
            (label, [report.strategies[n].metrics[key] for n in names]) for key, label in COLUMNS])
        self._grouped_bars(self.latency_plot, names, [
            ("p50", [report.strategies[n].latency_ms_p50 for n in names]),
            ("p95", [report.strategies[n].latency_ms_p95 for n in names])])
        for plot in (self.quality_plot, self.latency_plot):
            plot.getAxis("bottom").setTicks(ticks)
        self.quality_plot.setYRange(0, 1.0)

    @staticmethod
    def _grouped_bars(plot: pg.PlotWidget, names: list[str], series: list[tuple[str, list[float]]]) -> None:
        plot.clear()
        width = 0.8 / len(series)
        for i, (label, values) in enumerate(series):
            xs = [x - 0.4 + width * (i + 0.5) for x in range(len(names))]
            plot.addItem(pg.BarGraphItem(x=xs, height=values, width=width, brush=BAR_COLORS[i % len(BAR_COLORS)],
                                         name=label))

    @staticmethod
    def bar_items(plot: pg.PlotWidget) -> list[pg.BarGraphItem]:
        """The bars drawn on a chart."""
        return [item for item in plot.getPlotItem().items if isinstance(item, pg.BarGraphItem)]
