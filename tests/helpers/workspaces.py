"""Two small workspaces beside the sample one, for questions over several workspaces: a Python one and a
JavaScript one, each with one way to save a note."""

from __future__ import annotations

from pathlib import Path

QUESTION = "save a note"


def small_workspaces(root: Path) -> tuple[Path, Path]:
    """(python_workspace, javascript_workspace) under `root`, created if missing."""
    backend, frontend = root / "backend", root / "frontend"
    for folder in (backend, frontend):
        folder.mkdir(parents=True, exist_ok=True)
    (backend / "store.py").write_text(
        "def save_note(note, path):\n    '''Save a note to disk.'''\n    with open(path, 'w') as f:\n"
        "        f.write(note)\n")
    (frontend / "notes.js").write_text(
        "function saveNote(note) {\n  // write the note to local storage\n  localStorage.setItem('note', note);\n}\n")
    return backend, frontend
