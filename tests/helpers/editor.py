"""A real editor command for window tests: a Python process that records the path and line it was asked
to open (the custom preset, as a user's `myeditor --goto {path}:{line}`)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ui.editor import CUSTOM


def recording_editor(window, record: Path) -> Path:
    """Set `window`'s editor to a command that writes "path:line" to `record`; returns `record`."""
    script = "import sys; open(sys.argv[1], 'w').write(sys.argv[2] + ':' + sys.argv[3])"
    window.settings.setValue("editor/command", f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} "
                                               f"{shlex.quote(str(record))} {{path}} {{line}}")
    window.editor_settings.set_editor(CUSTOM)
    return record


def opened(record: Path) -> tuple[str, int] | None:
    """(path, line) the editor was asked to open, or None before it wrote them."""
    text = record.read_text() if record.exists() else ""
    if ":" not in text:
        return None
    path, line = text.rsplit(":", 1)
    return path, int(line)
