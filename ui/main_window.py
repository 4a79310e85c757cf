"""Main window: workspace picker, query bar, rankings side by side, code view, index health."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Callable, cast

from PySide6.QtCore import QByteArray, QObject, QPoint, QSettings, QSize, Qt, Signal
from PySide6.QtGui import QCloseEvent, QContextMenuEvent, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView, QApplication, QBoxLayout, QDockWidget, QLabel, QMainWindow, QMenu, QPlainTextEdit, QScrollArea,
    QSizePolicy, QSplitter, QStackedWidget, QTabWidget, QToolBar, QToolButton, QVBoxLayout, QWidget,
)

from services.core.models import IndexHealth, IndexReport, ProgressEvent, QueryResult
from ui.actions import FILE, RESULTS, VIEW, Place, menu_entries, placed_actions, window_action
from ui.async_runner import AsyncRunner
from ui.code_navigation import CodeNavigation
from ui.code_placement import AUTO_PLACE, CodePlacement
from ui.code_view import CodeView
from ui.compare import CompareView
from ui.editor_settings import EditorSettings
from ui.files_view import FilesView, FileStrip
from ui.goto_dialog import GotoDialog
from ui.graph_view import GraphPanel
from ui.health_panel import HealthPanel
from ui.index_runs import IndexRuns
from ui.message_bar import ERROR, WARNING, MessageBar
from ui.outline import OutlinePopup
from ui.palette import CommandPalette
from ui.query_bar import QueryBar
from ui.question_runs import QuestionRuns
from ui.results_view import ResultsView
from ui.viewmodels.files import FilesViewModel
from ui.viewmodels.goto import GotoViewModel
from ui.viewmodels.graph import GraphViewModel
from ui.viewmodels.labels import LabelsViewModel
from ui.viewmodels.preferences import Preferences
from ui.viewmodels.workspace import WorkspaceViewModel
from ui.viewmodels.workspace_set import WorkspaceSetViewModel
from ui.why_view import ElidedLabel
from ui.workspace_opening import WorkspaceOpening
from ui.workspace_set import WorkspaceSetView

if TYPE_CHECKING:  # the window talks to an engine process; the engine itself is not loaded here
    from services.engine.protocol import Engine

log = logging.getLogger(__name__)

ORGANIZATION = "KnowledgeExplorer"
APPLICATION = "KnowledgeExplorer"


def app_settings() -> QSettings:
    return QSettings(ORGANIZATION, APPLICATION)


def splitter(orientation: Qt.Orientation) -> QSplitter:
    """A splitter whose panes never collapse."""
    split = QSplitter(orientation)
    split.setChildrenCollapsible(False)
    return split


def first_size(available) -> tuple[int, int]:
    """The first window: 1440×900 at most, and inside the screen's free area with room for the title bar
    and frame (so the status bar is on screen)."""
    if available is None:
        return 1440, 900
    return min(1440, available.width() - 40), min(900, available.height() - 80)


class MainWindow(QMainWindow):
    progress_received = Signal(object)  # ProgressEvent, from any thread
    watch_received = Signal(object)  # WatchEvent of the watched workspace

    def __init__(self, service: "Engine", settings: QSettings | None = None) -> None:
        super().__init__()
        self.service = service
        self.settings = settings if settings is not None else app_settings()
        self.preferences = Preferences(self.settings)
        self.session = WorkspaceViewModel(service, self.preferences)
        self.labels = LabelsViewModel(service)
        self.files = FilesViewModel(service)
        self.runner = AsyncRunner(self)
        # what the window does, each its own part (ui/*.py); the window places the views and wires them
        self.workspaces = WorkspaceOpening(self)  # opening a workspace, its state, health, watch, crash notice
        self.questions = QuestionRuns(self)  # the question run and its answers (Explore, Files, several workspaces)
        self.runs = IndexRuns(self)  # index runs and their progress
        self.navigation = CodeNavigation(self)  # the code panes: definitions, peek, hover, outline, Back / Forward
        self.placement = CodePlacement(self)  # the code pane beside or below the rankings
        self.setWindowTitle("Knowledge Explorer")

        self.messages = MessageBar()
        self.query_bar = QueryBar()
        self.results = ResultsView()
        self.code = CodeView()
        self.graph = GraphPanel(GraphViewModel(service), lambda: self.workspace, self.code.name_subject)  # Used by / Uses
        self.health_panel = HealthPanel()
        self.files_view = FilesView()
        self.file_strip = FileStrip()  # Explore: a question's best files above its chunks
        self.workspace_set = WorkspaceSetView()  # "also search in": the question over several workspaces
        self.workspace_set_model = WorkspaceSetViewModel(service)
        self._build_layout()
        self.palette = CommandPalette(self, lambda: self.questions.strategy_actions)
        self.finder = GotoDialog(self, GotoViewModel(service), lambda: self.workspace, self.navigation.open_definition)
        self.outline = OutlinePopup(self)
        self.finder.building = lambda: bool(self.health_panel.running) and not (self.health and self.health.indexed)
        self.editor_settings = EditorSettings(self.settings, self.code_views, self)  # Settings ▸ Editor
        self._build_actions()
        self._build_toolbar()
        self._build_menus()
        self._build_status_bar()
        self._connect()
        self.strategies_loaded = self.questions.load_strategies()  # done once the engine has listed them
        self._restore_settings()

    # the open workspace's state, kept by the view-model
    @property
    def workspace(self) -> str:
        return self.session.workspace

    @property
    def health(self) -> IndexHealth | None:
        return self.session.health

    @property
    def last_result(self) -> QueryResult | None:
        return self.session.last_result

    @property
    def last_report(self) -> IndexReport | None:
        return self.session.last_report

    @property
    def progress_events(self) -> list[ProgressEvent]:
        return self.session.progress_events

    # what app/, docs/, benchmarks/ and the tests ask of the window; each part does it
    def open_workspace(self, path: str) -> asyncio.Task:
        return self.workspaces.open_workspace(path)

    def warm_up(self) -> asyncio.Task:
        return self.workspaces.warm_up()

    def report_last_crash(self, log_path, report) -> None:
        self.workspaces.report_last_crash(log_path, report)

    def run_query(self, text: str | None = None, remember: bool = True) -> asyncio.Task | None:
        return self.questions.run_query(text, remember)

    def request_index(self, full: bool = False) -> asyncio.Task | None:
        return self.runs.request_index(full)

    def start_index(self, full: bool = False) -> asyncio.Task | None:
        return self.runs.start_index(full)

    def cancel_index(self) -> None:
        self.runs.cancel_index()

    def _on_progress(self, event: ProgressEvent) -> None:
        self.runs.on_progress(event)

    def _show_run_status(self, text: str, percent: int | None) -> None:
        self.runs.show_run_status(text, percent)

    # ------------------------------------------------------------------ layout
    def _build_layout(self) -> None:
        """Comparing and reading first. Beside (a window from BESIDE_FROM wide, or the user's choice): the
        code pane has the whole height beside the rankings' column (rankings, why rows, Used by / Uses).
        Below (narrower): the rankings have the whole width, the code pane the row under them with the
        lists. The health panel is a dock (Ctrl+Shift+H), hidden until asked for, so the rankings have the
        room to show whole names. Every split is the user's to drag and is kept."""
        self.health_scroll = QScrollArea()
        self.health_scroll.setObjectName("healthScroll")
        self.health_scroll.setWidget(self.health_panel)
        self.health_scroll.setWidgetResizable(True)
        self.health_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scrollbar = self.health_scroll.verticalScrollBar().sizeHint().width()
        self.health_scroll.setMinimumWidth(max(240, self.health_panel.minimumSizeHint().width() + scrollbar
                                               + 2 * self.health_scroll.frameWidth()))  # never scrolled sideways
        self.splitter = splitter(Qt.Orientation.Vertical)  # beside: rankings over the lists
        self.bottom = splitter(Qt.Orientation.Horizontal)  # beside: that column, code
        self.bottom.addWidget(self.splitter)
        self.below = splitter(Qt.Orientation.Vertical)  # below: rankings over the row
        self.below_row = splitter(Qt.Orientation.Horizontal)  # below: code, lists
        self.below.addWidget(self.below_row)
        self.arrangement = QStackedWidget()
        self.arrangement.addWidget(self.bottom)
        self.arrangement.addWidget(self.below)
        for name, split, _sizes in self.placement.layouts():
            split.splitterMoved.connect(lambda _pos, _index, n=name, sp=split:
                                        self.placement.kept_splits.update({n: sp.saveState()}))
        self.placement.arrange(True)
        explore = QWidget()
        layout = QVBoxLayout(explore)
        layout.setContentsMargins(6, 4, 6, 0)
        layout.setSpacing(4)
        layout.addWidget(self.query_bar)
        layout.addWidget(self.file_strip)
        layout.addWidget(self.arrangement, 1)
        self.explore = explore
        self.compare_view = self._build_compare_view()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(explore, "Explore")
        self.tabs.addTab(self.files_view, "Files")
        self.tabs.addTab(self.workspace_set, "Several workspaces")
        if self.compare_view is not None:
            self.tabs.addTab(self.compare_view, "Compare strategies")
        self.setCentralWidget(self.tabs)
        self.health_dock = QDockWidget("Index health", self)
        self.health_dock.setObjectName("healthDock")  # its place is kept with the window's state
        self.health_dock.setWidget(self._health_body())
        self.health_dock.setAllowedAreas(Qt.DockWidgetArea.LeftDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.health_dock)
        self.messages.float_over(self.centralWidget())
        self._set_minimum_sizes()

    def _health_body(self) -> QWidget:
        """The dock's content: the panel scrolls (its long file list scrolls itself); its buttons stay under
        it, always in view."""
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.health_scroll, 1)
        layout.addWidget(self.health_panel.controls)
        return body

    def resize(self, *size) -> None:
        """A size asked in code (a restored window, a test, the docs' pictures): the arrangement for its width
        first, so the one left behind (beside is taller) never holds the window above the height asked."""
        asked = QSize(*size) if len(size) == 2 else size[0]
        if hasattr(self, "placement") and self.placement.place_actions:  # built
            self.placement.place_code(width=asked.width())
        super().resize(asked)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if hasattr(self, "placement") and self.placement.place_actions:  # built
            self.placement.place_code()

    def _set_minimum_sizes(self) -> None:
        """At the minimum window size each ranking still shows five rows (three stacked on two lines) and
        the code a few lines."""
        table = self.results.reranked_table
        rows = max(table.column_fitter.one_line * 5, table.column_fitter.two_lines * 3)
        chrome = (table.horizontalHeader().sizeHint().height() + self.results.right.title.sizeHint().height()
                  + table.horizontalScrollBar().sizeHint().height())  # shown when the window is narrow
        self.results.splitter.setMinimumHeight(rows + chrome + 2 * table.frameWidth() + 6)  # the why view comes on top
        self.code.setMinimumHeight(self.code.editor.fontMetrics().height() * 6 + 40)
        self.setMinimumWidth(720)

    def _build_compare_view(self) -> CompareView | None:
        try:
            return CompareView(self.service, preferences=self.preferences)
        except Exception:  # its constructor failing must not take the main window down
            log.exception("CompareView could not be created")
            return None

    def _build_actions(self) -> None:
        """The window's own actions: the workspace, Quit, the tabs, and Open in editor (the preview of the
        tab on screen). The views build theirs; each declares its place (ui/actions.py)."""
        a = partial(window_action, self)
        self.open_action = a("Open workspace…", "Ctrl+O", self.workspaces.choose_workspace,
                             place=Place(10, FILE, 0, 0))
        self.quit_action = a("Quit", "Ctrl+Q", self.close, place=Place(30, FILE, 0, 1))
        self.editor_action = a("Open in editor", "Ctrl+E", self.navigation.open_selected,
                               "Open the selected result in your editor", Place(130, RESULTS, 0, 2))
        self.explore_action = a("Explore tab", "Ctrl+Shift+E", lambda: self.show_tab(self.explore),
                                place=Place(170, VIEW, 0, 0))
        self.files_action = a("Files tab: the question answered as ranked files", "Ctrl+Shift+F",
                              lambda: self.show_tab(self.files_view), place=Place(180, VIEW, 0, 1))
        self.workspace_set_action = a("Several workspaces tab: also search in other workspaces", "Ctrl+Shift+W",
                                      lambda: self.show_tab(self.workspace_set), place=Place(190, VIEW, 0, 2))
        self.menu_action = a("Context menu", "Shift+F10", self.open_context_menu,
                             "The context menu of what has the keyboard (a result, the code)", Place(280))
        self.compare_action = a("Compare strategies tab", "Ctrl+Shift+C", lambda: self.show_tab(self.compare_view),
                                place=Place(200, VIEW, 0, 3))
        self.compare_action.setEnabled(self.compare_view is not None)

    def _build_toolbar(self) -> None:
        toolbar = QToolBar("Workspace")
        toolbar.setObjectName("workspaceToolbar")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        toolbar.addAction(self.open_action)
        self.recent_menu = QMenu("Recent workspaces", self)
        self.recent_button = QToolButton()
        self.recent_button.setText("Recent")
        self.recent_button.setMenu(self.recent_menu)
        self.recent_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        toolbar.addWidget(self.recent_button)
        toolbar.addActions([self.code.back_action, self.code.forward_action])
        toolbar.addSeparator()
        self.workspace_label = QLabel("No workspace")
        self.workspace_label.setObjectName("workspaceLabel")
        toolbar.addSeparator()
        toolbar.addWidget(self.workspace_label)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        toolbar.addWidget(spacer)
        toolbar.addAction(self.health_panel.show_action)

    def _build_menus(self) -> None:
        """Every placed action of the window and of the views it shows, in the palette's order (its keys work
        anywhere in the window), and in the menus, each where its declaration puts it."""
        palette = cast(QObject, self.palette)  # the attribute hides QWidget.palette()
        placed = placed_actions([self, self.query_bar, self.results, self.health_panel, palette, self.finder,
                                 self.graph, self.code])
        self.addActions([action for action, _place in placed])
        menus, built = self.menuBar(), {}
        for title, actions in menu_entries(placed).items():
            menu = built[title] = menus.addMenu(title)
            for action in actions:
                menu.addSeparator() if action is None else menu.addAction(action)
        self.placement.build_menu(built[VIEW].addMenu("Code &pane"))  # View ▸ Code pane
        editor = menus.addMenu("Se&ttings").addMenu("&Editor")
        editor.addActions(list(self.editor_settings.preset_actions.values()))
        editor.addSeparator()
        editor.addAction(self.editor_settings.custom_action)

    def _build_status_bar(self) -> None:
        """Three one-line texts that share the bar's width and never overlap: each cut with "…" where it
        does not fit, the whole text in its tooltip; the run's status is hidden between runs."""
        bar = self.statusBar()
        digit = self.fontMetrics().horizontalAdvance("0")
        self.status_results = ElidedLabel("")
        self.index_status = ElidedLabel("")  # a run's stage, files, chunks, rate, ETA and device, whoever started it
        self.index_status.setObjectName("indexStatus")
        self.index_status.hide()
        self.timings_label = ElidedLabel("")
        self.timings_label.setObjectName("timingsLabel")
        for label, chars in ((self.status_results, 16), (self.index_status, 16), (self.timings_label, 10)):
            label.setMinimumWidth(digit * chars)
        self.cache_label = QLabel("")
        self.cache_label.setObjectName("cacheLabel")
        self.cache_label.hide()
        bar.addWidget(self.status_results, 3)
        bar.addWidget(self.index_status, 3)
        bar.addWidget(self.timings_label, 2)
        bar.addPermanentWidget(self.cache_label)

    def _connect(self) -> None:
        self.runner.failed.connect(self._show_failure)
        self.runner.busy_changed.connect(self.questions.busy_changed)
        self.query_bar.submitted.connect(self.questions.run_query)
        self.query_bar.strategy.currentIndexChanged.connect(self.questions.strategy_changed)
        self.query_bar.filters_changed.connect(self.questions.filters_changed)
        self.query_bar.history_changed.connect(self.workspaces.save_history)
        self.query_bar.focus_requested.connect(self.focus_query)
        self.query_bar.query.leave_down.connect(lambda: self.results.focus_ranking(self.results.reranked_table))
        self.results.show_requested.connect(lambda: self.show_tab(self.explore))
        self.code.went_to.connect(self.navigation.went_to)
        self.health_panel.show_action.toggled.connect(self.health_dock.setVisible)
        self.health_dock.visibilityChanged.connect(  # its close button
            lambda _visible: self.health_panel.show_action.setChecked(not self.health_dock.isHidden()))
        self.results.chunk_selected.connect(self.questions.result_selected)
        self.file_strip.file_chosen.connect(self.questions.show_file)
        self.results.chunk_selected.connect(self.workspaces.warn_if_deleted)
        self.graph.open_requested.connect(self.navigation.open_graph_row)
        self.graph.editor_requested.connect(self.navigation.open_graph_row_in_editor)
        for table in (self.results.original_table, self.results.reranked_table):
            table.activated.connect(lambda index, t=table: self.navigation.open_row(t, index.row()))
        self.results.label_requested.connect(self.questions.label_result)
        self.results.reveal_requested.connect(self.navigation.reveal_in_folder)
        self.results.more_hits_requested.connect(self.questions.more_hits_in_file)
        for view in self.code_views():
            view.open_failed.connect(lambda text: self.messages.show_message(text, WARNING, timeout_ms=8000))
            view.definition_requested.connect(self.navigation.go_to_definition)
            view.hover_requested.connect(self.navigation.explain_name)
            view.peek_requested.connect(lambda name, view=view: self.navigation.peek_definition(view, name))
            view.chunks_wanted.connect(lambda path, view=view: self.navigation.load_file_chunks(view, path))
            view.open_requested.connect(self.navigation.open_definition_here)
        self.code.outline_requested.connect(self.navigation.show_outline)
        self.outline.chosen.connect(self.navigation.open_definition_here)
        self.files_view.open_requested.connect(self.navigation.open_selected)  # Enter or double-click on a file
        self.workspace_set.open_requested.connect(self.navigation.open_selected)
        self.health_panel.reindex_requested.connect(self.runs.request_index)
        self.health_panel.cancel_requested.connect(self.runs.cancel_index)
        self.progress_received.connect(self.runs.on_progress)
        self.watch_received.connect(self.workspaces.on_watch_event)
        self.health_panel.auto_reindex.setChecked(self.preferences.auto_reindex)
        self.health_panel.auto_reindex.toggled.connect(self.workspaces.auto_reindex_toggled)
        self.tabs.currentChanged.connect(lambda _index: self._carry_question())
        self.tabs.currentChanged.connect(lambda _index: self.questions.refresh_files())
        self.tabs.currentChanged.connect(lambda _index: self.questions.refresh_workspace_set())
        self.workspace_set.changed.connect(self.questions.refresh_workspace_set)
        if self.compare_view is not None:  # per-query rows open in Explore; a chosen default applies
            self.compare_view.query_opened.connect(self.questions.open_question)
            self.compare_view.default_strategy_chosen.connect(self.query_bar.select_strategy)

    # ---------------------------------------------------------------- settings
    def _restore_settings(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            offscreen = QGuiApplication.platformName() == "offscreen"  # no screen to fit (tests, screenshots)
            self.resize(*first_size(None if offscreen or not self.screen() else self.screen().availableGeometry()))
        state = self.settings.value("windowState")
        if state is not None:
            self.restoreState(state)
        for name, _splitter, _sizes in self.placement.layouts():
            saved = self.settings.value(name)
            if isinstance(saved, QByteArray):
                self.placement.kept_splits[name] = saved  # applied when its arrangement is laid out (_restore_splits)
        shown = self.settings.value("healthVisible", "false") in (True, "true")
        self.health_panel.show_action.setChecked(shown)
        self.health_dock.setVisible(shown)
        self.code.whole_file.setChecked(self.settings.value("code/wholeFile", "true") in (True, "true"))
        place = str(self.settings.value("layout/code", AUTO_PLACE))
        self.placement.place_actions[place if place in self.placement.place_actions else AUTO_PLACE].setChecked(True)
        self.placement.place_code(place if place in self.placement.place_actions else AUTO_PLACE)
        self.query_bar.top_k.setValue(self.preferences.top_k())
        self.workspaces.fill_recent_menu()

    def save_settings(self) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("windowState", self.saveState())
        for name, splitter, sizes in self.placement.layouts():
            if self.placement.laid_out(splitter, sizes):
                self.placement.kept_splits[name] = splitter.saveState()
            if name in self.placement.kept_splits:  # the hidden arrangement's as the user left it, if ever
                self.settings.setValue(name, self.placement.kept_splits[name])
        self.settings.setValue("healthVisible", self.health_panel.show_action.isChecked())
        self.settings.setValue("code/wholeFile", self.code.whole_file.isChecked())
        self.preferences.save_strategy(self.workspace, self.query_bar.strategy_name())
        self.settings.setValue("topK", self.query_bar.top_k.value())
        self.workspaces.save_filters()
        self.workspaces.save_history()
        if self.workspace:
            self.settings.setValue("lastWorkspace", self.workspace)
            self.preferences.save_question(self.workspace, self.query_bar.query.text())
        self.settings.sync()

    # ------------------------------------------------------- tabs and keyboard
    def focus_query(self) -> None:
        """Ctrl+L: the question box of the tab on screen."""
        if self.compare_view is not None and self.tabs.currentWidget() is self.compare_view:
            box = self.compare_view.question
        else:
            if self.tabs.currentWidget() not in self.question_tabs():
                self.show_tab(self.explore)
            box = self.query_bar.query
        box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        box.selectAll()

    def question_tabs(self) -> list[QWidget]:
        """The tabs the one question box goes with (Compare has its own, kept in step)."""
        return [self.explore, self.files_view, self.workspace_set]

    def _carry_question(self) -> None:
        """The one question box moves to the top of the tab on screen: every tab asks the same question."""
        tab = self.tabs.currentWidget()
        if tab not in self.question_tabs() or self.query_bar.parentWidget() is tab:
            return
        old = self.query_bar.parentWidget()
        old_layout = old.layout() if old is not None else None
        if old_layout is not None:
            old_layout.removeWidget(self.query_bar)
        cast(QBoxLayout, tab.layout()).insertWidget(0, self.query_bar)
        self.query_bar.show()

    def show_tab(self, widget: QWidget | None) -> None:
        if self.tabs is not None and widget is not None:
            self.tabs.setCurrentWidget(widget)

    def open_context_menu(self) -> None:
        """Shift+F10: the context menu of the widget with the keyboard, at its current row or caret."""
        widget = QApplication.focusWidget()
        if widget is None:
            return
        target, pos = widget, QPoint(4, 4)
        if isinstance(widget, QAbstractItemView):
            target = widget.viewport()
            if widget.currentIndex().isValid():
                pos = widget.visualRect(widget.currentIndex()).center()
        elif isinstance(widget, QPlainTextEdit):
            target, pos = widget.viewport(), widget.cursorRect().center()
        if widget.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu:
            widget.customContextMenuRequested.emit(pos)
        else:
            QApplication.sendEvent(target, QContextMenuEvent(QContextMenuEvent.Reason.Keyboard, pos,
                                                             target.mapToGlobal(pos)))

    def code_views(self) -> list[CodeView]:
        """The previews: Explore's, Files', Several workspaces', Compare strategies'."""
        compare = [self.compare_view.rankings_panel.code] if self.compare_view is not None else []
        return [self.code, self.files_view.code, self.workspace_set.code, *compare]

    # ------------------------------------------------------------------ misc
    def tell_compare(self, tell: Callable[[CompareView], object]) -> None:
        """Keep the compare tab on the same workspace and question (`tell(view)`); its failing never takes the
        window down."""
        if self.compare_view is None:
            return
        try:
            tell(self.compare_view)
        except Exception:
            log.exception("telling the Compare strategies tab failed")

    def _show_failure(self, context: str, message: str) -> None:
        self.messages.show_message(f"{context} failed: {message}" if context else message, ERROR)

    def shutdown(self) -> None:
        """Stop background work: cancel indexing and pending tasks."""
        self.session.close()
        self.runner.cancel_all()
        self.tell_compare(CompareView.cancel)
        self.workspaces.close()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.save_settings()
        self.shutdown()
        super().closeEvent(event)
