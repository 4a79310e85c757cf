"""The index manifest: per file its hash and chunks, plus index metadata, in SQLite.

The catalogue is the source of truth for what is in the index. Each file is committed in one
transaction, so a reader (or a crash) sees every file either fully at its old version or fully at
its new one; vectors whose ids the catalogue does not list are ignored and swept on the next run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from services.models import Chunk, SkippedFile, count_by_reason

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, file_hash TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, language TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, vid TEXT NOT NULL DEFAULT '', path TEXT NOT NULL, language TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, content TEXT NOT NULL,
    symbol TEXT NOT NULL, qualified_name TEXT NOT NULL, kind TEXT NOT NULL, bases TEXT NOT NULL,
    docstring TEXT NOT NULL, content_hash TEXT NOT NULL, file_hash TEXT NOT NULL,
    refs INTEGER NOT NULL DEFAULT 0, ordinal INTEGER NOT NULL DEFAULT 0,
    contiguous INTEGER NOT NULL DEFAULT 1);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
"""

# 2: chunk text only here, none in Chroma (its documents were a second copy)
# 3: Chroma keeps short vector ids and no metadata; docstrings are packed with the text; big indexes
#    store fewer dimensions (services/projection.py)
INDEX_FORMAT = "3"
FORMAT_CHANGES = {"1": "chunk text is now stored once, in the manifest",
                  "2": "the index is about half the size: short vector ids, no vector metadata, fewer dimensions"}
CHUNK_COLUMNS = ("id, path, language, start_line, end_line, content, symbol, qualified_name, kind, "
                 "bases, docstring, content_hash, file_hash, refs, ordinal, contiguous")
HASH_CHARS = 16  # hashes kept per chunk (64 bits; the chunk id holds the same 16 characters)
# Columns added after the first release: (name, definition), added to an older catalogue on open.
ADDED_CHUNK_COLUMNS = (("ordinal", "INTEGER NOT NULL DEFAULT 0"), ("contiguous", "INTEGER NOT NULL DEFAULT 1"),
                       ("vid", "TEXT NOT NULL DEFAULT ''"))


def vector_id(chunk_id: str) -> str:
    """The vector store's id for a chunk: 12 characters (a 72-bit hash) instead of the chunk id's
    path:lines:hash, which Chroma would keep three times over (two SQLite tables and its HNSW id map).
    The catalogue keeps it beside each chunk, to map search hits back."""
    return base64.urlsafe_b64encode(hashlib.blake2b(chunk_id.encode("utf-8"), digest_size=9).digest()).decode()


@dataclass(frozen=True)
class FileRecord:
    path: str
    file_hash: str
    size: int
    mtime_ns: int
    language: str


