"""Back and forward over the places the code pane showed, as editors keep them (Alt+Left / Alt+Right),
Qt-free. Every jump is a place: a result opened, go to file / symbol, a "Used by" or "Uses" row, a
definition. Walking the results of one question with the arrow keys is one place (each step replaces the
last), so Back returns to where the user was before, not to the previous row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

Item = TypeVar("Item")
LIMIT = 100  # places kept behind


@dataclass
class Place(Generic[Item]):
    item: Item
    kind: str  # "result" (a row of the rankings) or "jump"
    where: tuple | None = None  # where the reader was in it when leaving it (the code pane's caret and view)


class Navigation(Generic[Item]):
    def __init__(self) -> None:
        self.behind: list[Place[Item]] = []
        self.ahead: list[Place[Item]] = []
        self.current: Place[Item] | None = None

    def visit(self, item: Item, kind: str = "jump") -> None:
        """The code pane shows `item`: it becomes the current place, the old one goes behind (a result
        after a result replaces it), and what was ahead is dropped, as in a browser."""
        place = Place(item, kind)
        if self.current is not None and not (kind == "result" and self.current.kind == "result"):
            self.behind = [*self.behind, self.current][-LIMIT:]
        self.current = place
        self.ahead = []

    def back(self) -> Item | None:
        if not self.behind or self.current is None:
            return None
        self.ahead.append(self.current)
        self.current = self.behind.pop()
        return self.current.item

    def forward(self) -> Item | None:
        if not self.ahead or self.current is None:
            return None
        self.behind.append(self.current)
        self.current = self.ahead.pop()
        return self.current.item

    def can_go_back(self) -> bool:
        return bool(self.behind)

    def can_go_forward(self) -> bool:
        return bool(self.ahead)

    def clear(self) -> None:
        self.behind, self.ahead, self.current = [], [], None
