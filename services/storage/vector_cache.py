"""Vectors shared by every workspace of a data dir, addressed by what was embedded.

A clone, worktree or branch of an indexed repository holds mostly the same chunks: their vectors are
looked up here instead of being computed again. A row is keyed by

- its *vector space*: one row of `spaces` per encoder identity (Embedder.vector_space(): the model's
  files, backend, device, precision, max_seq_length and dimensions), so a model or backend change never
  serves another space's vectors, and
- the BLAKE2b-128 hash of the exact text the encoder saw (services.encoders.embedder.chunk_text: path,
  kind, symbol and code).

The cache keeps the encoder's **full** vectors (float32, before any projection): a big index projects
them with its own projection (services/storage/projection.py), so indexes with different projections
share one cache.

It lives in the data dir, so the data dir's owner (services/storage/ownership.py) is its only writer;
even so every write is one SQLite transaction in WAL mode, so a second process or a kill mid-write can
never leave a half-written row that is served (SQLite rolls an unfinished transaction back; a row whose
blob is not `dimensions` float32s is ignored all the same). Vectors are committed here before they are
written to a workspace's vector store. The cache is an accelerator only: when it cannot be read or
written, the run embeds as it would without it and the log says why.

Nothing shared is trusted blindly: each row carries a checksum of its space, key and vector, checked on
every read (so `index --full` too). A row that fails it (rewritten behind the cache's back, or a row from
before checksums) is never served: it is dropped, and its text embedded and stored again.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from pathlib import Path

import numpy as np

from services.core.batching import batches, marks
from services.storage.faults import LOCK_WAIT, busy, held_by

log = logging.getLogger(__name__)
CACHE_FILE = "vector-cache.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS spaces (
    id INTEGER PRIMARY KEY, identity TEXT NOT NULL UNIQUE, dimensions INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY, space INTEGER NOT NULL, text_hash BLOB NOT NULL, vector BLOB NOT NULL,
    checksum BLOB);
CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (space, text_hash);
"""
CHECKSUM_BYTES = 8
# A rowid table (not WITHOUT ROWID, whose rows over ~1 KB spill to overflow pages) on 16 KiB pages: a
# 384-dimension vector (1,536 bytes) then takes about 1.6 KB on disk instead of 4.7 KB.
PAGE_SIZE = 16384


def checksum(space: int, key: bytes, vector: bytes) -> bytes:
    """A row's checksum: BLAKE2b-64 over its space, its text's hash and its vector's bytes. A row whose
    vector (or key) was rewritten behind the cache's back no longer matches it, and is never served."""
    return hashlib.blake2b(space.to_bytes(8, "little") + key + vector, digest_size=CHECKSUM_BYTES).digest()


