"""Where notes live: an abstract store, a file store that saves notes to disk, a memory store."""

from __future__ import annotations

import json
import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path

from notes.models import Note

NOTE_SUFFIX = ".json"


class NoteStore(ABC):
    """The interface every note store implements."""

    @abstractmethod
    def save(self, note: Note) -> None:
        """Persist the note, replacing an older version with the same id."""

    @abstractmethod
    def load(self, note_id: str) -> Note:
        """Return the note with this id or raise KeyError."""

    @abstractmethod
    def all_notes(self) -> list[Note]:
        """Every stored note, oldest first."""


class FileNoteStore(NoteStore):
    """Saves each note to disk as one JSON file in a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def save(self, note: Note) -> None:
        """Save a note to disk atomically: write a temporary file, then rename it."""
        payload = json.dumps(note.__dict__, ensure_ascii=False, indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload)
        os.replace(tmp, self._path_for(note.note_id))

    def load(self, note_id: str) -> Note:
        path = self._path_for(note_id)
        if not path.exists():
            raise KeyError(note_id)
        return Note(**json.loads(path.read_text(encoding="utf-8")))

    def all_notes(self) -> list[Note]:
        notes = [self.load(p.stem) for p in self.folder.glob("*" + NOTE_SUFFIX)]
        return sorted(notes, key=lambda n: n.created_at)

    def _path_for(self, note_id: str) -> Path:
        return self.folder / (note_id + NOTE_SUFFIX)


class MemoryNoteStore(NoteStore):
    """Keeps notes in a dictionary; used by tests."""

    def __init__(self) -> None:
        self._notes: dict[str, Note] = {}

    def save(self, note: Note) -> None:
        self._notes[note.note_id] = note

    def load(self, note_id: str) -> Note:
        return self._notes[note_id]

    def all_notes(self) -> list[Note]:
        return sorted(self._notes.values(), key=lambda n: n.created_at)
