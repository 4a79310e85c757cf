"""Compare view: one question, or a labelled query set, through every available strategy at once.

Rankings appear as columns (one per strategy, rows = rank: ui.compare_rankings, where right-click labels a
result); a query set gives a metrics table and bar charts (quality metrics, latency: ui.compare_report). The
evaluation loop lives in services.evaluation.runner; this widget only starts it on the qasync loop, shows progress,
lets the user cancel, and displays the outcome. The work with the engine is ui.viewmodels.compare's.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QProgressBar, QPushButton, QSpinBox, QTabWidget,
    QVBoxLayout, QWidget,
)

from services.core.labelled import LabelledQuery, load_queries
from services.evaluation.formats import Qrels, load_qrels, qrels_from_queries
from services.evaluation.report import EvalReport, report_from_text, report_text
from services.evaluation.runner import EvalProgress
from ui.async_runner import AsyncRunner, describe_error
from ui.compare_rankings import RankingsPanel
from ui.compare_report import ReportPanel
from ui.viewmodels.compare import CompareViewModel
from ui.viewmodels.preferences import Preferences

log = logging.getLogger(__name__)

TASK_KEY = "compare"
QRELS_HELP = ("Optional: a judgements file saying which documents answer each query — a TSV with a header "
              "line, then query_id, doc_id (a path, or path::symbol) and relevance (0 = not relevant). "
              "Cancel to use the relevant results listed in the queries file itself (its \"relevant\" "
              "field, as right-click labels write it).")


def evaluation_note(evaluated_at: str, index_version: str) -> str:
    """"evaluated 2026-11-25 15:20 on the index of 7,206 chunks, updated …" (said beside a kept report)."""
    return f"evaluated {evaluated_at} on the index of {index_version}"


class CompareView(QWidget):
    """Side-by-side strategies. API for the main window: set_workspace(path), set_question(text).
    The rankings are rankings_panel's, an evaluation's report is report_panel's."""

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
        self.queries: list[LabelledQuery] = []
        self.qrels: Qrels = {}
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
        self.rankings_panel = RankingsPanel(self.model)
        self.rankings_panel.message.connect(self.status.setText)
        self.tabs.addTab(self.rankings_panel, "Rankings")
        self.report_panel = ReportPanel()
        self.report_panel.use_button.clicked.connect(self.use_recommended)
        self.report_panel.query_opened.connect(self.query_opened)
        self.tabs.addTab(self.report_panel, "Metrics")
        self.tabs.addTab(self.report_panel.per_query, "Per query")
        self.tabs.addTab(self.report_panel.significance, "Significance")
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

    # ------------------------------------------------------------------ small API
    def set_workspace(self, path: str | Path | None) -> None:
        """Also announces the workspace's default strategy, when one was chosen here before."""
        self.workspace = str(path or "")
        self.rankings_panel.set_workspace(self.workspace)
        self.rankings_panel.show_rankings({})
        self.report_panel.workspace = self.workspace
        saved = self.preferences.default_strategy(self.workspace) if self.workspace and self.preferences else ""
        if saved:
            self.default_strategy_chosen.emit(saved)
        self.show_kept_report()

    def show_kept_report(self) -> None:
        """The workspace's last evaluation, with its date and index, as it was left (or nothing)."""
        text = self.preferences.evaluation(self.workspace) if self.workspace and self.preferences else ""
        kept = report_from_text(text) if text else None
        self.report_panel.clear()
        if kept is None:
            return
        report, evaluated_at, index_version = kept
        self.show_report(report, evaluation_note(evaluated_at, index_version))
        self.status.setText(f"Last evaluation: {self.report_panel.note}")

    def show_report(self, report: EvalReport, note: str = "") -> None:
        """The report in the Metrics, Per query and Significance tabs, the Metrics tab on top."""
        self.report_panel.show_report(report, note)
        self.tabs.setCurrentWidget(self.report_panel)

    def use_recommended(self) -> None:
        """Save the recommendation as this workspace's default and tell the window to select it."""
        recommended = self.report_panel.recommended
        if recommended is None:
            return
        if self.preferences is not None and self.workspace:
            self.preferences.save_default_strategy(self.workspace, recommended.strategy)
        self.default_strategy_chosen.emit(recommended.strategy)
        self.status.setText(f"{recommended.strategy} is now this workspace's default strategy")

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
        self.rankings_panel.show_rankings(results, skipped)

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
        self.show_report(report, evaluation_note(evaluated_at, index_version))

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
        report = self.report_panel.report
        self.status.setText("Done" if kind == "question" else f"Done: {report.queries} queries" if report else "Done")
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
