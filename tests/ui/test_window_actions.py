"""The window's actions: every view declares where its own go (menu, section, order, palette rank); the
window builds its action list (the command palette's order) and its menus from those declarations alone.
Pinned here as the user sees them: texts, shortcuts, order, separators."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

PALETTE = [
    ("Open workspace…", "Ctrl+O"),
    ("Index health", "Ctrl+Shift+H"),
    ("Quit", "Ctrl+Q"),
    ("Focus the question", "Ctrl+L"),
    ("Run the question", "Ctrl+Return"),
    ("Recent and pinned questions…", "Ctrl+H"),
    ("Pin or unpin the question", "Ctrl+D"),
    ("Next strategy", "Ctrl+]"),
    ("Previous strategy", "Ctrl+["),
    ("Clear filters", "Ctrl+Shift+Backspace"),
    ("Go to the vector ranking", "Ctrl+1"),
    ("Go to the reranked ranking", "Ctrl+2"),
    ("Open in editor", "Ctrl+E"),
    ("Reindex", "F5"),
    ("Full rebuild…", "Ctrl+Shift+R"),
    ("Cancel indexing", "Ctrl+."),
    ("Explore tab", "Ctrl+Shift+E"),
    ("Files tab: the question answered as ranked files", "Ctrl+Shift+F"),
    ("Several workspaces tab: also search in other workspaces", "Ctrl+Shift+W"),
    ("Compare strategies tab", "Ctrl+Shift+C"),
    ("Command palette…", "Ctrl+K"),
    ("Go to file…", "Ctrl+P"),
    ("Go to symbol…", "Ctrl+T"),
    ("Used by: who uses the code shown (the name under the cursor)", "Alt+F7"),
    ("Uses: what the code shown uses (call hierarchy)", "Ctrl+Alt+H"),
    ("Back", "Alt+Left"),
    ("Forward", "Alt+Right"),
    ("Context menu", "Shift+F10"),
]

SEP = "---"
MENUS = [
    ("&File", [("Open workspace…", "Ctrl+O"), ("Quit", "Ctrl+Q")]),
    ("&Search", [("Go to file…", "Ctrl+P"), ("Go to symbol…", "Ctrl+T"), ("Back", "Alt+Left"),
                 ("Forward", "Alt+Right"), SEP, ("Focus the question", "Ctrl+L"), ("Run the question", "Ctrl+Return"),
                 ("Recent and pinned questions…", "Ctrl+H"), ("Pin or unpin the question", "Ctrl+D"), SEP,
                 ("Next strategy", "Ctrl+]"), ("Previous strategy", "Ctrl+["),
                 ("Clear filters", "Ctrl+Shift+Backspace")]),
    ("&Results", [("Go to the vector ranking", "Ctrl+1"), ("Go to the reranked ranking", "Ctrl+2"),
                  ("Open in editor", "Ctrl+E"), SEP,
                  ("Used by: who uses the code shown (the name under the cursor)", "Alt+F7"),
                  ("Uses: what the code shown uses (call hierarchy)", "Ctrl+Alt+H")]),
    ("&Index", [("Reindex", "F5"), ("Full rebuild…", "Ctrl+Shift+R"), ("Cancel indexing", "Ctrl+.")]),
    ("&View", [("Explore tab", "Ctrl+Shift+E"), ("Files tab: the question answered as ranked files", "Ctrl+Shift+F"),
               ("Several workspaces tab: also search in other workspaces", "Ctrl+Shift+W"),
               ("Compare strategies tab", "Ctrl+Shift+C"), ("Index health", "Ctrl+Shift+H"),
               ("Command palette…", "Ctrl+K"),
               ("Code &pane", [("Automatic: beside from 1,200 px wide, else below", ""),
                               ("Beside the rankings (the whole height)", ""),
                               ("Below the rankings (the whole width)", "")])]),
    ("Se&ttings", [("&Editor", [("Automatic ($VISUAL / $EDITOR, else the system default)", ""),
                                ("$VISUAL / $EDITOR", ""), ("VS Code (code -g path:line)", ""),
                                ("JetBrains IDE (--line N path)", ""), ("Sublime Text (subl path:line)", ""),
                                ("System default application", ""),
                                ("Custom command (the editor/command setting: {path}, {line})", ""), SEP,
                                ("Set the custom command…", "")])]),
]


def keys(action: QAction) -> str:
    return action.shortcut().toString(QKeySequence.SequenceFormat.PortableText)


def shown(menu) -> list:
    entries: list = []
    for action in menu.actions():
        if action.isSeparator():
            entries.append(SEP)
        elif isinstance(action.menu(), QMenu):
            entries.append((action.text(), shown(action.menu())))
        else:
            entries.append((action.text(), keys(action)))
    return entries


def test_the_window_lists_every_action_once_in_the_palettes_order(window):
    assert [(a.text(), keys(a)) for a in window.actions()] == PALETTE


def test_the_menus_are_built_from_the_same_declarations(window):
    assert shown(window.menuBar()) == MENUS
    in_menus = {a.text() for menu in window.menuBar().findChildren(QMenu) for a in menu.actions()}
    assert [a.text() for a in window.actions() if a.text() not in in_menus] == ["Context menu"]
