"""Settings ▸ Editor: the editor every code view opens files in (a preset, or a custom command), kept in the
settings; its actions for the window's menu."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from PySide6.QtCore import QObject, QSettings
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QInputDialog, QWidget

from ui.code_view import CodeView
from ui.editor import AUTO, CUSTOM, PRESETS


class EditorSettings(QObject):
    """`views()`: the code views the choice applies to. The window places `preset_actions` (one checked)
    and `custom_action` in its Settings ▸ Editor menu."""

    def __init__(self, settings: QSettings, views: Callable[[], list[CodeView]], parent: QWidget) -> None:
        super().__init__(parent)
        self.settings, self.views = settings, views
        current = str(settings.value("editor/preset", AUTO) or AUTO)
        group = QActionGroup(self)
        self.preset_actions: dict[str, QAction] = {}
        for name, label in PRESETS.items():
            action = QAction(label, self)
            action.setCheckable(True)
            action.setChecked(name == current)
            action.triggered.connect(lambda _=False, n=name: self.set_editor(n))
            group.addAction(action)
            self.preset_actions[name] = action
        self.custom_action = QAction("Set the custom command…", self)
        self.custom_action.triggered.connect(self.ask_custom_editor)
        self.set_editor(current if current in PRESETS else AUTO)

    def ask_custom_editor(self) -> None:
        current = str(self.settings.value("editor/command", "") or "")
        text, ok = QInputDialog.getText(cast(QWidget, self.parent()), "Editor command",
                                        "Command ({path} and {line} are filled in):",
                                        text=current or "myeditor --goto {path}:{line}")
        if ok and text.strip():
            self.settings.setValue("editor/command", text.strip())
            self.set_editor(CUSTOM)

    def set_editor(self, preset: str) -> None:
        for view in self.views():
            view.editor_preset = preset
            view.jetbrains_launcher = str(self.settings.value("editor/jetbrains", "idea") or "idea")
            view.custom_command = str(self.settings.value("editor/command", "") or "")
        self.preset_actions[preset].setChecked(True)
        self.settings.setValue("editor/preset", preset)
