"""Main window: workspace picker, query bar, rankings side by side, code view, index health."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QByteArray, QObject, QPoint, QSettings, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QContextMenuEvent, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView, QApplication, QBoxLayout, QPlainTextEdit, QToolTip, QDockWidget, QFileDialog, QLabel, QMainWindow, QMenu, QScrollArea, QSizePolicy, QSplitter, QStackedWidget, QTabWidget,
    QToolBar, QToolButton, QVBoxLayout, QWidget,
)

from services.core.errors import IndexBusyError
from services.core.models import (
    IndexHealth, IndexReport, ProgressEvent, QueryResult, ResultChunk, StrategyInfo, WatchEvent,
)
from ui.action_log import record
from ui.actions import FILE, RESULTS, VIEW, Place, menu_entries, placed_actions, window_action
from ui.async_runner import AsyncRunner
from ui.code_view import CodeView, preload_lexers
from ui.goto_dialog import GotoDialog
from ui.graph_view import GraphPanel
from ui.viewmodels.goto import GotoViewModel, hover_text
from ui.viewmodels.graph import GraphViewModel
from ui.compare import CompareView
from ui.editor_settings import EditorSettings
from ui.files_view import FilesView, FileStrip
from ui.health_panel import HealthPanel
from ui.message_bar import ERROR, INFO, WARNING, MessageBar
from ui.outline import OutlinePopup
from ui.palette import CommandPalette
from ui.query_bar import QueryBar
from ui.results_view import ResultsView
from ui.viewmodels.files import FilesViewModel, file_preview, files_first, heading_text
from ui.viewmodels.labels import LabelsViewModel
from ui.viewmodels.preferences import Preferences, recent_workspaces
from ui.why_view import ElidedLabel
from ui.viewmodels.progress import RunProgress, progress_text
from ui.viewmodels.results import empty_result_text, is_empty, one_line, same_chunk_row, summary_text, timings_text
from ui.viewmodels.strategies import fallback_strategies
from ui.viewmodels.workspace import INDEX, REBUILD, Offer, WorkspaceViewModel, health_offer
from ui.viewmodels.workspace_set import WorkspaceSetViewModel, counted
from ui.workspace_set import WorkspaceSetView

if TYPE_CHECKING:  # the window talks to an engine process; the engine itself is not loaded here
    from services.engine.protocol import Engine

log = logging.getLogger(__name__)
RUN_HEALTH_SECONDS = 3.0  # how often the health panel's counts are read during a run

ORGANIZATION = "KnowledgeExplorer"
APPLICATION = "KnowledgeExplorer"
AUTO_PLACE, BESIDE, BELOW = "auto", "beside", "below"  # where the code pane goes
BESIDE_FROM = 1200  # window width (px) from which "auto" puts the code beside the rankings


def app_settings() -> QSettings:
    return QSettings(ORGANIZATION, APPLICATION)


def splitter(orientation: Qt.Orientation) -> QSplitter:
    """A splitter whose panes never collapse."""
    split = QSplitter(orientation)
    split.setChildrenCollapsible(False)
    return split


def stretch(split: QSplitter, *factors: int) -> None:
    """Each pane's share of a resize."""
    for index, factor in enumerate(factors):
        split.setStretchFactor(index, factor)


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
        self.files_request = None  # (question, options, max files) of the question on screen
        self.questions: dict[str, str] = {}  # the question box's text per workspace, while the window is open
        self.answers: dict[str, QueryResult] = {}  # the last answer per workspace, while the window is open
        self.reading = False  # while the same question's new answer is shown: the code pane stays put
        self.crash_notice = ""  # the last run's crash, said until a workspace is open
        self.runner = AsyncRunner(self)
        self.run_progress = RunProgress()  # the run's bar and title percentage, never going backwards
        self._run_health = (0, 0.0)  # the step and time of the last health read during a run
        self._lexer_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ke-lexers")
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
        self.rerun_timer = QTimer(self)  # a burst of filter changes runs the question once
        self.rerun_timer.setSingleShot(True)
        self.rerun_timer.setInterval(250)
        self.rerun_timer.timeout.connect(self._rerun)
        self._build_layout()
        self.strategy_actions: list[QAction] = []  # "Use strategy: …", offered by the palette
        self.palette = CommandPalette(self, lambda: self.strategy_actions)
        self.finder = GotoDialog(self, GotoViewModel(service), lambda: self.workspace, self.open_definition)
        self.definitions = GotoViewModel(service)  # F12 in the code pane: go to symbol's answer, exact names first
        self.outline = OutlinePopup(self)
        self.finder.building = lambda: bool(self.health_panel.running) and not (self.health and self.health.indexed)
        self.editor_settings = EditorSettings(self.settings, self.code_views, self)  # Settings ▸ Editor
        self._build_actions()
        self._build_toolbar()
        self._build_menus()
        self._build_status_bar()
        self._connect()
        self.strategies_loaded = self._load_strategies()  # done once the engine has listed them
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
        self.code_place = AUTO_PLACE
        self.kept_splits: dict[str, QByteArray] = {}  # each split as the user left it (its saveState), by name
        for name, split, _sizes in self.layouts():
            split.splitterMoved.connect(lambda _pos, _index, n=name, sp=split: self.kept_splits.update({n: sp.saveState()}))
        self._arrange(True)
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

    def beside(self) -> bool:
        """Whether the code pane is beside the rankings (else below them)."""
        return self.code_place == BESIDE or self.code_place == AUTO_PLACE and self.width() >= BESIDE_FROM

    def place_code(self, place: str | None = None) -> None:
        """Put the code pane beside or below the rankings (`place`: the user's choice, kept; None: as the
        window's width wants it now)."""
        if place is not None:
            self.code_place = place
            self.settings.setValue("layout/code", place)
        if self.beside() != (self.arrangement.currentWidget() is self.bottom):
            self._arrange(self.beside())

    def _arrange(self, beside: bool) -> None:
        """Move the rankings, the lists, the code pane and the health panel into one arrangement's splitters,
        each split as the user left it in that arrangement (else as it first comes)."""
        explain, tabs = self.results.explain, self.graph.tabs
        if tabs.indexOf(explain) >= 0:
            tabs.removeTab(tabs.indexOf(explain))
        if beside:
            self.results.vertical.addWidget(explain)  # the why rows under the rankings
            self.splitter.insertWidget(0, self.results)
            self.splitter.insertWidget(1, self.graph)
            self.bottom.insertWidget(1, self.code)
            explain.show()  # a page of the lists' tabs, hidden while another page was shown
            stretch(self.splitter, 3, 1)
            stretch(self.bottom, 1, 1)
        else:
            self.below.insertWidget(0, self.results)
            self.below_row.insertWidget(0, self.code)
            self.below_row.insertWidget(1, self.graph)
            tabs.insertTab(0, explain, "Why")  # beside the code: the rankings keep their rows, the code its room
            tabs.setCurrentIndex(0)
            stretch(self.below, 2, 3)
            stretch(self.below_row, 1, 0)
        self.arrangement.setCurrentWidget(self.bottom if beside else self.below)
        QTimer.singleShot(0, self._restore_splits)  # once the arrangement is laid out at its new size

    def _restore_splits(self) -> None:
        for name, split, first in self.layouts():
            if self._laid_out(split, first):
                kept = self.kept_splits.get(name)
                if kept is None or not split.restoreState(kept):  # never dragged: as it first comes at this size
                    split.setSizes(first)

    @staticmethod
    def _in(split: QSplitter, arrangement) -> bool:
        return split is arrangement or arrangement.isAncestorOf(split)

    def _laid_out(self, split: QSplitter, first: list[int]) -> bool:
        """Whether `split` is part of the arrangement on screen, with its panes (the rankings' split loses
        the why rows to the lists' tabs when the code is below)."""
        return self._in(split, self.arrangement.currentWidget()) and split.count() == len(first)

    def layouts(self) -> tuple[tuple[str, QSplitter, list[int]], ...]:
        """Each kept split: its settings key, the splitter, its first sizes."""
        width, height = max(self.width(), 720), max(self.height(), 500)
        return (("layout/beside-column", self.splitter, [height * 70 // 100, height * 30 // 100]),
                ("layout/beside", self.bottom, [width * 52 // 100, width * 48 // 100]),
                ("layout/below", self.below, [height * 45 // 100, height * 55 // 100]),
                ("layout/below-row", self.below_row, [width - 360, 360]),
                ("layout/rankings-why", self.results.vertical, [height * 45 // 100, height * 25 // 100]))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        if hasattr(self, "place_actions"):  # built
            self.place_code()

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

    def _build_compare_view(self) -> QWidget | None:
        try:
            return CompareView(self.service, preferences=self.preferences)
        except Exception:  # its constructor failing must not take the main window down
            log.exception("CompareView could not be created")
            return None

    def _build_actions(self) -> None:
        """The window's own actions: the workspace, Quit, the tabs, and Open in editor (the preview of the
        tab on screen). The views build theirs; each declares its place (ui/actions.py)."""
        a = partial(window_action, self)
        self.open_action = a("Open workspace…", "Ctrl+O", self.choose_workspace, place=Place(10, FILE, 0, 0))
        self.quit_action = a("Quit", "Ctrl+Q", self.close, place=Place(30, FILE, 0, 1))
        self.editor_action = a("Open in editor", "Ctrl+E", self.open_selected,
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
        self._build_place_menu(built[VIEW].addMenu("Code &pane"))  # View ▸ Code pane
        editor = menus.addMenu("Se&ttings").addMenu("&Editor")
        editor.addActions(list(self.editor_settings.preset_actions.values()))
        editor.addSeparator()
        editor.addAction(self.editor_settings.custom_action)

    def _build_place_menu(self, menu: QMenu) -> None:
        """View ▸ Code pane: beside the rankings, below them, or as the window's width wants (kept)."""
        group = QActionGroup(self)
        self.place_actions: dict[str, QAction] = {}
        for place, label in ((AUTO_PLACE, f"Automatic: beside from {BESIDE_FROM:,} px wide, else below"),
                             (BESIDE, "Beside the rankings (the whole height)"),
                             (BELOW, "Below the rankings (the whole width)")):
            action = menu.addAction(label)
            action.setCheckable(True)
            action.triggered.connect(lambda _=False, p=place: self.place_code(p))
            group.addAction(action)
            self.place_actions[place] = action

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
        self.runner.busy_changed.connect(self._busy_changed)
        self.query_bar.submitted.connect(self.run_query)
        self.query_bar.strategy.currentIndexChanged.connect(self._strategy_changed)
        self.query_bar.filters_changed.connect(self._filters_changed)
        self.query_bar.history_changed.connect(self._save_history)
        self.query_bar.focus_requested.connect(self.focus_query)
        self.query_bar.query.leave_down.connect(lambda: self.results.focus_ranking(self.results.reranked_table))
        self.results.show_requested.connect(lambda: self.show_tab(self.explore))
        self.code.went_to.connect(self._went_to)
        self.health_panel.show_action.toggled.connect(self.health_dock.setVisible)
        self.health_dock.visibilityChanged.connect(  # its close button
            lambda _visible: self.health_panel.show_action.setChecked(not self.health_dock.isHidden()))
        self.results.chunk_selected.connect(self._result_selected)
        self.file_strip.file_chosen.connect(self.show_file)
        self.results.chunk_selected.connect(self._warn_if_deleted)
        self.graph.open_requested.connect(self.open_graph_row)
        self.graph.editor_requested.connect(self.open_graph_row_in_editor)
        for table in (self.results.original_table, self.results.reranked_table):
            table.activated.connect(lambda index, t=table: self.open_row(t, index.row()))
        self.results.label_requested.connect(self.label_result)
        self.results.reveal_requested.connect(self.reveal_in_folder)
        self.results.more_hits_requested.connect(self.more_hits_in_file)
        for view in self.code_views():
            view.open_failed.connect(lambda text: self.messages.show_message(text, WARNING, timeout_ms=8000))
            view.definition_requested.connect(self.go_to_definition)
            view.hover_requested.connect(self.explain_name)
            view.peek_requested.connect(lambda name, view=view: self.peek_definition(view, name))
            view.chunks_wanted.connect(lambda path, view=view: self.load_file_chunks(view, path))
            view.open_requested.connect(self.open_definition_here)
        self.code.outline_requested.connect(self.show_outline)
        self.outline.chosen.connect(self.open_definition_here)
        self.files_view.open_requested.connect(self.open_selected)  # Enter or double-click on a file
        self.workspace_set.open_requested.connect(self.open_selected)
        self.health_panel.reindex_requested.connect(self.request_index)
        self.health_panel.cancel_requested.connect(self.cancel_index)
        self.progress_received.connect(self._on_progress)
        self.watch_received.connect(self._on_watch_event)
        self.health_panel.auto_reindex.setChecked(self.preferences.auto_reindex)
        self.health_panel.auto_reindex.toggled.connect(self._auto_reindex_toggled)
        self.tabs.currentChanged.connect(lambda _index: self._carry_question())
        self.tabs.currentChanged.connect(lambda _index: self.refresh_files())
        self.tabs.currentChanged.connect(lambda _index: self.refresh_workspace_set())
        self.workspace_set.changed.connect(self.refresh_workspace_set)
        if self.compare_view is not None:  # per-query rows open in Explore; a chosen default applies
            self.compare_view.query_opened.connect(self.open_question)
            self.compare_view.default_strategy_chosen.connect(self.query_bar.select_strategy)

    def open_question(self, text: str) -> None:
        self.tabs.setCurrentWidget(self.explore)
        self.run_query(text)

    def _load_strategies(self) -> asyncio.Task:
        """The fallback list until the engine answers (an engine process may still be starting)."""
        self._show_strategies(fallback_strategies())
        return self.runner.run(self.service.strategies(), key="strategies", context="Listing reranking strategies",
                               on_result=lambda infos: self._show_strategies(infos or fallback_strategies()))

    def _show_strategies(self, strategies: list[StrategyInfo]) -> None:
        self.results.set_strategies(strategies)
        self.query_bar.set_strategies(strategies, self.preferences.strategy(self.workspace))
        self.strategy_actions = []
        for info in strategies:
            action = QAction(f"Use strategy: {info.label or info.name}", self)
            action.setToolTip(f"{info.name}: {info.description}")
            action.setEnabled(info.available)
            action.triggered.connect(lambda _=False, name=info.name: self.query_bar.select_strategy(name))
            self.strategy_actions.append(action)

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
        for name, _splitter, _sizes in self.layouts():
            saved = self.settings.value(name)
            if isinstance(saved, QByteArray):
                self.kept_splits[name] = saved  # applied when its arrangement is laid out (_restore_splits)
        shown = self.settings.value("healthVisible", "false") in (True, "true")
        self.health_panel.show_action.setChecked(shown)
        self.health_dock.setVisible(shown)
        self.code.whole_file.setChecked(self.settings.value("code/wholeFile", "true") in (True, "true"))
        place = str(self.settings.value("layout/code", AUTO_PLACE))
        self.place_actions[place if place in self.place_actions else AUTO_PLACE].setChecked(True)
        self.place_code(place if place in self.place_actions else AUTO_PLACE)
        self.query_bar.top_k.setValue(self.preferences.top_k())
        self._fill_recent_menu()

    def save_settings(self) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("windowState", self.saveState())
        for name, splitter, sizes in self.layouts():
            if self._laid_out(splitter, sizes):
                self.kept_splits[name] = splitter.saveState()
            if name in self.kept_splits:  # the hidden arrangement's as the user left it, if ever
                self.settings.setValue(name, self.kept_splits[name])
        self.settings.setValue("healthVisible", self.health_panel.show_action.isChecked())
        self.settings.setValue("code/wholeFile", self.code.whole_file.isChecked())
        self.preferences.save_strategy(self.workspace, self.query_bar.strategy_name())
        self.settings.setValue("topK", self.query_bar.top_k.value())
        self._save_filters()
        self._save_history()
        if self.workspace:
            self.settings.setValue("lastWorkspace", self.workspace)
            self.preferences.save_question(self.workspace, self.query_bar.query.text())
        self.settings.sync()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = recent_workspaces(self.settings)
        for path in recent:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _checked=False, p=path: self.open_workspace(p))
        self.recent_button.setEnabled(bool(recent))
        self.workspace_set.set_candidates(self.workspace, recent)

    # --------------------------------------------------------------- workspace
    def choose_workspace(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open workspace", self.workspace or str(Path.home()))
        if path:
            self.open_workspace(path)

    def open_workspace(self, path: str) -> asyncio.Task:
        """Switch to `path`: show its health at once, offer indexing when there is no index."""
        if self.workspace:
            self.questions[self.workspace] = self.query_bar.query.text()
            self.preferences.save_question(self.workspace, self.query_bar.query.text())
        self._clear_state()
        if self.crash_notice:
            self.messages.show_message(self.crash_notice, WARNING)
            self.crash_notice = ""
        path = self.session.open(path)
        # each workspace keeps its own question and strategy, and shows its last answer until it is asked again
        self.query_bar.query.setText(self.questions.get(path, self.preferences.question(path)))
        self.code.set_workspace(path)
        self.files_view.code.set_workspace(path)
        self.workspace_label.setText(path)
        self.setWindowTitle(f"Knowledge Explorer — {Path(path).name}")
        self._fill_recent_menu()
        self._restore_workspace_state(path)
        self._tell_compare("set_workspace", path)
        self._tell_compare("set_question", self.query_bar.query.text())
        if self.preferences.own_strategy(path):  # after Compare's saved default: the last choice here wins
            self.query_bar.select_strategy(self.preferences.own_strategy(path))
        self.health_panel.set_health(IndexHealth(workspace=path, indexed=False))
        self.health_panel.badge.setText("checking…")
        if path in self.answers and self.answers[path].question == self.query_bar.query.text().strip():
            self.show_result(self.answers[path])
        return self.runner.run(self._load_workspace(path), key="workspace", context="Opening workspace",
                               on_result=lambda _health: self._answer_again(path), on_error=self._health_failed)

    def _answer_again(self, path: str) -> None:
        """Once a reopened workspace is read, its question is answered again from its index (the last
        answer, shown meanwhile, may predate changes)."""
        if path == self.workspace and self.query_bar.query.text().strip():
            self.run_query(remember=False)

    def _clear_state(self) -> None:
        """Forget everything shown for the previous workspace: results, status, banners."""
        self.rerun_timer.stop()
        self.runner.cancel("query")
        self.messages.hide()
        self.health_scroll.verticalScrollBar().setValue(0)  # each workspace's panel opens at its top
        if not self.health_panel.running:
            self.health_panel.progress_label.setText("")  # the last run's outcome was the other workspace's
        self.results.set_result(None)
        self.runner.cancel("files")
        self.files_request = None
        self.files_view.set_answer(None)
        self.file_strip.set_answer(None)
        self.code.show_chunk(None)
        self.code.navigation.clear()
        self.code.update_navigation()  # nowhere to go back to in the new workspace
        self.status_results.setText("")
        self.timings_label.setText("")
        self.cache_label.hide()

    def _restore_workspace_state(self, path: str) -> None:
        """Each workspace has its own filters and question history."""
        self.query_bar.set_filters(*self.preferences.filters(path))
        self.query_bar.set_history(*self.preferences.history(path))

    def _save_filters(self) -> None:
        if self.workspace:
            self.preferences.save_filters(self.workspace, self.query_bar.selected_languages(),
                                          self.query_bar.path_glob.text())

    def _save_history(self) -> None:
        if self.workspace:
            self.preferences.save_history(self.workspace, self.query_bar.recent, self.query_bar.pinned)

    def _load_workspace(self, path: str):
        """Read `path`'s health and show it, its symbols; watch it (a coroutine for the runner)."""
        return self.session.load(path, self._apply_health, self.query_bar.set_symbols, self.watch_received.emit)

    # ---------------------------------------------------------------- watching
    def _auto_reindex_toggled(self, on: bool) -> None:
        if self.session.set_auto_reindex(on):
            self.runner.run(self.session.watch(self.workspace, self.watch_received.emit), key="watch",
                            context="Watching the workspace")

    def _on_watch_event(self, event: WatchEvent) -> None:
        reaction = self.session.reaction(event, self.health_panel.is_indexing())
        if reaction is None:
            return
        if reaction.auto_run:
            self.health_panel.auto_started()
            self._show_run_status("Indexing changed files…", None)
            self._hide_health_offer()
        elif reaction.auto_run is False:
            self.health_panel.auto_finished()
            self._show_run_status("", None)
        if reaction.progress is not None:
            self.health_panel.auto_started()
            self._on_progress(reaction.progress)
        if reaction.progress_text is not None:
            self.health_panel.progress_label.setText(reaction.progress_text)
        if reaction.reload_health:
            # its own key: a refresh must not cancel the opening of the workspace, which may be what
            # started the watch (and whose caller, e.g. --screenshot, awaits it)
            self.runner.run(self._load_workspace(self.workspace), key="watch-health",
                            context="Reading index health", on_error=self._health_failed)
        if reaction.refresh_results:
            self.refresh_results()
        if reaction.error:
            self.messages.show_message(reaction.error, ERROR)

    def _warn_if_deleted(self, item) -> None:
        if item is not None and item.stale == "deleted":
            self.messages.show_message(f"{item.chunk.path} was deleted since it was indexed; the code "
                                       "shown is the indexed copy.", WARNING)

    def _health_failed(self, exc: BaseException) -> None:
        """The badge must not stay on "checking…": show why (another owner, or the error)."""
        if isinstance(exc, IndexBusyError):
            self.health_panel.set_busy_owner(str(exc))
        elif (health := self.session.failed_health(exc)) is not None:
            self.health_panel.set_health(health)

    def _apply_health(self, health: IndexHealth) -> None:
        if health.languages and not self.session.closed:
            work = asyncio.get_running_loop().run_in_executor(self._lexer_pool, preload_lexers,
                                                              sorted(health.languages))
            self.runner.run(work, key="lexers", context="Loading syntax highlighters")
        self.health_panel.set_health(health)
        self.query_bar.set_languages(list(health.languages))
        # while a run is under way its progress is the news: no offer to index what it is indexing
        offer = None if self.health_panel.running else health_offer(health, self.session.paused)
        if offer is not None:
            self._show_offer(offer)
            self.session.health_message = self.messages.text()
        elif self.messages.isVisible() and self.messages.text() == self.session.health_message:
            self.messages.hide()  # only the health's own offer; a query's banner stays

    def _hide_health_offer(self) -> None:
        """A run started: the health's banner (e.g. "stopped at … · Resume indexing") no longer holds."""
        if self.messages.isVisible() and self.messages.text() == self.session.health_message:
            self.messages.hide()

    def _show_offer(self, offer: Offer) -> None:
        full = offer.action == REBUILD  # a full rebuild asks first, from the banner as from Ctrl+Shift+R
        action = (lambda: self.request_index(full)) if offer.action in (INDEX, REBUILD) else None
        self.messages.show_message(offer.text, offer.level, action_text=offer.action_text, action=action)

    def warm_up(self) -> asyncio.Task:
        """Load the embedding model in the background so the first query and index start at once."""
        return self.runner.run(self.service.warm_up(), key="warmup", context="Loading the model")

    def refresh_health(self) -> asyncio.Task:
        return self.runner.run(self._load_workspace(self.workspace), key="workspace",
                               context="Reading index health", on_error=self._health_failed)

    # ---------------------------------------------------------------- indexing
    def request_index(self, full: bool = False) -> asyncio.Task | None:
        """Reindex at once; a full rebuild asks first (inline, nothing modal)."""
        if not full or not self.workspace or self.runner.is_running("index"):
            return self.start_index(full)
        self.messages.show_message(self.session.rebuild_question(), WARNING,
                                   action_text="Rebuild", action=lambda: self.start_index(True))
        return None

    def start_index(self, full: bool = False) -> asyncio.Task | None:
        if not self.workspace:
            self.messages.show_message("Open a workspace first.", WARNING)
            return None
        if self.runner.is_running("index"):
            return None
        cancel = self.session.begin_index()
        if self.messages.level in (INFO, WARNING):
            self.messages.hide()  # the "not indexed" / "out of date" offer is being acted on
        self.health_panel.indexing_started(full)
        return self.runner.run(self._index(self.workspace, full, cancel), key="index",
                               context="Indexing", on_error=self._index_failed)

    async def _index(self, path: str, full: bool, cancel) -> IndexReport:
        self._show_run_status("Full rebuild: starting…" if full else "Reindex: starting…", None)
        report, message = await self.session.index(path, full, self.progress_received.emit, cancel)
        self.health_panel.indexing_finished(message)
        self._show_run_status("", None)
        if path == self.workspace:
            await self._load_workspace(path)
            if not report.cancelled:
                self.refresh_results()
        return report

    def refresh_results(self) -> None:
        """Answer the question on screen again from the index just updated (unless a new one is being typed)."""
        if self.session.question_carried(self.query_bar.query.text()):
            self.run_query()

    def _index_failed(self, exc: BaseException) -> None:
        self.run_progress.end()
        self.health_panel.indexing_finished("Indexing failed")
        self._show_run_status("", None)
        if self.workspace:
            self.refresh_health()

    def cancel_index(self) -> None:
        """Ctrl+.: cancel the run under way, the window's own or the engine's automatic one."""
        if self.session.cancel_index():
            self.health_panel.progress_label.setText("Cancelling…")
            self.health_panel.show_cancelling()
            self._show_run_status("Cancelling: stops after the files being embedded…", None)
        elif self.health_panel.running == "auto":
            self.health_panel.progress_label.setText("Cancelling…")
            self.health_panel.show_cancelling()
            self._show_run_status("Cancelling: stops after the files being embedded…", None)
            self.runner.run(self.session.pause_automatic_runs(), key="stop-auto", context="Cancelling indexing",
                            on_result=lambda _none: self._automatic_runs_stopped())

    def _automatic_runs_stopped(self) -> None:
        self.health_panel.auto_finished()
        self.health_panel.progress_label.setText("Cancelled; the index keeps what was finished. Automatic "
                                                 "indexing is paused until Resume or Reindex (F5).")
        self._show_run_status("", None)
        self.refresh_health()

    def _on_progress(self, event: ProgressEvent) -> None:
        self.session.progress_events.append(event)
        if event.phase in ("done", "cancelled"):
            self.run_progress.end()
            self.health_panel.show_progress(event)
            return
        percent = self.run_progress.percent(event)  # never backwards, in the title and on the bar alike
        self.health_panel.show_progress(event, self.run_progress.shown)
        self._show_run_status(progress_text(event, percent), percent)
        self._health_during_run(event)

    def _health_during_run(self, event: ProgressEvent) -> None:
        """The panel's files, chunks and vectors as a run makes them (and, after step 1, the names for
        Ctrl+T): read again when a step begins and every few seconds."""
        now = time.monotonic()
        if event.step == self._run_health[0] and now - self._run_health[1] < RUN_HEALTH_SECONDS:
            return
        self._run_health = (event.step, now)
        self.runner.run(self._load_workspace(self.workspace), key="run-health", context="Reading index health",
                        on_error=self._health_failed)

    def _show_run_status(self, text: str, percent: int | None) -> None:
        """A run's progress in the status bar (its text names the device once) and the window title, with
        the same percentage as the panel's bar; "" when none."""
        self.index_status.setText(text)
        self.index_status.setVisible(bool(text))
        name = Path(self.workspace).name if self.workspace else ""
        title = f"Knowledge Explorer — {name}" if name else "Knowledge Explorer"
        if text:
            title += f" — indexing {percent} %" if percent is not None else " — indexing"
        self.setWindowTitle(title)

    # ------------------------------------------------------------------ query
    def run_query(self, text: str | None = None, remember: bool = True) -> asyncio.Task | None:
        """Run the query in the box (or `text`); a query still running is cancelled. `remember`: put it
        first in the question history (not for a question asked again by the window itself)."""
        if text is not None:
            self.query_bar.query.setText(text)
        question = self.query_bar.query.text().strip()
        if not question:
            return None
        if not self.workspace:
            self.messages.show_message("Open a workspace first.", WARNING)
            return None
        self.rerun_timer.stop()
        self.query_bar.completer.popup().hide()  # Enter ran the question; no completion is pending
        if self.messages.level == INFO:
            self.messages.hide()  # the previous question's note
        if remember:
            self.query_bar.remember(question)
        record("question (%s): %s", self.query_bar.strategy_name(), one_line(question)[:120])
        self.status_results.setText(f"Searching for “{one_line(question)}”…")
        self._tell_compare("set_question", question)
        bar = self.query_bar
        options = self.session.options(bar.top_k.value(), bar.strategy_name(), bar.selected_languages(),
                                       bar.path_glob.text())
        if self.files_request is None or self.files_request[0] != question:
            self.runner.cancel("files")  # the newest question wins
            self.file_strip.set_answer(None)
        self.files_request = (question, options, bar.top_k.value())
        self.refresh_files()
        self.refresh_workspace_set()
        return self.runner.run(self.session.query(question, options), key="query",
                               context="Query", on_result=self.show_result,
                               on_error=lambda _exc: self.status_results.setText("Query failed"))

    def refresh_files(self) -> asyncio.Task | None:
        """Answer the question on screen as files (once per question): while the Files tab is on screen, and
        for Explore's strip once the chunk answer says the engine is surer of files (so it never competes
        with the chunk answer); shown where it is wanted when it arrives."""
        if self.files_request is None:
            return None
        question, options, max_files = self.files_request
        if self.files.is_current(question, options):
            self._show_files(self.files.answer)
            return None
        if self.tabs.currentWidget() is not self.files_view and not self._files_first(question):
            return None
        self.files_view.title.setText(f"Finding the files for “{one_line(question)}”…")
        return self.runner.run(self.files.find(question, options, max_files), key="files", context="Files",
                               on_result=self._show_files)

    def _files_first(self, question: str) -> bool:
        """Whether Explore's answer on screen is to `question` and leads with its files (files_first)."""
        result = self.last_result
        return result is not None and result.question == question and files_first(result)

    def _show_files(self, answer) -> None:
        self.files_view.set_answer(answer)
        wanted = answer is not None and self._files_first(answer.question)
        if not wanted or self.file_strip.answer is not answer:  # the same answer again keeps the reader's choice
            self.file_strip.set_answer(answer if wanted else None)

    def show_file(self, file) -> None:
        """A file of Explore's strip: the code pane shows it at its best chunk (a place Back returns to), the
        why view says why it ranks there, and no ranking row stays selected."""
        answer = self.file_strip.answer
        if answer is None or not self.workspace:
            return
        for table in (self.results.original_table, self.results.reranked_table):
            table.clearSelection()
        self.show_code(file_preview(self.workspace, file), "file")
        self.results.why.set_file(heading_text(answer, file), file.signals)

    def refresh_workspace_set(self) -> asyncio.Task | None:
        """While the Several workspaces tab is on screen, ask the question on screen over the open workspace
        and the ticked ones (once per question and set)."""
        also = self.workspace_set.also()
        if self.tabs.currentWidget() is not self.workspace_set or self.files_request is None or not also:
            return None
        question, options, _ = self.files_request
        workspaces = [self.workspace, *also]
        if self.workspace_set_model.is_current(question, options, workspaces):
            return None
        self.workspace_set.title.setText(f"Searching {counted(len(workspaces), 'workspace')} for “{question}”…")
        return self.runner.run(self.workspace_set_model.ask(question, options, workspaces), key="workspace-set",
                               context="Several workspaces", on_result=self._show_workspace_set)

    def _show_workspace_set(self, result) -> None:
        """The merged answer; a ticked workspace not indexed yet is said, with an action that indexes it (the
        others answered meanwhile)."""
        self.workspace_set.set_result(result)
        for path, _reason in list(result.unanswered.items())[:1]:
            name = Path(path).name
            more = len(result.unanswered) - 1
            self.messages.show_message(
                f"{name} is not indexed yet{f' (and {more} more)' if more else ''}: the other workspaces answered.",
                WARNING, action_text=f"Index {name}", action=lambda p=path: self.index_other(p))

    def index_other(self, path: str) -> asyncio.Task:
        """Index a workspace other than the open one (the Several workspaces tab's "Index it"), then ask again."""
        self.workspace_set.title.setText(f"Indexing {Path(path).name}…")
        record("index another workspace: %s", path)

        def done(_report) -> None:
            self.workspace_set_model.asked = None
            self.refresh_workspace_set()

        return self.runner.run(self.service.index(path), key="index-other", context=f"Indexing {Path(path).name}",
                               on_result=done)

    def _strategy_changed(self, _index: int) -> None:
        """Switching strategy re-runs the question on screen, so rankings can be compared quickly; each
        workspace remembers its own."""
        if self.workspace and self.query_bar.strategy_name():
            self.preferences.save_strategy(self.workspace, self.query_bar.strategy_name())
        if self.session.rerun_on_change(self.query_bar.query.text()):
            self.run_query()

    def _filters_changed(self) -> None:
        """A filter or the result count changed: save the workspace's filters, run the question again."""
        self._save_filters()
        if self.session.rerun_on_change(self.query_bar.query.text()):
            self.rerun_timer.start()

    def _rerun(self) -> None:
        if self.last_result is not None:
            self.run_query()

    def show_result(self, result: QueryResult) -> None:
        """Show an answer; the same question answered again (a refresh after an edit or a recount, another
        strategy) updates the rankings in place with the selected chunk still selected, and leaves the code
        pane where the reader is (a file saved meanwhile is shown again at the same place); a new question
        selects the top result and shows it."""
        shown, selected = self.session.last_result, self.results.selected_chunk()
        self.session.last_result = result
        if self.workspace:
            self.answers[self.workspace] = result
        if self.messages.level == ERROR:
            self.messages.hide()
        same_question = shown is not None and shown.question == result.question
        self.reading = same_question and self.code.item is not None
        try:
            self.results.set_result(result)
            if not (same_question and selected is not None and self.results.select_chunk(selected.chunk)):
                self._select_first()
        finally:
            self.reading = False
        if same_question and self.code.changed_on_disk():
            self.code.show_again(self._in_answer(self.code.item, result))
        if not files_first(result):
            self.file_strip.set_answer(None)
        self.refresh_files()
        filters = self.query_bar.filters_text()
        self.status_results.setText(summary_text(result, filters))
        self.timings_label.setText(timings_text(result))
        self.cache_label.setText("cache hit" if result.cache_hit else "cache miss")
        self.cache_label.show()
        self.cache_label.setProperty("hit", result.cache_hit)
        self.cache_label.style().unpolish(self.cache_label)
        self.cache_label.style().polish(self.cache_label)
        if is_empty(result):
            clear = "Clear filters" if filters else ""
            self.messages.show_message(empty_result_text(result, filters), INFO,
                                       action_text=clear, action=self.query_bar.clear_filters if clear else None)
        elif result.question_note:  # a long question: its length against the limit, and how it was read
            self.messages.show_message(result.question_note[:1].upper() + result.question_note[1:] + ".", INFO)

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
        table = self.results.reranked_table if self.results.reranked_model.rowCount() else self.results.original_table
        if table.model().rowCount():
            table.selectRow(0)

    # ------------------------------------------------------------ keyboard
    def focus_query(self) -> None:
        """Ctrl+L: the question box of the tab on screen."""
        compare_question = getattr(self.compare_view, "question", None)
        if self.tabs is not None and self.tabs.currentWidget() is self.compare_view and compare_question is not None:
            box = compare_question
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

    def open_row(self, table, row: int) -> None:
        """Enter or double-click on a result: open it in the editor."""
        item = table.model().item(row)
        if item is not None and self.code.item is not item:
            self.code.show_chunk(item)
        self.code.open_in_editor()

    def open_definition(self, item, in_editor: bool) -> None:
        """A match of go to file / symbol: shown in the code pane at its line; Ctrl+E opens the editor too."""
        self.show_tab(self.explore)
        self.show_code(item)
        if in_editor:
            self.code.open_in_editor()

    def go_to_definition(self, name: str) -> asyncio.Task | None:
        """F12 / Ctrl+click in a code pane: the definition of `name` (`Class.method` or a bare name) as the
        engine's go to symbol finds it (the one name resolver), shown in the Explore code pane, a place Back
        returns from; none found is said in one line."""
        if not self.workspace:
            return None
        record("go to definition: %s", name)
        return self.runner.run(self.definitions.definition(name, self.workspace), key="definition",
                               context="Go to definition", on_result=lambda item: self._show_definition(name, item))

    def peek_definition(self, view: CodeView, name: str) -> asyncio.Task | None:
        """Alt+F12 in a code pane: the definition of `name` (as F12 finds it) in a frame there; none found is
        said in one line."""
        if not self.workspace:
            return None
        return self.runner.run(self.definitions.definition(name, self.workspace), key="peek", context="Peek definition",
                               on_result=lambda item: view.show_peek(item) if item is not None else
                               self.messages.show_message(f"No definition of {name} in the index.", INFO,
                                                          timeout_ms=6000))

    def load_file_chunks(self, view: CodeView, path: str) -> asyncio.Task | None:
        """A code pane shows `path`: its chunks for the breadcrumbs (and the outline); none is said by nothing."""
        if not self.workspace:
            return None
        return self.runner.run(self.session.outline(path), key=f"chunks-{id(view)}", context="",
                               on_result=lambda items: view.set_file_chunks(path, items), on_error=lambda _error: None)

    def explain_name(self, name: str, where: QPoint) -> asyncio.Task | None:
        """The mouse rests on a name in a code pane: its signature and docstring in a tooltip there (its
        definition as go to definition finds it; nothing for a name with none)."""
        if not self.workspace:
            return None
        return self.runner.run(self.definitions.definition(name, self.workspace), key="hover", context="",
                               on_result=lambda item: self._show_hover(item, where),
                               on_error=lambda _error: None)  # a hover that finds nothing says nothing

    def _show_hover(self, item: ResultChunk | None, where: QPoint) -> None:
        if item is not None:
            QToolTip.showText(where, hover_text(item))

    def _show_definition(self, name: str, item: ResultChunk | None) -> None:
        if item is None:
            self.messages.show_message(f"No definition of {name} in the index.", INFO, timeout_ms=6000)
            return
        self.open_definition(item, False)
        self.code.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_outline(self) -> asyncio.Task | None:
        """Ctrl+F12: the chunks the index has for the file in the code pane, in file order."""
        item = self.code.item
        if item is None or not self.workspace:
            return None
        path = item.chunk.path

        def shown(items: list[ResultChunk]) -> None:  # asked afresh (an index run may have cut the file anew)
            self.code.set_file_chunks(path, items)
            self.outline.show_outline(path, items, self.code)

        return self.runner.run(self.session.outline(path), key="outline", context="Outline", on_result=shown)

    def open_definition_here(self, item: ResultChunk) -> None:
        """An outline row: the code pane goes there (a place Back returns from)."""
        self.show_code(item)
        self.code.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def open_graph_row(self, item: ResultChunk) -> None:
        """A "Used by" / "Uses" row: the code pane goes there, the lists stay (as an editor's usages view)."""
        self.show_tab(self.explore)
        self.show_code(item, follow=False)

    def _result_selected(self, item: ResultChunk | None) -> None:
        """A row selected shows its code, unless the rankings are being refreshed under the reader."""
        if not self.reading:
            self.show_code(item, "result")
        if item is not None:
            self.file_strip.clear_choice()

    def open_graph_row_in_editor(self, item: ResultChunk) -> None:
        """A "Used by" / "Uses" row's Open in editor: shown in the code pane, opened in the editor at its line."""
        self.open_graph_row(item)
        self.code.open_in_editor()

    def show_code(self, item: ResultChunk | None, kind: str = "jump", remember: bool = True,
                  follow: bool = True) -> None:
        """Every jump of the code pane comes here: it shows `item`, "Used by" / "Uses" follow it (unless the
        jump came from those lists), and it is a place Back returns to."""
        if self.code.item is not item:
            if remember:
                self.code.leave_place()
            self.code.show_chunk(item)
        if follow:
            self.graph.show_for(item)
        if item is not None and remember:
            record("code: %s:%s", item.chunk.path, item.chunk.start_line)
            self.code.navigation.visit(item, kind)
        self.code.update_navigation()

    def _went_to(self, item: ResultChunk) -> None:
        """Back / Forward: the place again, in the Explore tab."""
        self.show_tab(self.explore)
        self.show_code(item, remember=False)

    def code_views(self) -> list[CodeView]:
        """The previews: Explore's, Files', Several workspaces', Compare strategies'."""
        compare = [self.compare_view.code] if isinstance(self.compare_view, CompareView) else []
        return [self.code, self.files_view.code, self.workspace_set.code, *compare]

    def shown_code_view(self) -> CodeView:
        """The preview of the tab on screen (Explore's when that tab has none)."""
        views = {id(self.files_view): self.files_view.code, id(self.workspace_set): self.workspace_set.code}
        if isinstance(self.compare_view, CompareView):
            views[id(self.compare_view)] = self.compare_view.code
        return views.get(id(self.tabs.currentWidget()), self.code)

    def open_selected(self) -> None:
        """Ctrl+E (and Enter or double-click on a file or a hit): open the row you see in the editor."""
        view = self.shown_code_view()
        if view.item is None:
            self.messages.show_message("Select a result first.", INFO, timeout_ms=4000)
            return
        view.open_in_editor()

    # ------------------------------------------------------------------ misc
    def _tell_compare(self, method: str, *args) -> None:
        """Keep the compare tab on the same workspace and question (its API: set_workspace, set_question)."""
        target = getattr(self.compare_view, method, None)
        if target is None:
            return
        try:
            target(*args)
        except Exception:
            log.exception("CompareView.%s failed", method)

    def reveal_in_folder(self, item) -> None:
        """Open the folder holding the result's file in the file manager (the file's own folder)."""
        folder = (Path(self.workspace) / item.chunk.path).parent
        if not folder.is_dir():
            self.messages.show_message(f"{folder} is not there any more.", WARNING)
            return
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def more_hits_in_file(self, item) -> None:
        """The question on screen again, within the result's file (the Paths filter; Clear filters undoes it)."""
        self.query_bar.path_glob.setText(item.chunk.path)
        self.run_query()

    def label_result(self, item, relevant: bool) -> asyncio.Task | None:
        """Record a relevance label for the current question (the Compare view evaluates with them)."""
        if self.last_result is None or not self.workspace:
            return None
        return self.runner.run(self.labels.mark(self.workspace, self.last_result.question, item, relevant),
                               context="Saving the label",
                               on_result=lambda text: self.messages.show_message(text, INFO))

    def report_last_crash(self, log_path, report) -> None:
        """At start, after a run that did not end cleanly: say so, and where to look (said again once the
        first workspace is open: opening one clears the banner)."""
        self.crash_notice = (f"The app stopped unexpectedly last time; the log is at {log_path} (the last "
                             f"actions and the traceback: {report}).")
        self.messages.show_message(self.crash_notice, WARNING)

    def _show_failure(self, context: str, message: str) -> None:
        self.messages.show_message(f"{context} failed: {message}" if context else message, ERROR)

    def _busy_changed(self, key: str, running: bool) -> None:
        if key == "query":
            self.query_bar.search_button.setText("Searching…" if running else "Search")

    def shutdown(self) -> None:
        """Stop background work: cancel indexing and pending tasks."""
        self.session.close()
        self.runner.cancel_all()
        self._tell_compare("cancel")
        self._lexer_pool.shutdown(wait=False, cancel_futures=True)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.save_settings()
        self.shutdown()
        super().closeEvent(event)