class Catalog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._add_missing_columns()
        self._lock = threading.RLock()

    def _add_missing_columns(self) -> None:
        have = {row[1] for row in self._db.execute("PRAGMA table_info(chunks)")}
        for name, definition in ADDED_CHUNK_COLUMNS:
            if name not in have:
                self._db.execute(f"ALTER TABLE chunks ADD COLUMN {name} {definition}")
        self._db.execute("CREATE INDEX IF NOT EXISTS chunks_by_vid ON chunks(vid)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- metadata ---
    def get_meta(self, key: str, default: str = "") -> str:
        row = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0][0] if row else default

    def set_meta(self, **values: str) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                 [(k, str(v)) for k, v in values.items()])

    # --- files and chunks ---
    def files(self) -> dict[str, FileRecord]:
        rows = self._query("SELECT path, file_hash, size, mtime_ns, language FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def commit_file(self, record: FileRecord, chunks: list[Chunk]) -> list[str]:
        """Replace a file's chunks in one transaction; return the ids it no longer has."""
        with self._lock, self._transaction():
            old = {r[0] for r in self._db.execute("SELECT id FROM chunks WHERE path = ?", (record.path,))}
            self._db.execute("DELETE FROM chunks WHERE path = ?", (record.path,))
            self._db.executemany(f"INSERT OR REPLACE INTO chunks ({CHUNK_COLUMNS}, vid) VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [_chunk_row(c) for c in chunks])
            self._db.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?)",
                             (record.path, record.file_hash, record.size, record.mtime_ns, record.language))
            self._db.execute("DELETE FROM skipped WHERE path = ?", (record.path,))
        return sorted(old - {c.id for c in chunks})

    def remove_file(self, path: str) -> list[str]:
        with self._lock, self._transaction():
            ids = [r[0] for r in self._db.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
            self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))
            self._db.execute("DELETE FROM files WHERE path = ?", (path,))
        return ids

    def clear(self) -> None:
        with self._lock, self._transaction():
            for table in ("files", "chunks", "skipped", "meta"):
                self._db.execute(f"DELETE FROM {table}")

    def chunks(self, ids: list[str] | None = None, path: str | None = None) -> list[Chunk]:
        if ids is not None:
            found = {}
            for start in range(0, len(ids), 500):
                part = ids[start:start + 500]
                marks = ",".join("?" * len(part))
                for row in self._query(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                    found[row[0]] = _row_chunk(row)
            return [found[i] for i in ids if i in found]
        if path is not None:
            return [_row_chunk(r) for r in self._query(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE path = ? ORDER BY start_line", (path,))]
        return [_row_chunk(r) for r in self._query(f"SELECT {CHUNK_COLUMNS} FROM chunks ORDER BY rowid")]

    def id_paths_languages(self) -> list[tuple[str, str, str]]:
        """(id, path, language) of every chunk, without their text (for filtering)."""
        return self._query("SELECT id, path, language FROM chunks")

    def ids_for_vectors(self, vids: list[str]) -> dict[str, str]:
        """Chunk ids by vector id (store.vector_id), for the vectors the catalogue lists."""
        found = {}
        for start in range(0, len(vids), 500):
            part = vids[start:start + 500]
            found.update(self._query(f"SELECT vid, id FROM chunks WHERE vid IN ({','.join('?' * len(part))})", part))
        return found

    def chunk_ids(self) -> set[str]:
        return {r[0] for r in self._query("SELECT id FROM chunks")}

    def set_references(self, counts: dict[str, int]) -> None:
        with self._lock, self._transaction():
            self._db.execute("UPDATE chunks SET refs = 0")
            self._db.executemany("UPDATE chunks SET refs = ? WHERE id = ?",
                                 [(n, i) for i, n in counts.items() if n])

    def counts(self) -> tuple[int, int]:
        files = self._query("SELECT COUNT(*) FROM files")[0][0]
        chunks = self._query("SELECT COUNT(*) FROM chunks")[0][0]
        return files, chunks

    def languages(self) -> dict[str, int]:
        rows = self._query("SELECT language, COUNT(*) FROM chunks GROUP BY language ORDER BY 2 DESC")
        return dict(rows)

    def symbols(self) -> list[str]:
        rows = self._query("SELECT DISTINCT symbol FROM chunks WHERE symbol != '' AND kind NOT IN ('module', 'text')"
                           " ORDER BY symbol")
        return [r[0] for r in rows]

    def compact(self) -> None:
        """Fold the write-ahead log into the database; VACUUM when over a quarter of it is free pages
        (after a rebuild or many removals)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            if pages and free > pages / 4:
                self._db.execute("VACUUM")
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- skipped files ---
    def set_skipped(self, skipped: list[SkippedFile]) -> None:
        with self._lock, self._transaction():
            self._db.execute("DELETE FROM skipped")
            self._db.executemany("INSERT OR REPLACE INTO skipped VALUES (?, ?)",
                                 [(s.path, s.reason) for s in skipped])

    def skipped(self) -> list[SkippedFile]:
        return [SkippedFile(*r) for r in self._query("SELECT path, reason FROM skipped ORDER BY path")]

    def skipped_by_reason(self) -> dict[str, int]:
        return count_by_reason(self.skipped())

    # --- plumbing ---
    def _query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _transaction(self):
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, traceback):
        self.db.execute("ROLLBACK" if kind else "COMMIT")


PACKED = b"P"  # marks text and docstring packed together (format 3); a bare zlib stream starts with "x"


def _pack(content: str, docstring: str) -> bytes:
    """A chunk's text and docstring, zlib-compressed together (code shrinks about 2.5x): the index's
    only copy of them."""
    return PACKED + zlib.compress(f"{len(docstring)}\n{docstring}{content}".encode("utf-8"), 6)


def _unpack(value: str | bytes, docstring: str) -> tuple[str, str]:
    """(text, docstring) from any format's row."""
    if isinstance(value, str):  # format 1: plain text
        return value, docstring
    if not value.startswith(PACKED):  # format 2: compressed text, docstring in its own column
        return zlib.decompress(value).decode("utf-8"), docstring
    length, _, rest = zlib.decompress(value[1:]).decode("utf-8").partition("\n")
    return rest[int(length):], rest[:int(length)]


def _chunk_row(c: Chunk) -> tuple:
    return (c.id, c.path, c.language, c.start_line, c.end_line, _pack(c.content, c.docstring), c.symbol,
            c.qualified_name, c.kind, json.dumps(list(c.bases)) if c.bases else "", "",
            c.content_hash[:HASH_CHARS], c.file_hash, c.references, c.ordinal, int(c.contiguous),
            vector_id(c.id))


def _row_chunk(row: tuple) -> Chunk:
    content, docstring = _unpack(row[5], row[10])
    return Chunk(path=row[1], language=row[2], start_line=row[3], end_line=row[4], content=content,
                 symbol=row[6], qualified_name=row[7], kind=row[8], bases=tuple(json.loads(row[9] or "[]")),
                 docstring=docstring, content_hash=row[11], file_hash=row[12], references=row[13],
                 ordinal=row[14], contiguous=bool(row[15]))
