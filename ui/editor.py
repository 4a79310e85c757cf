"""Opening a file at a line in the user's editor: presets, terminal editors, detached launching.

A preset turns (path, line) into a command. Terminal editors (vim, nano, emacs -nw, ...) from
$VISUAL/$EDITOR are run inside a terminal emulator, since the app has no terminal. Programs are
started with QProcess.startDetached (the child is re-parented to init, so no zombie is left).
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QProcess, QUrl
from PySide6.QtGui import QDesktopServices

AUTO, ENVIRONMENT, VSCODE, JETBRAINS, SUBLIME, SYSTEM, CUSTOM = (
    "auto", "environment", "vscode", "jetbrains", "sublime", "system", "custom")

PRESETS = {  # name -> menu label
    AUTO: "Automatic ($VISUAL / $EDITOR, else the system default)",
    ENVIRONMENT: "$VISUAL / $EDITOR",
    VSCODE: "VS Code (code -g path:line)",
    JETBRAINS: "JetBrains IDE (--line N path)",
    SUBLIME: "Sublime Text (subl path:line)",
    SYSTEM: "System default application",
    CUSTOM: "Custom command (the editor/command setting: {path}, {line})",
}
JETBRAINS_LAUNCHERS = ("idea", "pycharm", "webstorm", "goland", "clion", "rider", "phpstorm", "rubymine")
TERMINAL_EDITORS = {"vi", "vim", "nvim", "nano", "pico", "micro", "hx", "helix", "kak", "joe", "ne", "mg",
                    "jed", "mcedit"}
# terminal emulator -> the arguments that come before the command it should run
TERMINALS = (("x-terminal-emulator", ["-e"]), ("gnome-terminal", ["--"]), ("konsole", ["-e"]),
             ("xfce4-terminal", ["-x"]), ("kitty", []), ("alacritty", ["-e"]), ("foot", []),
             ("wezterm", ["start", "--"]), ("xterm", ["-e"]), ("urxvt", ["-e"]))


class EditorError(Exception):
    """A message for the user: why the file could not be opened."""


@dataclass(frozen=True)
class Launch:
    program: str
    args: list[str]


def environment_editor() -> list[str]:
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "")


def is_terminal_editor(command: list[str]) -> bool:
    name = Path(command[0]).name
    if name == "emacs":
        return any(flag in command for flag in ("-nw", "-t", "--no-window-system", "-tty"))
    if name == "emacsclient":
        return any(flag in command for flag in ("-t", "-nw", "--tty"))
    return name in TERMINAL_EDITORS


def at_line(command: list[str], path: str, line: int) -> list[str]:
    """The editor command with the right "open at line" arguments for the editors we know."""
    name = Path(command[0]).name
    if name in ("code", "codium", "code-insiders", "cursor"):
        return [*command, "-g", f"{path}:{line}"]
    if name in ("subl", "sublime_text"):
        return [*command, f"{path}:{line}"]
    if name in JETBRAINS_LAUNCHERS or name.endswith(".sh") and name[:-3] in JETBRAINS_LAUNCHERS:
        return [*command, "--line", str(line), path]
    return [*command, f"+{line}", path]


def find_terminal() -> list[str] | None:
    for name, args in TERMINALS:
        found = shutil.which(name)
        if found:
            return [found, *args]
    return None


def environment_command(path: str, line: int) -> list[str]:
    editor = environment_editor()
    if not editor:
        raise EditorError("Neither $VISUAL nor $EDITOR is set: choose an editor in Settings ▸ Editor.")
    command = at_line(editor, path, line)
    if not is_terminal_editor(editor):
        return command
    terminal = find_terminal()
    if terminal is None:
        raise EditorError(f"{editor[0]} runs in a terminal, and no terminal emulator was found "
                          f"(looked for {', '.join(n for n, _ in TERMINALS)}). Install one or choose "
                          f"a graphical editor in Settings ▸ Editor.")
    return [*terminal, *command]


def custom_command(template: str, path: str, line: int) -> list[str]:
    """A user's command template with {path} and {line} filled in (a path with spaces stays one argument)."""
    words = shlex.split(template)
    if not words:
        raise EditorError("The custom editor command is empty: set editor/command, e.g. “myedit +{line} {path}”.")
    command = [w.replace("{path}", path).replace("{line}", str(line)) for w in words]
    return command if "{path}" in template else [*command, path]


def editor_command(preset: str, path: str, line: int, jetbrains: str = "idea",
                   custom: str = "") -> list[str] | None:
    """The command opening `path` at `line` with `preset`; None means the system default."""
    if preset == CUSTOM:
        return custom_command(custom, path, line)
    if preset == AUTO:
        return environment_command(path, line) if environment_editor() else None
    if preset == ENVIRONMENT:
        return environment_command(path, line)
    if preset == VSCODE:
        return at_line(["code"], path, line)
    if preset == SUBLIME:
        return at_line(["subl"], path, line)
    if preset == JETBRAINS:
        return [jetbrains or "idea", "--line", str(line), path]
    return None


def start_detached(command: list[str]) -> None:
    """Start `command` detached (no zombie: the child is not ours to reap); EditorError if it cannot."""
    program = shutil.which(command[0])
    if program is None:
        raise EditorError(f"Could not find the editor program “{command[0]}” on PATH.")
    started, _pid = QProcess.startDetached(program, command[1:])
    if not started:
        raise EditorError(f"Could not start {command[0]}.")


def open_at_line(preset: str, path: str, line: int, jetbrains: str = "idea", custom: str = "") -> None:
    """Open `path` at `line`; raises EditorError with a message for the user on failure."""
    if not Path(path).is_file():
        raise EditorError(f"{path} does not exist any more.")
    command = editor_command(preset, path, line, jetbrains, custom)
    if command is not None:
        start_detached(command)
    elif not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
        raise EditorError(f"No application is set up to open {Path(path).name}.")
