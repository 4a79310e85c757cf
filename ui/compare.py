"""Compare view: one question, or a labelled query set, through every available strategy at once.

Rankings appear as columns (one per strategy, rows = rank); a query set gives a metrics table and
bar charts (quality metrics, latency). The evaluation loop lives in services.evaluation.runner; this widget
only starts it on the qasync loop, shows progress, lets the user cancel, and displays the outcome.
Right-click a ranked result to label it relevant / not relevant: the engine keeps the label (Engine.record_label),
so a remote engine's labels stay on its server. The work with the engine is ui.viewmodels.compare's.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QFileDialog, QGridLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMenu, QProgressBar, QPushButton, QSpinBox,
    QSplitter,
    QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from services.core.labelled import LabelledQuery, load_queries
from services.evaluation.formats import Qrels, load_qrels, qrels_from_queries
from services.evaluation.metrics import PRIMARY
from services.evaluation.report import BASELINE, COLUMNS, EvalReport, Recommendation, report_from_text, report_text
from services.evaluation.runner import EvalProgress
from services.core.models import QueryResult, ResultChunk
from ui.async_runner import AsyncRunner, describe_error
from ui.code_view import CodeView
from ui.viewmodels.compare import CompareViewModel, grade_of
from ui.viewmodels.preferences import Preferences
from ui.viewmodels.ranking import location_text, movement, symbol_text, why_summary
from ui.why_view import ElidedLabel, WhyView

log = logging.getLogger(__name__)

RELEVANT_COLOR = QColor("#2e9d57")
NOT_RELEVANT_COLOR = QColor("#d1483f")
BAR_COLORS = ["#2f7bd8", "#2e9d57", "#e0a030", "#8e5bd8", "#d1483f"]
TASK_KEY = "compare"
LABELS_KEY = "compare-labels"
ResultRole = Qt.ItemDataRole.UserRole + 11
QRELS_HELP = ("Optional: a judgements file saying which documents answer each query — a TSV with a header "
              "line, then query_id, doc_id (a path, or path::symbol) and relevance (0 = not relevant). "
              "Cancel to use the relevant results listed in the queries file itself (its \"relevant\" "
              "field, as right-click labels write it).")
QUESTION_MIN_WIDTH = 260  # per-query table: the question column never shrinks below this (it scrolls instead)


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


SHORT_NAMES = {"keyword-boost": "kw-boost", "heuristic": "heurist.", "metadata": "meta", "bug-report": "bug-rep",
               "cross-encoder": "x-encoder"}


def legend_html(labels: list[str]) -> str:
    """A chart's legend as a line of coloured squares and names (the colours _grouped_bars uses)."""
    return "&nbsp;&nbsp;".join(f"<span style='color:{BAR_COLORS[i % len(BAR_COLORS)]}'>■</span>&nbsp;{label}"
                               for i, label in enumerate(labels))


def short_name(name: str) -> str:
    """A strategy's name short enough for a chart's axis, where eight sit side by side."""
    return SHORT_NAMES.get(name, name if len(name) <= 9 else name[:8] + "…")



def evaluation_note(evaluated_at: str, index_version: str) -> str:
    """"evaluated 2026-11-25 15:20 on the index of 7,206 chunks, updated …" (said beside a kept report)."""
    return f"evaluated {evaluated_at} on the index of {index_version}"

class NumberItem(QTableWidgetItem):
    """A table cell that sorts by its number, not its text."""

    def __init__(self, value: float, text: str) -> None:
        super().__init__(text)
        self.value = value

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


