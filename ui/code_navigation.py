"""The code panes' navigation for the main window: go to definition (F12), peek (Alt+F12), the hover's
signature, the outline (Ctrl+F12), Back / Forward, the rows that open in the code pane or the editor. Every
jump of the Explore code pane goes through `show_code`, so it is a place Back returns to."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QToolTip

from services.core.models import ResultChunk
from ui.action_log import record
from ui.code_view import CodeView
from ui.message_bar import INFO, WARNING
from ui.viewmodels.goto import GotoViewModel, hover_text

if TYPE_CHECKING:
    from ui.main_window import MainWindow


class CodeNavigation(QObject):
    """Where the window's code panes go, and what they are asked to explain; the window owns one."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)  # a QObject of the GUI thread: signals from other threads reach it there
        self.window = window
        self.definitions = GotoViewModel(window.service)  # F12: go to symbol's answer, exact names first

    def open_row(self, table, row: int) -> None:
        """Enter or double-click on a result: open it in the editor."""
        item = table.model().item(row)
        if item is not None and self.window.code.item is not item:
            self.window.code.show_chunk(item)
        self.window.code.open_in_editor()

    def open_definition(self, item, in_editor: bool) -> None:
        """A match of go to file / symbol: shown in the code pane at its line; Ctrl+E opens the editor too."""
        self.window.show_tab(self.window.explore)
        self.show_code(item)
        if in_editor:
            self.window.code.open_in_editor()

    def go_to_definition(self, name: str) -> asyncio.Task | None:
        """F12 / Ctrl+click in a code pane: the definition of `name` (`Class.method` or a bare name) as the
        engine's go to symbol finds it (the one name resolver), shown in the Explore code pane, a place Back
        returns from; none found is said in one line."""
        if not self.window.workspace:
            return None
        record("go to definition: %s", name)
        return self.window.runner.run(self.definitions.definition(name, self.window.workspace), key="definition",
                                      context="Go to definition", on_result=lambda item: self._show_definition(name,
                                                                                                               item))

    def peek_definition(self, view: CodeView, name: str) -> asyncio.Task | None:
        """Alt+F12 in a code pane: the definition of `name` (as F12 finds it) in a frame there; none found is
        said in one line."""
        if not self.window.workspace:
            return None
        return self.window.runner.run(self.definitions.definition(name, self.window.workspace), key="peek",
                                      context="Peek definition",
                                      on_result=lambda item: view.show_peek(item) if item is not None else
                                      self.window.messages.show_message(f"No definition of {name} in the index.", INFO,
                                                                        timeout_ms=6000))

    def load_file_chunks(self, view: CodeView, path: str) -> asyncio.Task | None:
        """A code pane shows `path`: its chunks for the breadcrumbs (and the outline); none is said by nothing."""
        if not self.window.workspace:
            return None
        return self.window.runner.run(self.window.session.outline(path), key=f"chunks-{id(view)}", context="",
                                      on_result=lambda items: view.set_file_chunks(path,
                                                                                   items), on_error=lambda _error: None)

    def explain_name(self, name: str, where: QPoint) -> asyncio.Task | None:
        """The mouse rests on a name in a code pane: its signature and docstring in a tooltip there (its
        definition as go to definition finds it; nothing for a name with none)."""
        if not self.window.workspace:
            return None
        return self.window.runner.run(self.definitions.definition(name, self.window.workspace), key="hover", context="",
                                      on_result=lambda item: self._show_hover(item, where),
                                      on_error=lambda _error: None)  # a hover that finds nothing says nothing

    def _show_hover(self, item: ResultChunk | None, where: QPoint) -> None:
        if item is not None:
            QToolTip.showText(where, hover_text(item))

    def _show_definition(self, name: str, item: ResultChunk | None) -> None:
        if item is None:
            self.window.messages.show_message(f"No definition of {name} in the index.", INFO, timeout_ms=6000)
            return
        self.open_definition(item, False)
        self.window.code.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_outline(self) -> asyncio.Task | None:
        """Ctrl+F12: the chunks the index has for the file in the code pane, in file order."""
        item = self.window.code.item
        if item is None or not self.window.workspace:
            return None
        path = item.chunk.path

        def shown(items: list[ResultChunk]) -> None:  # asked afresh (an index run may have cut the file anew)
            self.window.code.set_file_chunks(path, items)
            self.window.outline.show_outline(path, items, self.window.code)

        return self.window.runner.run(self.window.session.outline(path), key="outline", context="Outline",
                                      on_result=shown)

    def open_definition_here(self, item: ResultChunk) -> None:
        """An outline row: the code pane goes there (a place Back returns from)."""
        self.show_code(item)
        self.window.code.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def open_graph_row(self, item: ResultChunk) -> None:
        """A "Used by" / "Uses" row: the code pane goes there, the lists stay (as an editor's usages view)."""
        self.window.show_tab(self.window.explore)
        self.show_code(item, follow=False)

    def open_graph_row_in_editor(self, item: ResultChunk) -> None:
        """A "Used by" / "Uses" row's Open in editor: shown in the code pane, opened in the editor at its line."""
        self.open_graph_row(item)
        self.window.code.open_in_editor()

    def show_code(self, item: ResultChunk | None, kind: str = "jump", remember: bool = True,
                  follow: bool = True) -> None:
        """Every jump of the code pane comes here: it shows `item`, "Used by" / "Uses" follow it (unless the
        jump came from those lists), and it is a place Back returns to."""
        if self.window.code.item is not item:
            if remember:
                self.window.code.leave_place()
            self.window.code.show_chunk(item)
        if follow:
            self.window.graph.show_for(item)
        if item is not None and remember:
            record("code: %s:%s", item.chunk.path, item.chunk.start_line)
            self.window.code.navigation.visit(item, kind)
        self.window.code.update_navigation()

    def went_to(self, item: ResultChunk) -> None:
        """Back / Forward: the place again, in the Explore tab."""
        self.window.show_tab(self.window.explore)
        self.show_code(item, remember=False)

    def shown_code_view(self) -> CodeView:
        """The preview of the tab on screen (Explore's when that tab has none)."""
        views = {id(self.window.files_view): self.window.files_view.code,
                 id(self.window.workspace_set): self.window.workspace_set.code}
        if self.window.compare_view is not None:
            views[id(self.window.compare_view)] = self.window.compare_view.rankings_panel.code
        return views.get(id(self.window.tabs.currentWidget()), self.window.code)

    def open_selected(self) -> None:
        """Ctrl+E (and Enter or double-click on a file or a hit): open the row you see in the editor."""
        view = self.shown_code_view()
        if view.item is None:
            self.window.messages.show_message("Select a result first.", INFO, timeout_ms=4000)
            return
        view.open_in_editor()

    def reveal_in_folder(self, item) -> None:
        """Open the folder holding the result's file in the file manager (the file's own folder)."""
        folder = (Path(self.window.workspace) / item.chunk.path).parent
        if not folder.is_dir():
            self.window.messages.show_message(f"{folder} is not there any more.", WARNING)
            return
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
