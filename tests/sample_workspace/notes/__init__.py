"""Toy notes application: models, stores and keyword search."""

from notes.models import Note
from notes.search import SearchEngine, tokenize_query
from notes.store import FileNoteStore, MemoryNoteStore, NoteStore

__all__ = ["Note", "NoteStore", "FileNoteStore", "MemoryNoteStore", "SearchEngine", "tokenize_query"]
