"""Opening a workspace in the main window, and keeping its state: its question, filters and history, its
index health and the offer it makes, the watch on its files, the recent workspaces, the last run's crash."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from services.core.errors import IndexBusyError
from services.core.models import IndexHealth, QueryResult, WatchEvent
from ui.code_view import preload_lexers
from ui.message_bar import ERROR, WARNING
from ui.viewmodels.preferences import recent_workspaces
from ui.viewmodels.workspace import INDEX, REBUILD, Offer, health_offer

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class WorkspaceOpening(QObject):
    """The open workspace's life in the window (the state itself is the WorkspaceViewModel's); the window
    owns one."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)  # a QObject of the GUI thread: signals from other threads reach it there
        self.window = window
        self.box_texts: dict[str, str] = {}  # the question box's text per workspace, while the window is open
        self.answers: dict[str, QueryResult] = {}  # the last answer per workspace, while the window is open
        self.crash_notice = ""  # the last run's crash, said until a workspace is open
        self._lexer_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ke-lexers")

    def close(self) -> None:
        self._lexer_pool.shutdown(wait=False, cancel_futures=True)

    def choose_workspace(self) -> None:
        path = QFileDialog.getExistingDirectory(self.window, "Open workspace",
                                                self.window.workspace or str(Path.home()))
        if path:
            self.open_workspace(path)

    def open_workspace(self, path: str) -> asyncio.Task:
        """Switch to `path`: show its health at once, offer indexing when there is no index."""
        if self.window.workspace:
            self.box_texts[self.window.workspace] = self.window.query_bar.query.text()
            self.window.preferences.save_question(self.window.workspace, self.window.query_bar.query.text())
        self._clear_state()
        if self.crash_notice:
            self.window.messages.show_message(self.crash_notice, WARNING)
            self.crash_notice = ""
        path = self.window.session.open(path)
        # each workspace keeps its own question and strategy, and shows its last answer until it is asked again
        self.window.query_bar.query.setText(self.box_texts.get(path, self.window.preferences.question(path)))
        self.window.code.set_workspace(path)
        self.window.files_view.code.set_workspace(path)
        self.window.workspace_label.setText(path)
        self.window.setWindowTitle(f"Knowledge Explorer — {Path(path).name}")
        self.fill_recent_menu()
        self._restore_workspace_state(path)
        self.window.tell_compare(lambda view: view.set_workspace(path))
        self.window.tell_compare(lambda view: view.set_question(self.window.query_bar.query.text()))
        if self.window.preferences.own_strategy(path):  # after Compare's saved default: the last choice here wins
            self.window.query_bar.select_strategy(self.window.preferences.own_strategy(path))
        self.window.health_panel.set_health(IndexHealth(workspace=path, indexed=False))
        self.window.health_panel.badge.setText("checking…")
        if path in self.answers and self.answers[path].question == self.window.query_bar.query.text().strip():
            self.window.questions.show_result(self.answers[path])
        return self.window.runner.run(self.load_workspace(path), key="workspace", context="Opening workspace",
                                      on_result=lambda _health: self._answer_again(path), on_error=self.health_failed)

    def _answer_again(self, path: str) -> None:
        """Once a reopened workspace is read, its question is answered again from its index (the last
        answer, shown meanwhile, may predate changes)."""
        if path == self.window.workspace and self.window.query_bar.query.text().strip():
            self.window.questions.run_query(remember=False)

    def _clear_state(self) -> None:
        """Forget everything shown for the previous workspace: results, status, banners."""
        self.window.questions.rerun_timer.stop()
        self.window.runner.cancel("query")
        self.window.messages.hide()
        self.window.health_scroll.verticalScrollBar().setValue(0)  # each workspace's panel opens at its top
        if not self.window.health_panel.running:
            self.window.health_panel.progress_label.setText("")  # the last run's outcome was the other workspace's
        self.window.results.set_result(None)
        self.window.runner.cancel("files")
        self.window.questions.files_request = None
        self.window.files_view.set_answer(None)
        self.window.file_strip.set_answer(None)
        self.window.code.show_chunk(None)
        self.window.code.navigation.clear()
        self.window.code.update_navigation()  # nowhere to go back to in the new workspace
        self.window.status_results.setText("")
        self.window.timings_label.setText("")
        self.window.cache_label.hide()

    def _restore_workspace_state(self, path: str) -> None:
        """Each workspace has its own filters and question history."""
        self.window.query_bar.set_filters(*self.window.preferences.filters(path))
        self.window.query_bar.set_history(*self.window.preferences.history(path))

    def save_filters(self) -> None:
        if self.window.workspace:
            self.window.preferences.save_filters(self.window.workspace,
                                                 list(self.window.query_bar.selected_languages()),
                                                 self.window.query_bar.path_glob.text())

    def save_history(self) -> None:
        if self.window.workspace:
            self.window.preferences.save_history(self.window.workspace, self.window.query_bar.recent,
                                                 self.window.query_bar.pinned)

    def load_workspace(self, path: str):
        """Read `path`'s health and show it, its symbols; watch it (a coroutine for the runner)."""
        return self.window.session.load(path, self._apply_health, self.window.query_bar.set_symbols,
                                        self.window.watch_received.emit)

    def auto_reindex_toggled(self, on: bool) -> None:
        if self.window.session.set_auto_reindex(on):
            watch = self.window.session.watch(self.window.workspace, self.window.watch_received.emit)
            self.window.runner.run(watch, key="watch", context="Watching the workspace")

    def on_watch_event(self, event: WatchEvent) -> None:
        reaction = self.window.session.reaction(event, self.window.health_panel.is_indexing())
        if reaction is None:
            return
        if reaction.auto_run:
            self.window.health_panel.auto_started()
            self.window.runs.show_run_status("Indexing changed files…", None)
            self._hide_health_offer()
        elif reaction.auto_run is False:
            self.window.health_panel.auto_finished()
            self.window.runs.show_run_status("", None)
        if reaction.progress is not None:
            self.window.health_panel.auto_started()
            self.window.runs.on_progress(reaction.progress)
        if reaction.progress_text is not None:
            self.window.health_panel.progress_label.setText(reaction.progress_text)
        if reaction.reload_health:
            # its own key: a refresh must not cancel the opening of the workspace, which may be what
            # started the watch (and whose caller, e.g. --screenshot, awaits it)
            self.window.runner.run(self.load_workspace(self.window.workspace), key="watch-health",
                                   context="Reading index health", on_error=self.health_failed)
        if reaction.refresh_results:
            self.window.runs.refresh_results()
        if reaction.error:
            self.window.messages.show_message(reaction.error, ERROR)

    def warn_if_deleted(self, item) -> None:
        if item is not None and item.stale == "deleted":
            self.window.messages.show_message(f"{item.chunk.path} was deleted since it was indexed; the code "
                                              "shown is the indexed copy.", WARNING)

    def health_failed(self, exc: BaseException) -> None:
        """The badge must not stay on "checking…": show why (another owner, or the error)."""
        if isinstance(exc, IndexBusyError):
            self.window.health_panel.set_busy_owner(str(exc))
        elif (health := self.window.session.failed_health(exc)) is not None:
            self.window.health_panel.set_health(health)

    def _apply_health(self, health: IndexHealth) -> None:
        if health.languages and not self.window.session.closed:
            work = asyncio.get_running_loop().run_in_executor(self._lexer_pool, preload_lexers,
                                                              sorted(health.languages))
            self.window.runner.run(work, key="lexers", context="Loading syntax highlighters")
        self.window.health_panel.set_health(health)
        self.window.query_bar.set_languages(list(health.languages))
        # while a run is under way its progress is the news: no offer to index what it is indexing
        offer = None if self.window.health_panel.running else health_offer(health, self.window.session.paused)
        if offer is not None:
            self._show_offer(offer)
            self.window.session.health_message = self.window.messages.text()
        elif self.window.messages.isVisible() and self.window.messages.text() == self.window.session.health_message:
            self.window.messages.hide()  # only the health's own offer; a query's banner stays

    def _hide_health_offer(self) -> None:
        """A run started: the health's banner (e.g. "stopped at … · Resume indexing") no longer holds."""
        if self.window.messages.isVisible() and self.window.messages.text() == self.window.session.health_message:
            self.window.messages.hide()

    def _show_offer(self, offer: Offer) -> None:
        full = offer.action == REBUILD  # a full rebuild asks first, from the banner as from Ctrl+Shift+R
        action = (lambda: self.window.runs.request_index(full)) if offer.action in (INDEX, REBUILD) else None
        self.window.messages.show_message(offer.text, offer.level, action_text=offer.action_text, action=action)

    def warm_up(self) -> asyncio.Task:
        """Load the embedding model in the background so the first query and index start at once."""
        return self.window.runner.run(self.window.service.warm_up(), key="warmup", context="Loading the model")

    def refresh_health(self) -> asyncio.Task:
        return self.window.runner.run(self.load_workspace(self.window.workspace), key="workspace",
                                      context="Reading index health", on_error=self.health_failed)

    def fill_recent_menu(self) -> None:
        self.window.recent_menu.clear()
        recent = recent_workspaces(self.window.settings)
        for path in recent:
            action = self.window.recent_menu.addAction(path)
            action.triggered.connect(lambda _checked=False, p=path: self.open_workspace(p))
        self.window.recent_button.setEnabled(bool(recent))
        self.window.workspace_set.set_candidates(self.window.workspace, recent)

    def report_last_crash(self, log_path, report) -> None:
        """At start, after a run that did not end cleanly: say so, and where to look (said again once the
        first workspace is open: opening one clears the banner)."""
        self.crash_notice = (f"The app stopped unexpectedly last time; the log is at {log_path} (the last "
                             f"actions and the traceback: {report}).")
        self.window.messages.show_message(self.crash_notice, WARNING)
