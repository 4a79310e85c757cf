"""Where the main window's code pane goes: beside the rankings (the whole height) or below them (the whole
width), as the user chose or as the window's width wants it; each split kept as the user left it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QObject, QTimer
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu, QSizePolicy, QSplitter

if TYPE_CHECKING:
    from ui.main_window import MainWindow

AUTO_PLACE, BESIDE, BELOW = "auto", "beside", "below"  # where the code pane goes
BESIDE_FROM = 1200  # window width (px) from which "auto" puts the code beside the rankings


def stretch(split: QSplitter, *factors: int) -> None:
    """Each pane's share of a resize."""
    for index, factor in enumerate(factors):
        split.setStretchFactor(index, factor)


class CodePlacement(QObject):
    """Moves the window's rankings, lists and code pane between its two arrangements (the window builds
    their splitters); the window owns one."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)  # a QObject of the GUI thread: signals from other threads reach it there
        self.window = window
        self.code_place = AUTO_PLACE
        self.kept_splits: dict[str, QByteArray] = {}  # each split as the user left it (its saveState), by name
        self.place_actions: dict[str, QAction] = {}  # View ▸ Code pane, once built

    def beside(self, width: int | None = None) -> bool:
        """Whether the code pane is beside the rankings (else below them), at the window's width or `width`."""
        width = self.window.width() if width is None else width
        return self.code_place == BESIDE or self.code_place == AUTO_PLACE and width >= BESIDE_FROM

    def place_code(self, place: str | None = None, width: int | None = None) -> None:
        """Put the code pane beside or below the rankings (`place`: the user's choice, kept; None: as the
        window's width, or the `width` it is about to take, wants it)."""
        if place is not None:
            self.code_place = place
            self.window.settings.setValue("layout/code", place)
        beside = self.beside(width)
        if beside != (self.window.arrangement.currentWidget() is self.window.bottom):
            self.arrange(beside)

    def arrange(self, beside: bool) -> None:
        """Move the rankings, the lists, the code pane and the health panel into one arrangement's splitters,
        each split as the user left it in that arrangement (else as it first comes)."""
        explain, tabs = self.window.results.explain, self.window.graph.tabs
        shown, hidden = (self.window.bottom, self.window.below) if beside else (self.window.below, self.window.bottom)
        # the stack's minimum is its pages' largest: the page not shown asks for nothing (as widgets move between
        # them, a half-filled page could need more height than the window was given, and the window grew)
        hidden.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        shown.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        if tabs.indexOf(explain) >= 0:
            tabs.removeTab(tabs.indexOf(explain))
        if beside:
            self.window.results.vertical.addWidget(explain)  # the why rows under the rankings
            self.window.splitter.insertWidget(0, self.window.results)
            self.window.splitter.insertWidget(1, self.window.graph)
            self.window.bottom.insertWidget(1, self.window.code)
            explain.show()  # a page of the lists' tabs, hidden while another page was shown
            stretch(self.window.splitter, 3, 1)
            stretch(self.window.bottom, 1, 1)
        else:
            self.window.below.insertWidget(0, self.window.results)
            self.window.below_row.insertWidget(0, self.window.code)
            self.window.below_row.insertWidget(1, self.window.graph)
            tabs.insertTab(0, explain, "Why")  # beside the code: the rankings keep their rows, the code its room
            tabs.setCurrentIndex(0)
            stretch(self.window.below, 2, 3)
            stretch(self.window.below_row, 1, 0)
        self.window.arrangement.setCurrentWidget(self.window.bottom if beside else self.window.below)
        QTimer.singleShot(0, self._restore_splits)  # once the arrangement is laid out at its new size

    def _restore_splits(self) -> None:
        for name, split, first in self.layouts():
            if self.laid_out(split, first):
                kept = self.kept_splits.get(name)
                if kept is None or not split.restoreState(kept):  # never dragged: as it first comes at this size
                    split.setSizes(first)

    @staticmethod
    def _in(split: QSplitter, arrangement) -> bool:
        return split is arrangement or arrangement.isAncestorOf(split)

    def laid_out(self, split: QSplitter, first: list[int]) -> bool:
        """Whether `split` is part of the arrangement on screen, with its panes (the rankings' split loses
        the why rows to the lists' tabs when the code is below)."""
        return self._in(split, self.window.arrangement.currentWidget()) and split.count() == len(first)

    def layouts(self) -> tuple[tuple[str, QSplitter, list[int]], ...]:
        """Each kept split: its settings key, the splitter, its first sizes."""
        width, height = max(self.window.width(), 720), max(self.window.height(), 500)
        return (("layout/beside-column", self.window.splitter, [height * 70 // 100, height * 30 // 100]),
                ("layout/beside", self.window.bottom, [width * 52 // 100, width * 48 // 100]),
                ("layout/below", self.window.below, [height * 45 // 100, height * 55 // 100]),
                ("layout/below-row", self.window.below_row, [width - 360, 360]),
                ("layout/rankings-why", self.window.results.vertical, [height * 45 // 100, height * 25 // 100]))

    def build_menu(self, menu: QMenu) -> None:
        """View ▸ Code pane: beside the rankings, below them, or as the window's width wants (kept)."""
        group = QActionGroup(self.window)
        self.place_actions = {}
        for place, label in ((AUTO_PLACE, f"Automatic: beside from {BESIDE_FROM:,} px wide, else below"),
                             (BESIDE, "Beside the rankings (the whole height)"),
                             (BELOW, "Below the rankings (the whole width)")):
            action = menu.addAction(label)
            action.setCheckable(True)
            action.triggered.connect(lambda _=False, p=place: self.place_code(p))
            group.addAction(action)
            self.place_actions[place] = action