class CompareView(QWidget):
    """Side-by-side strategies. API for the main window: set_workspace(path), set_question(text)."""

    finished = Signal(str)  # "question", "query set", "cancelled", "failed"
    stage_changed = Signal(str)  # "querying", "computing" (metrics), "" (idle)
    query_opened = Signal(str)  # a per-query row was clicked: open this question in Explore
    default_strategy_chosen = Signal(str)  # this workspace's default strategy (chosen now or saved before)

    def __init__(self, service=None, parent: QWidget | None = None, preferences: Preferences | None = None) -> None:
        super().__init__(parent)
        self.service = service  # an Engine (services.engine.protocol), or None
        self.model = CompareViewModel(service) if service is not None else None
        self.preferences = preferences  # where each workspace's chosen default strategy is remembered
        self.workspace = ""
        self.grades: dict[tuple[str, str], int] = {}  # the engine's labels for the question on screen
        self.queries: list[LabelledQuery] = []
        self.qrels: Qrels = {}
        self.results: dict[str, QueryResult] = {}
        self.skipped: dict[str, str] = {}  # the strategies not run for the question on screen, and why
        self.report: EvalReport | None = None
        self.report_note = ""  # when the report on screen was made, and on which index
        self.recommended: Recommendation | None = None
        self.runner = AsyncRunner(self)
        self._build()
        self._set_busy(False)

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.addLayout(self._question_row())
        layout.addLayout(self._query_set_row())
        layout.addLayout(self._progress_row())
        self.tabs = QTabWidget()
        self.rankings = self._rankings_table()
        self.tabs.addTab(self._rankings_panel(), "Rankings")
        self.tabs.addTab(self._metrics_panel(), "Metrics")
        self.per_query = self._per_query_table()
        self.tabs.addTab(self.per_query, "Per query")
        self.significance = QTableWidget(0, 0)
        self.significance.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.significance.setToolTip("p-value of a paired t-test on MRR@10 between two strategies "
                                     "(below 0.05: the difference is unlikely to be chance)")
        self.tabs.addTab(self.significance, "Significance")
        layout.addWidget(self.tabs, 1)

    def _question_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.question = QLineEdit()
        self.question.setPlaceholderText("Question to run through every strategy")
        self.question.returnPressed.connect(self.run_question)
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 100)
        self.top_k.setValue(10)
        self.top_k.setPrefix("top ")
        self.run_question_button = QPushButton("Compare")
        self.run_question_button.clicked.connect(self.run_question)
        row.addWidget(self.question, 1)
        row.addWidget(self.top_k)
        row.addWidget(self.run_question_button)
        return row

    def _query_set_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.load_button = QPushButton("Load query set…")
        self.load_button.clicked.connect(self._choose_query_set)
        self.query_set_label = QLabel("No query set")
        self.limit = QSpinBox()
        self.limit.setRange(0, 100_000)
        self.limit.setSpecialValueText("all queries")
        self.limit.setPrefix("first ")
        self.run_set_button = QPushButton("Evaluate")
        self.run_set_button.clicked.connect(self.run_query_set)
        row.addWidget(self.load_button)
        row.addWidget(self.query_set_label, 1)
        row.addWidget(self.limit)
        row.addWidget(self.run_set_button)
        return row

    def _progress_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.progress = QProgressBar()
        self.status = QLabel("")
        self.status.setObjectName("compareStatus")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        row.addWidget(self.progress, 1)
        row.addWidget(self.status, 2)
        row.addWidget(self.cancel_button)
        return row

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

    def _rankings_panel(self) -> QSplitter:
        """The rankings over what tells them apart: which strategy fell back and why, then the selected
        result's why rows beside its code."""
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
        panel = QSplitter(Qt.Orientation.Vertical)
        panel.addWidget(top)
        panel.addWidget(lower)
        panel.setStretchFactor(0, 3)
        panel.setStretchFactor(1, 2)
        panel.setChildrenCollapsible(False)
        return panel

    def _per_query_table(self) -> QTableWidget:
        table = QTableWidget(0, 0)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        table.setToolTip("MRR@10 of `none` and each strategy's change per query; click a query to open it in "
                         "Explore")
        table.cellClicked.connect(self._open_query_row)
        return table

    def _recommendation_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.recommendation = QLabel("")
        self.recommendation.setObjectName("recommendation")
        self.recommendation.setWordWrap(True)
        self.use_button = QPushButton("Use for this workspace")
        self.use_button.clicked.connect(self.use_recommended)
        self.use_button.hide()
        row.addWidget(self.recommendation, 1)
        row.addWidget(self.use_button)
        return row

    def _metrics_panel(self) -> QWidget:
        panel = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addLayout(self._recommendation_row())
        self.metrics = QTableWidget(0, 0)
        self.metrics.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.metrics.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.metrics.verticalHeader().setDefaultSectionSize(self.metrics.fontMetrics().lineSpacing() + 8)  # compact
        top_layout.addWidget(self.metrics, 1)
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
        panel.addWidget(top)
        panel.addWidget(charts)
        return panel

    # ------------------------------------------------------------------ small API
    def set_workspace(self, path: str | Path | None) -> None:
        """Also announces the workspace's default strategy, when one was chosen here before."""
        self.workspace = str(path or "")
        self.code.set_workspace(self.workspace)
        self.results = {}
        self.show_rankings({})
        saved = self.preferences.default_strategy(self.workspace) if self.workspace and self.preferences else ""
        if saved:
            self.default_strategy_chosen.emit(saved)
        self.show_kept_report()

    def show_kept_report(self) -> None:
        """The workspace's last evaluation, with its date and index, as it was left (or nothing)."""
        text = self.preferences.evaluation(self.workspace) if self.workspace and self.preferences else ""
        kept = report_from_text(text) if text else None
        self.report, self.recommended, self.report_note = None, None, ""
        self._show_recommendation(None)
        if kept is None:
            self.metrics.setRowCount(0)
            return
        report, evaluated_at, index_version = kept
        self.report_note = evaluation_note(evaluated_at, index_version)
        self.show_report(report)
        self.status.setText(f"Last evaluation: {self.report_note}")

    def set_question(self, text: str) -> None:
        self.question.setText(text)

    def load_query_set(self, queries_path: str | Path, qrels_path: str | Path | None = None) -> int:
        """Load JSONL queries (+ optional TSV qrels; else their `relevant` field). Returns judged queries."""
        queries = load_queries(queries_path)
        qrels = load_qrels(qrels_path) if qrels_path else qrels_from_queries(queries)
        self.queries = [q for q in queries if any(g > 0 for g in qrels.get(q.id, {}).values())]
        self.qrels = qrels
        self.query_set_label.setText(f"{Path(queries_path).name}: {len(self.queries)} judged queries")
        return len(self.queries)

    def is_running(self) -> bool:
        return self.runner.is_running(TASK_KEY)

    # ------------------------------------------------------------------ runs
    def run_question(self) -> asyncio.Task | None:
        text = self.question.text().strip()
        if not self._ready(text or None, "Type a question first."):
            return None
        return self._start(self._compare_question(text, self.top_k.value()), "question")

    def run_query_set(self) -> asyncio.Task | None:
        if not self._ready(self.queries or None, "Load a query set with judged queries first."):
            return None
        queries = self.queries[:self.limit.value()] if self.limit.value() else self.queries
        return self._start(self._evaluate(queries), "query set")

    def cancel(self) -> None:
        if self.runner.cancel(TASK_KEY):
            self.status.setText("Cancelling…")

    def _ready(self, needed, message: str) -> bool:
        if self.model is None or not self.workspace:
            self.status.setText("Open a workspace first.")
            return False
        if not needed:
            self.status.setText(message)
            return False
        return True

    def _start(self, coro, kind: str) -> asyncio.Task:
        self._set_busy(True)
        self.progress.setValue(0)
        task = self.runner.run(coro, key=TASK_KEY, context="Compare",
                               on_result=lambda _: self._done(kind), on_error=self._failed)
        task.add_done_callback(lambda t: self._cancelled() if t.cancelled() else None)
        return task

    async def _compare_question(self, text: str, top_k: int) -> None:
        assert self.model is not None  # _ready checked it
        names, skipped = await self.model.strategies()
        self.progress.setRange(0, len(names))
        results = {}
        for i, name in enumerate(names):
            self.status.setText(f"Running {name}…")
            results[name] = await self.model.rank(text, self.workspace, name, top_k)
            self.progress.setValue(i + 1)
        self.show_rankings(results, skipped)

    async def _evaluate(self, queries: list[LabelledQuery]) -> None:
        assert self.model is not None  # _ready checked it
        names, skipped = await self.model.strategies()
        self.progress.setRange(0, len(queries) * len(names))
        self.status.setText(f"Evaluating {len(queries)} queries × {len(names)} strategies…")
        report = await self.model.evaluate(queries, self.qrels, self.workspace, names, skipped,
                                           progress=self._progress)
        health = await self.service.health(self.workspace)
        evaluated_at = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M")
        index_version = f"{health.chunks:,} chunks, updated {health.updated_at or 'never'}"
        if self.preferences is not None:  # kept, so reopening the workspace (or the app) shows it again
            self.preferences.save_evaluation(self.workspace, report_text(report, evaluated_at, index_version))
        self.report_note = evaluation_note(evaluated_at, index_version)
        self.show_report(report)

    def _progress(self, event: EvalProgress) -> None:
        if event.stage == "computing":
            self.progress.setRange(0, 0)  # busy: no count to show while the metrics are worked out
            self.status.setText(f"All {event.total} runs done · computing metrics "
                                "(MRR, nDCG, recall, significance)…")
            self.stage_changed.emit("computing")
            return
        self.progress.setValue(event.done)
        question = " ".join(event.query.split())[:50]
        self.status.setText(f"{event.done}/{event.total}: {event.strategy} — {question}")

    def _done(self, kind: str) -> None:
        self._set_busy(False)
        self.status.setText("Done" if kind == "question" else
                            f"Done: {self.report.queries} queries" if self.report else "Done")
        self.finished.emit(kind)

    def _failed(self, error: BaseException) -> None:
        self._set_busy(False)
        self.status.setText(f"Failed: {describe_error(error)}")
        self.finished.emit("failed")

    def _cancelled(self) -> None:
        self._set_busy(False)
        self.status.setText("Cancelled")
        self.finished.emit("cancelled")

    def _set_busy(self, busy: bool) -> None:
        if not busy and self.progress.maximum() == 0:  # leaving the "computing" busy bar: show it full
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
        self.stage_changed.emit("querying" if busy else "")
        self.cancel_button.setEnabled(busy)
        for widget in (self.run_question_button, self.run_set_button, self.load_button):
            widget.setEnabled(not busy)

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

    def show_report(self, report: EvalReport) -> None:
        self.report = report
        self.recommended = report.recommend() if report.strategies else None
        self._fill_metrics_table(report)
        self._show_recommendation(self.recommended)
        self._fill_per_query(report)
        self._fill_significance(report)
        self._plot(report)
        self.tabs.setCurrentIndex(1)

    def _show_recommendation(self, best: Recommendation | None) -> None:
        if best is None:
            self.recommendation.setText("")
            self.use_button.hide()
            return
        self.recommendation.setText(f"★ Recommended for this workspace: {best.strategy}. Why: {best.reason}"
                                    + (f" ({self.report_note})" if self.report_note else ""))
        self.recommendation.setToolTip(self.recommendation.text())
        self.use_button.setText(f"Use {best.strategy} for this workspace")
        self.use_button.setVisible(bool(self.workspace))

    def use_recommended(self) -> None:
        """Save the recommendation as this workspace's default and tell the window to select it."""
        if self.recommended is None:
            return
        if self.preferences is not None and self.workspace:
            self.preferences.save_default_strategy(self.workspace, self.recommended.strategy)
        self.default_strategy_chosen.emit(self.recommended.strategy)
        self.status.setText(f"{self.recommended.strategy} is now this workspace's default strategy")

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

    def bar_items(self, plot: pg.PlotWidget) -> list[pg.BarGraphItem]:
        return [item for item in plot.getPlotItem().items if isinstance(item, pg.BarGraphItem)]

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
                               on_result=lambda _: self.status.setText(f"Labelled {cell_text(item)} as {verdict}"),
                               on_error=lambda error: self.status.setText(f"Label not saved: {describe_error(error)}"))

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

    # ------------------------------------------------------------------ dialogs
    def _choose_query_set(self) -> None:
        queries, _ = QFileDialog.getOpenFileName(self, "Labelled queries (JSONL)", "", "JSONL (*.jsonl);;All (*)")
        if not queries:
            return
        dialog = self.qrels_dialog(Path(queries).parent)
        qrels = dialog.selectedFiles()[0] if dialog.exec() and dialog.selectedFiles() else ""
        try:
            self.load_query_set(queries, qrels or None)
        except (OSError, ValueError) as error:
            self.status.setText(f"Could not load the query set: {error}")

    def qrels_dialog(self, folder: Path) -> QFileDialog:
        """The second step of loading a query set, explained in the dialog itself (not only its title)."""
        dialog = QFileDialog(self, "Judgements for these queries (optional)", str(folder), "TSV (*.tsv);;All (*)")
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog)  # so the explanation can sit inside it
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        note = QLabel(QRELS_HELP)
        note.setObjectName("qrelsHelp")
        note.setWordWrap(True)
        layout = dialog.layout()
        if isinstance(layout, QGridLayout):
            layout.addWidget(note, layout.rowCount(), 0, 1, layout.columnCount())
        else:
            layout.addWidget(note)
        return dialog
