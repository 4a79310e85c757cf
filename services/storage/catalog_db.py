"""The catalogue's one SQLite connection and its lock, as the catalogue (services/storage/catalog.py) and each of
its parts (catalog_keywords.py, catalog_graph.py, catalog_awaiting.py) hold them: a read under the lock, a write
under it in one transaction, so the parts keep the catalogue's guarantees whichever of them writes."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
import threading

from services.core.models import chunk_id

CHUNKS = "chunks c JOIN files f ON f.rowid = c.file"  # a chunk with its file's path and hash
ID_PARTS = "f.path, c.start_line, c.end_line, c.content_hash, c.ordinal"  # what a chunk id is made of


def vector_id(chunk_id: str) -> str:
    """The vector store's id for a chunk: 12 characters (a 72-bit hash) instead of the chunk id's
    path:lines:hash, which Chroma would keep three times over (two SQLite tables and its HNSW id map).
    The catalogue keeps it beside each chunk, to map search hits back."""
    return base64.urlsafe_b64encode(hashlib.blake2b(chunk_id.encode("utf-8"), digest_size=9).digest()).decode()


class CatalogDb:
    """The connection and lock shared by the catalogue and its parts, and the reads every part needs."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock

    def get_meta(self, key: str, default: str = "") -> str:
        row = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0][0] if row else default

    def _current_layout(self) -> bool:
        return "file" in {row[1] for row in self._db.execute("PRAGMA table_info(chunks)")}

    def _ids(self, sql: str, params=()) -> list[str]:
        """Chunk ids from rows of ID_PARTS (under the caller's lock or transaction, or its own)."""
        with self._lock:
            return [chunk_id(*row) for row in self._db.execute(sql, params)]

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
