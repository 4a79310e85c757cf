"""Keyword search over notes."""

from __future__ import annotations

import re
from collections import Counter

from notes.models import Note
from notes.store import NoteStore

STOP_WORDS = {"a", "an", "the", "and", "or", "of", "to", "in", "is", "for", "on", "with"}
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def tokenize_query(query: str) -> list[str]:
    """Tokenize a query into keywords: lower-case words, camelCase parts, no stop words."""
    keywords: list[str] = []
    for word in _WORD.findall(query):
        parts = _CAMEL.findall(word) or [word]
        for part in [word, *parts]:
            lowered = part.lower()
            if lowered not in STOP_WORDS and lowered not in keywords:
                keywords.append(lowered)
    return keywords


class SearchEngine:
    """Ranks the notes of a store by how many query keywords they contain."""

    title_weight = 2.0

    def __init__(self, store: NoteStore) -> None:
        self.store = store

    def search(self, query: str, limit: int = 10) -> list[Note]:
        """Return the best matching notes for the query, best first."""
        keywords = tokenize_query(query)
        if not keywords:
            return []
        scored = [(self.score(note, keywords), note) for note in self.store.all_notes()]
        ranked = sorted((pair for pair in scored if pair[0] > 0), key=lambda p: -p[0])
        return [note for _, note in ranked[:limit]]

    def score(self, note: Note, keywords: list[str]) -> float:
        """Keyword overlap; a keyword in the title counts twice."""
        title = Counter(tokenize_query(note.title))
        body = Counter(tokenize_query(note.body))
        return sum(self.title_weight * title[k] + body[k] for k in keywords)


if __name__ == "__main__":
    import sys

    from notes.store import MemoryNoteStore

    demo = MemoryNoteStore()
    demo.save(Note(title="Groceries", body="milk, eggs and bread"))
    print(SearchEngine(demo).search(" ".join(sys.argv[1:]) or "milk"))
