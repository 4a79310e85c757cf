"""Index runs in the main window: Reindex, Full rebuild (asked first), Cancel, the engine's automatic runs,
and their progress on the health panel, in the status bar and in the window title."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from services.core.models import IndexReport, ProgressEvent
from ui.message_bar import INFO, WARNING
from ui.viewmodels.progress import RunProgress, progress_text

if TYPE_CHECKING:
    from ui.main_window import MainWindow

RUN_HEALTH_SECONDS = 3.0  # how often the health panel's counts are read during a run


class IndexRuns(QObject):
    """The open workspace's index runs as the window shows them; the window owns one."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)  # a QObject of the GUI thread: signals from other threads reach it there
        self.window = window
        self.run_progress = RunProgress()  # the run's bar and title percentage, never going backwards
        self._run_health = (0, 0.0)  # the step and time of the last health read during a run

    def request_index(self, full: bool = False) -> asyncio.Task | None:
        """Reindex at once; a full rebuild asks first (inline, nothing modal)."""
        if not full or not self.window.workspace or self.window.runner.is_running("index"):
            return self.start_index(full)
        self.window.messages.show_message(self.window.session.rebuild_question(), WARNING,
                                          action_text="Rebuild", action=lambda: self.start_index(True))
        return None

    def start_index(self, full: bool = False) -> asyncio.Task | None:
        if not self.window.workspace:
            self.window.messages.show_message("Open a workspace first.", WARNING)
            return None
        if self.window.runner.is_running("index"):
            return None
        cancel = self.window.session.begin_index()
        if self.window.messages.level in (INFO, WARNING):
            self.window.messages.hide()  # the "not indexed" / "out of date" offer is being acted on
        self.window.health_panel.indexing_started(full)
        return self.window.runner.run(self._index(self.window.workspace, full, cancel), key="index",
                                      context="Indexing", on_error=self._index_failed)

    async def _index(self, path: str, full: bool, cancel) -> IndexReport:
        self.show_run_status("Full rebuild: starting…" if full else "Reindex: starting…", None)
        report, message = await self.window.session.index(path, full, self.window.progress_received.emit, cancel)
        self.window.health_panel.indexing_finished(message)
        self.show_run_status("", None)
        if path == self.window.workspace:
            await self.window.workspaces.load_workspace(path)
            if not report.cancelled:
                self.refresh_results()
        return report

    def refresh_results(self) -> None:
        """Answer the question on screen again from the index just updated (unless a new one is being typed)."""
        if self.window.session.question_carried(self.window.query_bar.query.text()):
            self.window.questions.run_query()

    def _index_failed(self, exc: BaseException) -> None:
        self.run_progress.end()
        self.window.health_panel.indexing_finished("Indexing failed")
        self.show_run_status("", None)
        if self.window.workspace:
            self.window.workspaces.refresh_health()

    def cancel_index(self) -> None:
        """Ctrl+.: cancel the run under way, the window's own or the engine's automatic one."""
        if self.window.session.cancel_index():
            self.window.health_panel.progress_label.setText("Cancelling…")
            self.window.health_panel.show_cancelling()
            self.show_run_status("Cancelling: stops after the files being embedded…", None)
        elif self.window.health_panel.running == "auto":
            self.window.health_panel.progress_label.setText("Cancelling…")
            self.window.health_panel.show_cancelling()
            self.show_run_status("Cancelling: stops after the files being embedded…", None)
            self.window.runner.run(self.window.session.pause_automatic_runs(), key="stop-auto",
                                   context="Cancelling indexing",
                                   on_result=lambda _none: self._automatic_runs_stopped())

    def _automatic_runs_stopped(self) -> None:
        self.window.health_panel.auto_finished()
        self.window.health_panel.progress_label.setText("Cancelled; the index keeps what was finished. Automatic "
                                                        "indexing is paused until Resume or Reindex (F5).")
        self.show_run_status("", None)
        self.window.workspaces.refresh_health()

    def on_progress(self, event: ProgressEvent) -> None:
        self.window.session.progress_events.append(event)
        if event.phase in ("done", "cancelled"):
            self.run_progress.end()
            self.window.health_panel.show_progress(event)
            return
        percent = self.run_progress.percent(event)  # never backwards, in the title and on the bar alike
        self.window.health_panel.show_progress(event, self.run_progress.shown)
        self.show_run_status(progress_text(event, percent), percent)
        self._health_during_run(event)

    def _health_during_run(self, event: ProgressEvent) -> None:
        """The panel's files, chunks and vectors as a run makes them (and, after step 1, the names for
        Ctrl+T): read again when a step begins and every few seconds."""
        now = time.monotonic()
        if event.step == self._run_health[0] and now - self._run_health[1] < RUN_HEALTH_SECONDS:
            return
        self._run_health = (event.step, now)
        self.window.runner.run(self.window.workspaces.load_workspace(self.window.workspace), key="run-health",
                               context="Reading index health",
                               on_error=self.window.workspaces.health_failed)

    def show_run_status(self, text: str, percent: int | None) -> None:
        """A run's progress in the status bar (its text names the device once) and the window title, with
        the same percentage as the panel's bar; "" when none."""
        self.window.index_status.setText(text)
        self.window.index_status.setVisible(bool(text))
        name = Path(self.window.workspace).name if self.window.workspace else ""
        title = f"Knowledge Explorer — {name}" if name else "Knowledge Explorer"
        if text:
            title += f" — indexing {percent} %" if percent is not None else " — indexing"
        self.window.setWindowTitle(title)
