"""The app-menu entry (`knowledge-explorer desktop install|uninstall`): a freedesktop .desktop file in
$XDG_DATA_HOME/applications and the icon in $XDG_DATA_HOME/icons/hicolor/256x256/apps (default
~/.local/share). The entry runs this environment's `knowledge-explorer` by its absolute path."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import resources

APP_ID = "knowledge-explorer"
ICON_SOURCE = Path(resources.__file__).resolve().parent / "icons" / f"{APP_ID}.png"  # 256 x 256
WM_CLASS = "KnowledgeExplorer"  # Qt's X11 window class: the application name (ui.main_window.APPLICATION)


def data_home() -> Path:
    """$XDG_DATA_HOME when set to an absolute path (the spec ignores a relative one), else ~/.local/share."""
    value = os.environ.get("XDG_DATA_HOME", "")
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def entry_paths(home: Path) -> tuple[Path, Path]:
    """Where install writes: the .desktop file and the icon. Uninstall removes these and nothing else."""
    return (home / "applications" / f"{APP_ID}.desktop",
            home / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png")


def executable() -> Path:
    """The `knowledge-explorer` that is running (argv[0]), else the one beside this Python, else on PATH."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates = [argv0 if argv0 and argv0.name == APP_ID else None,
                  Path(sys.executable).parent / APP_ID,
                  shutil.which(APP_ID)]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).is_file():
            return Path(os.path.abspath(candidate))
    raise FileNotFoundError(f"no {APP_ID} executable found (install the project first, e.g. pipx install .)")


def exec_quoted(path: Path) -> str:
    """`path` as the Exec key's program: double-quoted when it holds a reserved character, with `"`, `` ` ``,
    `$` and `\\` escaped (Desktop Entry spec, "The Exec key"), `%` written `%%`; then `\\` doubled as any string
    value."""
    text = str(path).replace("%", "%%")
    if any(c in text for c in " \t\n\"'\\><~|&;$*?#()`"):
        text = '"' + "".join("\\" + c if c in '"`$\\' else c for c in text) + '"'
    return text.replace("\\", "\\\\")


def string_value(text: str) -> str:
    """A plain string value: backslash and control characters escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def desktop_text(program: Path, icon: Path) -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        "Name=Knowledge Explorer",
        "GenericName=Code Search",
        "Comment=Explore a codebase by meaning and compare reranking strategies side by side",
        f"TryExec={string_value(str(program))}",
        f"Exec={exec_quoted(program)}",
        f"Icon={string_value(str(icon))}",
        "Terminal=false",
        "Categories=Development;",
        "Keywords=code;search;semantic;rerank;",
        f"StartupWMClass={WM_CLASS}",
        "StartupNotify=true",
        "",
    ])


def install() -> str:
    """Write the icon and the .desktop file; the one line saying what was written."""
    desktop, icon = entry_paths(data_home())
    program = executable()
    icon.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ICON_SOURCE, icon)
    desktop.parent.mkdir(parents=True, exist_ok=True)
    desktop.write_text(desktop_text(program, icon), encoding="utf-8")
    return f"Wrote {desktop} and {icon} (the menu entry runs {program})"


def uninstall() -> str:
    """Remove what install writes (the folders stay); the one line saying what was removed."""
    removed = []
    for path in entry_paths(data_home()):
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(str(path))
    if not removed:
        return f"Nothing to remove: no menu entry under {data_home()}"
    return "Removed " + " and ".join(removed)
