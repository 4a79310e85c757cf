"""A window-wide action as every view builds its own: text, shortcut(s), a tooltip naming the first
shortcut, the action log, the slot, and its place (which menu, which section there, in what order, and its
rank in the command palette). The main window only collects them: it builds its action list and its menus
from those places (`placed_actions`, `menu_entries`), never from a list of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence

from ui.action_log import record

FILE, SEARCH, RESULTS, INDEX, VIEW = "&File", "&Search", "&Results", "&Index", "&View"
MENUS = (FILE, SEARCH, RESULTS, INDEX, VIEW)  # the menu bar, left to right (Settings comes after them)


@dataclass(frozen=True)
class Place:
    """Where a window-wide action goes. `palette`: its rank in the window's action list, which is the
    command palette's order (ranks go in tens, so one can come between two). `menu`: one of MENUS, or None
    for the keys and the palette only; `section`: its group there (a separator between groups); `order`:
    its place in the group."""

    palette: int
    menu: str | None = None
    section: int = 0
    order: int = 0


class WindowAction(QAction):
    """A QAction that knows its place on the window (None: not on the window's lists)."""

    place: Place | None = None


def window_action(parent: QObject, text: str, shortcuts: str | list[str], slot: Callable[[], object] | None,
                  tip: str = "", place: Place | None = None) -> QAction:
    """`shortcuts`: one key sequence, or several (the first is the one the tooltip shows)."""
    keys = [QKeySequence(key) for key in ([shortcuts] if isinstance(shortcuts, str) else shortcuts)]
    action = WindowAction(text, parent)
    action.place = place
    action.setShortcuts(keys)
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.setToolTip(f"{tip or text.rstrip('…')} ({keys[0].toString(QKeySequence.SequenceFormat.NativeText)})")
    action.triggered.connect(lambda _checked=False: record(text))
    if slot is not None:
        action.triggered.connect(lambda _checked=False: slot())
    return action


Placed = tuple[QAction, Place]


def placed_actions(owners: Iterable[QObject]) -> list[Placed]:
    """The placed actions that `owners` (the window and its views) built as their own direct children, in
    the palette's order."""
    found = [(action, action.place) for owner in owners
             for action in owner.findChildren(QAction, options=Qt.FindChildOption.FindDirectChildrenOnly)
             if isinstance(action, WindowAction) and action.place is not None]
    return sorted(found, key=lambda placed: placed[1].palette)


def menu_entries(placed: list[Placed]) -> dict[str, list[QAction | None]]:
    """Each menu of MENUS with its actions in order, None between sections."""
    entries: dict[str, list[QAction | None]] = {}
    for menu in MENUS:
        here = sorted((p for p in placed if p[1].menu == menu), key=lambda p: (p[1].section, p[1].order))
        listed: list[QAction | None] = []
        for index, (action, place) in enumerate(here):
            if index and here[index - 1][1].section != place.section:
                listed.append(None)
            listed.append(action)
        entries[menu] = listed
    return entries
