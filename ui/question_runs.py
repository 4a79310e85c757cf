"""Asking in the main window: the question run and its answer shown (rankings, status bar, banners), the
same question as files (Files tab, Explore's strip) and over several workspaces, the strategies, labels."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction

from services.core.models import QueryOptions, QueryResult, ResultChunk, StrategyInfo
from ui.action_log import record
from ui.message_bar import ERROR, INFO, WARNING
from ui.viewmodels.files import file_preview, files_first, heading_text
from ui.viewmodels.results import empty_result_text, is_empty, one_line, same_chunk_row, summary_text, timings_text
from ui.viewmodels.strategies import fallback_strategies
from ui.viewmodels.workspace_set import counted

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class QuestionRuns(QObject):
    """The question on screen and its answers; the window owns one."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)  # a QObject of the GUI thread: signals from other threads reach it there
        self.window = window
        self.files_request: tuple[str, QueryOptions, int] | None = None  # (question, options, max files) on screen
        self.reading = False  # while the same question's new answer is shown: the code pane stays put
        self.strategy_actions: list[QAction] = []  # "Use strategy: …", offered by the palette
        self.rerun_timer = QTimer(window)  # a burst of filter changes runs the question once
        self.rerun_timer.setSingleShot(True)
        self.rerun_timer.setInterval(250)
        self.rerun_timer.timeout.connect(self._rerun)

    def run_query(self, text: str | None = None, remember: bool = True) -> asyncio.Task | None:
        """Run the query in the box (or `text`); a query still running is cancelled. `remember`: put it
        first in the question history (not for a question asked again by the window itself)."""
        if text is not None:
            self.window.query_bar.query.setText(text)
        question = self.window.query_bar.query.text().strip()
        if not question:
            return None
        if not self.window.workspace:
            self.window.messages.show_message("Open a workspace first.", WARNING)
            return None
        self.rerun_timer.stop()
        completions = self.window.query_bar.completer.popup()
        if completions is not None:
            completions.hide()  # Enter ran the question; no completion is pending
        if self.window.messages.level == INFO:
            self.window.messages.hide()  # the previous question's note
        if remember:
            self.window.query_bar.remember(question)
        record("question (%s): %s", self.window.query_bar.strategy_name(), one_line(question)[:120])
        self.window.status_results.setText(f"Searching for “{one_line(question)}”…")
        self.window.tell_compare(lambda view: view.set_question(question))
        bar = self.window.query_bar
        options = self.window.session.options(bar.top_k.value(), bar.strategy_name(), bar.selected_languages(),
                                              bar.path_glob.text())
        if self.files_request is None or self.files_request[0] != question:
            self.window.runner.cancel("files")  # the newest question wins
            self.window.file_strip.set_answer(None)
        self.files_request = (question, options, bar.top_k.value())
        self.refresh_files()
        self.refresh_workspace_set()
        return self.window.runner.run(self.window.session.query(question, options), key="query",
                                      context="Query", on_result=self.show_result,
                                      on_error=lambda _exc: self.window.status_results.setText("Query failed"))

    def refresh_files(self) -> asyncio.Task | None:
        """Answer the question on screen as files (once per question): while the Files tab is on screen, and
        for Explore's strip once the chunk answer says the engine is surer of files (so it never competes
        with the chunk answer); shown where it is wanted when it arrives."""
        if self.files_request is None:
            return None
        question, options, max_files = self.files_request
        if self.window.files.is_current(question, options):
            self._show_files(self.window.files.answer)
            return None
        if self.window.tabs.currentWidget() is not self.window.files_view and not self._files_first(question):
            return None
        self.window.files_view.title.setText(f"Finding the files for “{one_line(question)}”…")
        return self.window.runner.run(self.window.files.find(question, options, max_files), key="files",
                                      context="Files",
                                      on_result=self._show_files)

    def _files_first(self, question: str) -> bool:
        """Whether Explore's answer on screen is to `question` and leads with its files (files_first)."""
        result = self.window.last_result
        return result is not None and result.question == question and files_first(result)

    def _show_files(self, answer) -> None:
        self.window.files_view.set_answer(answer)
        wanted = answer is not None and self._files_first(answer.question)
        if not wanted or self.window.file_strip.answer is not answer:  # the same answer again keeps the reader's choice
            self.window.file_strip.set_answer(answer if wanted else None)

    def show_file(self, file) -> None:
        """A file of Explore's strip: the code pane shows it at its best chunk (a place Back returns to), the
        why view says why it ranks there, and no ranking row stays selected."""
        answer = self.window.file_strip.answer
        if answer is None or not self.window.workspace:
            return
        for table in (self.window.results.original_table, self.window.results.reranked_table):
            table.clearSelection()
        self.window.navigation.show_code(file_preview(self.window.workspace, file), "file")
        self.window.results.why.set_file(heading_text(answer, file), file.signals)

    def refresh_workspace_set(self) -> asyncio.Task | None:
        """While the Several workspaces tab is on screen, ask the question on screen over the open workspace
        and the ticked ones (once per question and set)."""
        also = self.window.workspace_set.also()
        if self.window.tabs.currentWidget() is not self.window.workspace_set or self.files_request is None or not also:
            return None
        question, options, _ = self.files_request
        workspaces = [self.window.workspace, *also]
        if self.window.workspace_set_model.is_current(question, options, workspaces):
            return None
        searching = f"Searching {counted(len(workspaces), 'workspace')} for “{question}”…"
        self.window.workspace_set.title.setText(searching)
        return self.window.runner.run(self.window.workspace_set_model.ask(question, options, workspaces),
                                      key="workspace-set",
                                      context="Several workspaces", on_result=self._show_workspace_set)

    def _show_workspace_set(self, result) -> None:
        """The merged answer; a ticked workspace not indexed yet is said, with an action that indexes it (the
        others answered meanwhile)."""
        self.window.workspace_set.set_result(result)
        for path, _reason in list(result.unanswered.items())[:1]:
            name = Path(path).name
            more = len(result.unanswered) - 1
            self.window.messages.show_message(
                f"{name} is not indexed yet{f' (and {more} more)' if more else ''}: the other workspaces answered.",
                WARNING, action_text=f"Index {name}", action=lambda p=path: self.index_other(p))

    def index_other(self, path: str) -> asyncio.Task:
        """Index a workspace other than the open one (the Several workspaces tab's "Index it"), then ask again."""
        self.window.workspace_set.title.setText(f"Indexing {Path(path).name}…")
        record("index another workspace: %s", path)

        def done(_report) -> None:
            self.window.workspace_set_model.asked = None
            self.refresh_workspace_set()

        return self.window.runner.run(self.window.service.index(path), key="index-other",
                                      context=f"Indexing {Path(path).name}",
                                      on_result=done)

    def strategy_changed(self, _index: int) -> None:
        """Switching strategy re-runs the question on screen, so rankings can be compared quickly; each
        workspace remembers its own."""
        if self.window.workspace and self.window.query_bar.strategy_name():
            self.window.preferences.save_strategy(self.window.workspace, self.window.query_bar.strategy_name())
        if self.window.session.rerun_on_change(self.window.query_bar.query.text()):
            self.run_query()

    def filters_changed(self) -> None:
        """A filter or the result count changed: save the workspace's filters, run the question again."""
        self.window.workspaces.save_filters()
        if self.window.session.rerun_on_change(self.window.query_bar.query.text()):
            self.rerun_timer.start()

    def _rerun(self) -> None:
        if self.window.last_result is not None:
            self.run_query()

    def show_result(self, result: QueryResult) -> None:
        """Show an answer; the same question answered again (a refresh after an edit or a recount, another
        strategy) updates the rankings in place with the selected chunk still selected, and leaves the code
        pane where the reader is (a file saved meanwhile is shown again at the same place); a new question
        selects the top result and shows it."""
        shown, selected = self.window.session.last_result, self.window.results.selected_chunk()
        self.window.session.last_result = result
        if self.window.workspace:
            self.window.workspaces.answers[self.window.workspace] = result
        if self.window.messages.level == ERROR:
            self.window.messages.hide()
        same_question = shown is not None and shown.question == result.question
        self.reading = same_question and self.window.code.item is not None
        try:
            self.window.results.set_result(result)
            if not (same_question and selected is not None and self.window.results.select_chunk(selected.chunk)):
                self._select_first()
        finally:
            self.reading = False
        if same_question and self.window.code.changed_on_disk():
            self.window.code.show_again(self._in_answer(self.window.code.item, result))
        if not files_first(result):
            self.window.file_strip.set_answer(None)
        self.refresh_files()
        filters = self.window.query_bar.filters_text()
        self.window.status_results.setText(summary_text(result, filters))
        self.window.timings_label.setText(timings_text(result))
        self.window.cache_label.setText("cache hit" if result.cache_hit else "cache miss")
        self.window.cache_label.show()
        self.window.cache_label.setProperty("hit", result.cache_hit)
        self.window.cache_label.style().unpolish(self.window.cache_label)
        self.window.cache_label.style().polish(self.window.cache_label)
        if is_empty(result):
            clear = "Clear filters" if filters else ""
            self.window.messages.show_message(empty_result_text(result, filters), INFO,
                                              action_text=clear,
                                              action=self.window.query_bar.clear_filters if clear else None)
        elif result.question_note:  # a long question: its length against the limit, and how it was read
            self.window.messages.show_message(result.question_note[:1].upper() + result.question_note[1:] + ".", INFO)

    @staticmethod
    def _in_answer(item: ResultChunk | None, result: QueryResult) -> ResultChunk | None:
        """`item`'s chunk as `result` has it (its lines after an edit), or None."""
        if item is None:
            return None
        rows = [*result.results, *result.original]
        row = same_chunk_row(item.chunk, rows)
        return rows[row] if row is not None else None

    def _select_first(self) -> None:
        """Select the top result without taking the keyboard focus (it stays where the user is)."""
        results = self.window.results
        table = results.reranked_table if results.reranked_model.rowCount() else results.original_table
        if table.model().rowCount():
            table.selectRow(0)

    def result_selected(self, item: ResultChunk | None) -> None:
        """A row selected shows its code, unless the rankings are being refreshed under the reader."""
        if not self.reading:
            self.window.navigation.show_code(item, "result")
        if item is not None:
            self.window.file_strip.clear_choice()

    def open_question(self, text: str) -> None:
        self.window.tabs.setCurrentWidget(self.window.explore)
        self.run_query(text)

    def load_strategies(self) -> asyncio.Task:
        """The fallback list until the engine answers (an engine process may still be starting)."""
        self._show_strategies(fallback_strategies())
        return self.window.runner.run(self.window.service.strategies(), key="strategies",
                                      context="Listing reranking strategies",
                                      on_result=lambda infos: self._show_strategies(infos or fallback_strategies()))

    def _show_strategies(self, strategies: list[StrategyInfo]) -> None:
        self.window.results.set_strategies(strategies)
        self.window.query_bar.set_strategies(strategies, self.window.preferences.strategy(self.window.workspace))
        self.strategy_actions = []
        for info in strategies:
            action = QAction(f"Use strategy: {info.label or info.name}", self.window)
            action.setToolTip(f"{info.name}: {info.description}")
            action.setEnabled(info.available)
            action.triggered.connect(lambda _=False, name=info.name: self.window.query_bar.select_strategy(name))
            self.strategy_actions.append(action)

    def more_hits_in_file(self, item) -> None:
        """The question on screen again, within the result's file (the Paths filter; Clear filters undoes it)."""
        self.window.query_bar.path_glob.setText(item.chunk.path)
        self.run_query()

    def label_result(self, item, relevant: bool) -> asyncio.Task | None:
        """Record a relevance label for the current question (the Compare view evaluates with them)."""
        if self.window.last_result is None or not self.window.workspace:
            return None
        return self.window.runner.run(self.window.labels.mark(self.window.workspace, self.window.last_result.question,
                                                              item, relevant),
                                      context="Saving the label",
                                      on_result=lambda text: self.window.messages.show_message(text, INFO))

    def busy_changed(self, key: str, running: bool) -> None:
        if key == "query":
            self.window.query_bar.search_button.setText("Searching…" if running else "Search")
