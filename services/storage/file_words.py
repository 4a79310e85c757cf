"""Whole-file keywords for file answers: an SQLite FTS5 table inside the manifest, one row per file.

A file's row holds its path's tokens three times, the names it defines (`def`/`class`) twice, then its
text (its chunks' content in line order), all as code-aware tokens (services/core/text.code_tokens).
It is written in the same transaction as the file's chunks (Catalog.commit_file), so file answers never
rebuild a keyword index after an edit: they ask this table, term by term, for FTS5's bm25() (k1 1.2,
b 0.75, negated so higher is better). The names a file defines are kept beside it (`file_names`), for
matching the names a bug report uses. The table is contentless: a delete names the words the row was
added with, worked out again from the catalogue's text, so WORDS_VERSION must change with `words`.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

from services.core.text import code_tokens

TABLE = "file_words"
WORDS_VERSION = "1"  # change with `words` or code_tokens: a manifest with another version is refilled on open
CREATE = (f"CREATE VIRTUAL TABLE {TABLE} USING fts5(words, content='', "
          "tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\")")
NAMES = ("CREATE TABLE IF NOT EXISTS file_names (file INTEGER NOT NULL, name TEXT NOT NULL)",
         "CREATE INDEX IF NOT EXISTS file_names_by_file ON file_names(file)")
PATH_REPEAT = 3  # a path's tokens count this many times
NAME_REPEAT = 2  # and the names a file defines this many
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def file_text(contents: Iterable[str]) -> str:
    """A file's text as the index has it: its chunks' content in line order, one newline between."""
    return "\n".join(contents)


def defined_names(text: str) -> list[str]:
    """The functions and classes a file's text defines, first occurrence first."""
    return list(dict.fromkeys(_DEFINES.findall(text)))


def words(path: str, text: str) -> str:
    """A file's row, space-separated: path tokens, defined names, then the text's tokens."""
    tokens = (code_tokens(path) * PATH_REPEAT + code_tokens(" ".join(defined_names(text))) * NAME_REPEAT
              + code_tokens(text))
    return " ".join(tokens)


def create(db: sqlite3.Connection) -> None:
    db.execute(CREATE)
    for statement in NAMES:  # not executescript: that would end the caller's transaction
        db.execute(statement)


def exists(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is not None


def add(db: sqlite3.Connection, number: int, path: str, text: str) -> None:
    db.execute(f"INSERT INTO {TABLE}(rowid, words) VALUES (?, ?)", (number, words(path, text)))
    db.executemany("INSERT INTO file_names VALUES (?, ?)", [(number, n) for n in defined_names(text)])


def remove(db: sqlite3.Connection, number: int, path: str, text: str) -> None:
    """A row as it was added (the same path and text)."""
    db.execute(f"INSERT INTO {TABLE}({TABLE}, rowid, words) VALUES ('delete', ?, ?)", (number, words(path, text)))
    db.execute("DELETE FROM file_names WHERE file = ?", (number,))


def remove_all(db: sqlite3.Connection) -> None:
    db.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('delete-all')")
    db.execute("DELETE FROM file_names")


def term_scores(db: sqlite3.Connection, term: str) -> list[tuple[int, float]]:
    """(file number, BM25 score) of every file holding the token."""
    phrase = '"' + term.replace('"', '""') + '"'
    return db.execute(f"SELECT rowid, -bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ?", (phrase,)).fetchall()


def verify(db: sqlite3.Connection) -> None:
    """FTS5's own check of the table's structure (O(table)); raises sqlite3.DatabaseError when garbled."""
    db.execute(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('integrity-check', 0)")


def mismatch(db: sqlite3.Connection) -> tuple[int, int]:
    """(catalogued files without a row, rows of files no longer catalogued)."""
    lacking = db.execute(f"SELECT COUNT(*) FROM files WHERE rowid NOT IN (SELECT id FROM {TABLE}_docsize)").fetchone()[0]
    extra = db.execute(f"SELECT COUNT(*) FROM {TABLE}_docsize WHERE id NOT IN (SELECT rowid FROM files)").fetchone()[0]
    return lacking, extra


def names(db: sqlite3.Connection) -> list[tuple[int, str]]:
    """(file number, a name it defines), every file's."""
    return db.execute("SELECT file, name FROM file_names ORDER BY rowid").fetchall()


class MemoryFileWords:
    """The same table in memory, over texts that are not in a catalogue (benchmarks/file_level.py)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        create(self.db)
        self.paths = sorted(files)
        with self.db:
            for number, path in enumerate(self.paths, start=1):
                add(self.db, number, path, files[path])

    def listing(self) -> list[tuple[int, str]]:
        return list(enumerate(self.paths, start=1))

    def term_scores(self, term: str) -> list[tuple[int, float]]:
        return term_scores(self.db, term)

    def names(self) -> list[tuple[int, str]]:
        return names(self.db)


class CatalogFileWords:
    """A catalogue's table, as FileIndex reads it."""

    def __init__(self, catalog) -> None:
        self.listing = catalog.keywords.file_listing
        self.term_scores = catalog.keywords.file_term_scores
        self.names = catalog.keywords.file_names