def text_hash(text: str) -> bytes:
    """128 bits of BLAKE2b over the text's UTF-8 (lone surrogates kept as they are)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class VectorCache:
    """Thread-safe; opened on first use. `space()` first, then `get` / `put` in that space."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.problem = ""  # why the cache is not used (it could not be opened); "" when it is fine
        self.dropped = 0  # rows that failed their checksum, dropped (and embedded again) by this process

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), timeout=LOCK_WAIT, check_same_thread=False, isolation_level=None)
            try:
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # only a new, empty file takes it
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash loses at most the last commits, never consistency
                db.executescript(SCHEMA)
                if "checksum" not in {row[1] for row in db.execute("PRAGMA table_info(vectors)")}:
                    db.execute("ALTER TABLE vectors ADD COLUMN checksum BLOB")  # a cache from before checksums
            except sqlite3.DatabaseError:
                db.close()
                raise
            self._db = db
        return self._db

    def space(self, identity: str, dimensions: int) -> int | None:
        """The id of the vector space `identity` (created on first use); None when the cache is unusable."""
        def find(db: sqlite3.Connection) -> int:
            db.execute("INSERT OR IGNORE INTO spaces (identity, dimensions, created_at) VALUES (?, ?, ?)",
                       (identity, dimensions, time.time()))
            row = db.execute("SELECT id, dimensions FROM spaces WHERE identity = ?", (identity,)).fetchone()
            if row[1] != dimensions:  # the same identity cannot change its dimensions; never mix them
                raise sqlite3.DatabaseError(f"vector space {identity[:12]} holds {row[1]}-dimension vectors, "
                                            f"not {dimensions}")
            return int(row[0])

        return self._guarded("open", find, None)

    def get(self, space: int | None, dimensions: int, texts: list[str]) -> dict[int, np.ndarray]:
        """Cached vectors by position in `texts` (misses are absent)."""
        if space is None or not texts:
            return {}
        hashes = [text_hash(t) for t in texts]

        def read(db: sqlite3.Connection) -> dict[int, np.ndarray]:
            found: dict[bytes, np.ndarray] = {}
            bad: list[bytes] = []
            unique = list(dict.fromkeys(hashes))
            for part in batches(unique):
                rows = db.execute(f"SELECT text_hash, vector, checksum FROM vectors WHERE space = ? AND text_hash "
                                  f"IN ({marks(len(part))})", (space, *part)).fetchall()
                for key, blob, stored in rows:
                    if len(blob) == 4 * dimensions and stored == checksum(space, key, blob):
                        found[key] = np.frombuffer(blob, dtype=np.float32)
                    else:  # not a vector of this space, or not the one written: dropped, embedded again
                        bad.append(key)
            if bad:
                log.warning("the shared vector cache %s: %d rows failed their checksum; dropped, embedded again",
                            self.path, len(bad))
                self._drop(db, space, bad)
                self.dropped += len(bad)
            return {i: found[h] for i, h in enumerate(hashes) if h in found}

        return self._guarded("read", read, {})

    def _drop(self, db: sqlite3.Connection, space: int, keys: list[bytes]) -> None:
        """Delete rows that failed a check (the caller embeds their texts again and stores them anew)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("DELETE FROM vectors WHERE space = ? AND text_hash = ?", [(space, k) for k in keys])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def put(self, space: int | None, texts: list[str], vectors: np.ndarray) -> None:
        """Store the encoder's vectors of `texts`, all in one transaction."""
        if space is None or not texts:
            return
        rows = []
        for text, vector in zip(texts, vectors):
            key, blob = text_hash(text), np.asarray(vector, dtype=np.float32).tobytes()
            rows.append((space, key, blob, checksum(space, key, blob)))

        def write(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                self._insert(db, rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

        self._guarded("write", write, None)

    def forget(self, space: int | None, texts: list[str]) -> None:
        """Drop the rows of `texts` (they failed a check against the encoder)."""
        if space is None or not texts:
            return
        self._guarded("write", lambda db: self._drop(db, space, [text_hash(t) for t in texts]), None)

    def _insert(self, db: sqlite3.Connection, rows: list[tuple]) -> None:
        db.executemany("INSERT OR IGNORE INTO vectors (space, text_hash, vector, checksum) VALUES (?, ?, ?, ?)",
                       rows)

    def count(self, space: int | None = None) -> int:
        """Vectors held (in one space, or in all)."""
        query, args = ("SELECT COUNT(*) FROM vectors", ()) if space is None else (
            "SELECT COUNT(*) FROM vectors WHERE space = ?", (space,))
        return self._guarded("read", lambda db: int(db.execute(query, args).fetchone()[0]), 0)

    def _guarded(self, action: str, work, fallback):
        """Run `work(db)` under the lock; a cache that fails is logged and treated as empty."""
        with self._lock:
            if self.problem:
                return fallback
            try:
                return work(self._connect())
            except sqlite3.Error as error:
                held = held_by(self.path) if busy(error) else ""
                log.warning("the shared vector cache %s could not %s (%s%s); embedding without it",
                            self.path, action, error, held, exc_info=True)
                if self._db is None and not busy(error):  # it cannot be opened (e.g. not a database): not again
                    self.problem = f"{type(error).__name__}: {error}"  # in this process (busy: the next call tries)
                return fallback

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
