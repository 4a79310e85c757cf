""""Used by" and "Uses" for the selected result: two call trees, their first level grouped by file, each
row opening the code pane at its line (click or Enter) and expanding in place (one level deeper, asked of
the engine when expanded, a loading row meanwhile). The logic is ui/viewmodels/graph.py; Alt+F7 /
Ctrl+Alt+H (its actions) show each tree."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QMenu, QTabWidget, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from services.core.models import ResultChunk
from ui.actions import RESULTS, Place, window_action
from ui.async_runner import AsyncRunner, describe_error
from ui.viewmodels.graph import CODE, SECTIONS, USED_BY, USES, CallRow, GraphViewModel, Level, link_item

LinkRole = Qt.ItemDataRole.UserRole + 1
RowRole = Qt.ItemDataRole.UserRole + 2  # a CallRow; None once its children are asked for
LOADING = "Loading…"


class GraphPanel(QWidget):
    """`workspace()` names the open workspace; `subject()` another name to list for (Alt+F7 / Ctrl+Alt+H), or
    None to list for what was shown; `open_requested(ResultChunk)` asks to show a row's code."""

    open_requested = Signal(object)
    editor_requested = Signal(object)  # a row's ResultChunk, to open in the editor at its line

    def __init__(self, model: GraphViewModel, workspace: Callable[[], str],
                 subject: Callable[[], ResultChunk | None]) -> None:
        super().__init__()
        self.setObjectName("graphPanel")
        self.model, self.workspace, self.subject = model, workspace, subject
        self.runner = AsyncRunner(self)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.setUsesScrollButtons(False)  # a long name is cut ("Used by Session.fr…"), whole in its tooltip
        self.tabs.setElideMode(Qt.TextElideMode.ElideRight)
        self.lists: dict[str, QTreeWidget] = {}
        for direction in (USED_BY, USES):
            tree = QTreeWidget()
            tree.setHeaderHidden(True)
            tree.setRootIsDecorated(True)
            tree.itemClicked.connect(self._open)
            tree.itemActivated.connect(self._open)
            tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            tree.customContextMenuRequested.connect(lambda pos, t=tree: self._row_menu(t, pos))
            tree.itemExpanded.connect(lambda item, d=direction: self._expanded(d, item))
            self.lists[direction] = tree
            self.tabs.addTab(tree, self.model.title(direction))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.tabs)
        self._fill()
        # PyCharm's and VS Code's keys (Ctrl+Alt+F7 switches to a text console on Linux desktops)
        self.used_by_action = window_action(self, "Used by: who uses the code shown (the name under the cursor)",
                                            ["Alt+F7", "Shift+F12"], lambda: self.list_subject(USED_BY),
                                            place=Place(240, RESULTS, 1, 0))
        self.uses_action = window_action(self, "Uses: what the code shown uses (call hierarchy)",
                                         ["Ctrl+Alt+H", "Shift+Alt+H"], lambda: self.list_subject(USES),
                                         place=Place(250, RESULTS, 1, 1))

    def show_for(self, item: ResultChunk | None):
        """Ask for both lists of `item` (a task: the window never waits on it)."""
        return self.runner.run(self._load(item), key="graph", context="Used by / Uses")

    async def _load(self, item: ResultChunk | None) -> None:
        if await self.model.load(self.workspace(), item):
            self._fill()

    def list_subject(self, direction: str) -> None:
        """A list for `subject()` when there is one (else for what was shown), given the keyboard."""
        subject = self.subject()
        if subject is not None:
            self.show_for(subject)
        self.show_list(direction)

    def show_list(self, direction: str) -> None:
        """Bring a list forward and give it the keyboard (its first row selected)."""
        tree = self.lists[direction]
        self.tabs.setCurrentWidget(tree)
        tree.setFocus()
        current = tree.currentItem()
        if (current is None or current.data(0, LinkRole) is None) and tree.topLevelItemCount():
            first = tree.topLevelItem(0)
            tree.setCurrentItem(first.child(0) if first.childCount() else first)

    def _fill(self) -> None:
        for direction, tree in self.lists.items():
            tree.clear()
            groups = self.model.groups(direction)
            section = CODE
            for group in groups:
                if group.section != section:  # tests, then documentation, headed apart from the code
                    section = group.section
                    title = QTreeWidgetItem([SECTIONS[section]])
                    title.setFlags(Qt.ItemFlag.NoItemFlags)
                    font = title.font(0)
                    font.setBold(True)
                    title.setFont(0, font)
                    tree.addTopLevelItem(title)
                heading = QTreeWidgetItem([group.heading])
                heading.setFlags(Qt.ItemFlag.ItemIsEnabled)
                for row in group.rows:
                    add_row(heading, row)
                tree.addTopLevelItem(heading)
                heading.setExpanded(True)
            if not groups:
                tree.addTopLevelItem(note_item(self.model.empty_text(direction)))
            self.tabs.setTabText(self.tabs.indexOf(tree), self.model.title(direction))
            self.tabs.setTabToolTip(self.tabs.indexOf(tree), self.model.title(direction))

    def _expanded(self, direction: str, item: QTreeWidgetItem) -> None:
        """A row expanded the first time: a loading row, while the engine is asked for the next level."""
        row = item.data(0, RowRole)
        if not isinstance(row, CallRow):
            return
        item.setData(0, RowRole, None)
        item.addChild(note_item(LOADING))
        asked = self.model.generation

        def failed(exc: BaseException) -> None:
            if asked == self.model.generation:  # else the tree was filled anew: `item` is gone
                self._failed(item, row, exc)

        self.runner.run(self._expand(direction, item, row), context="Call tree", on_error=failed)

    async def _expand(self, direction: str, item: QTreeWidgetItem, row: CallRow) -> None:
        level = await self.model.expand(self.workspace(), direction, row)
        if level is not None:  # else the tree was filled anew meanwhile: `item` is gone
            self._fill_level(item, level)

    def _fill_level(self, item: QTreeWidgetItem, level: Level) -> None:
        item.takeChildren()
        for row in level.rows:
            add_row(item, row)
        if level.empty:
            item.addChild(note_item(level.empty))

    def _failed(self, item: QTreeWidgetItem, row: CallRow, exc: BaseException) -> None:
        """The error in place of the loading row; collapsed and expanded again, the row is asked again."""
        item.takeChildren()
        item.addChild(note_item(f"Could not list them: {describe_error(exc)}"))
        item.setData(0, RowRole, row)

    def _open(self, row: QTreeWidgetItem, _column: int = 0) -> None:
        link = row.data(0, LinkRole)
        if link is not None:
            self.open_requested.emit(link_item(self.workspace(), link, ""))

    def row_actions(self, tree: QTreeWidget, row: QTreeWidgetItem) -> list[QAction]:
        """A row's menu: Open (the code pane), Open in editor, Copy path:line."""
        link = row.data(0, LinkRole)
        entries = [("Open", lambda: self._open(row)),
                   ("Open in editor", lambda: self.editor_requested.emit(link_item(self.workspace(), link, ""))),
                   ("Copy path:line", lambda: QGuiApplication.clipboard().setText(f"{link.path}:{link.line}"))]
        actions = []
        for text, slot in entries:
            action = QAction(text, tree)
            action.triggered.connect(lambda _=False, s=slot: s())
            actions.append(action)
        return actions

    def _row_menu(self, tree: QTreeWidget, pos) -> None:
        row = tree.itemAt(pos) or tree.currentItem()
        if row is None or row.data(0, LinkRole) is None:
            return
        menu = QMenu(tree)
        menu.addActions(self.row_actions(tree, row))
        menu.exec(tree.viewport().mapToGlobal(pos))


def add_row(parent: QTreeWidgetItem, row: CallRow) -> QTreeWidgetItem:
    """A row under `parent`, with an expander when it can be followed (its children asked when expanded)."""
    item = QTreeWidgetItem([row.text])
    item.setData(0, LinkRole, row.link)
    item.setToolTip(0, row.text)
    if row.expandable:
        item.setData(0, RowRole, row)
        item.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
    parent.addChild(item)
    return item


def note_item(text: str) -> QTreeWidgetItem:
    """A row that only says something (loading, nothing found)."""
    item = QTreeWidgetItem([text])
    item.setFlags(Qt.ItemFlag.NoItemFlags)
    return item
