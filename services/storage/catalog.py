"""The index manifest: per file its hash and chunks, plus index metadata, in SQLite.

The catalogue is the source of truth for what is in the index. Each file is committed in one
transaction, so a reader (or a crash) sees every file either fully at its old version or fully at
its new one; vectors whose ids the catalogue does not list are ignored and swept on the next run.
The keyword indexes (FTS5 tables: per chunk, services/storage/keyword_index.py; per file,
services/storage/file_words.py) are written in the same transactions, so they always list exactly the
catalogued chunks and files.

The catalogue is cut by role: its parts share its one connection and lock (services/storage/catalog_db.py)
and hold their sections' reads and writes: `keywords` (catalog_keywords.py), `graph` (the code graph and go
to symbol / file's rows, catalog_graph.py) and `awaiting` (the chunks awaiting their vectors,
catalog_awaiting.py).

An indexing run commits a file in two steps (services/indexing/indexer.py): first its chunks, names, keywords
and references, each chunk listed in `awaiting` (its vector is not stored yet); then, once its vectors are
stored, the chunks leave `awaiting`. A chunk awaiting its vector is a state, never damage: the vector store
is expected to hold a vector for every chunk *not* awaiting one (vector_ids).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from services.core.batching import SQL_VALUES, batches, marks
from services.core.models import Chunk, SkippedFile, chunk_id, count_by_reason
from services.storage import code_graph, file_words
from services.storage import keyword_index as words
from services.storage.catalog_awaiting import Awaiting
from services.storage.catalog_db import CHUNKS, ID_PARTS, CatalogDb, vector_id
from services.storage.catalog_graph import Graph
from services.storage.catalog_keywords import Keywords
from services.storage.faults import LOCK_WAIT

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, file_hash TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, language TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    vid TEXT NOT NULL, file INTEGER NOT NULL, language TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    text_at INTEGER NOT NULL, text_length INTEGER NOT NULL, doc_length INTEGER NOT NULL,
    symbol TEXT NOT NULL, qualified_name TEXT NOT NULL, kind TEXT NOT NULL, bases TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    refs INTEGER NOT NULL DEFAULT 0, ordinal INTEGER NOT NULL DEFAULT 0,
    contiguous INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS texts (file INTEGER PRIMARY KEY, text BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS awaiting (vid TEXT PRIMARY KEY);
"""

# 2: chunk text only here, none in Chroma (its documents were a second copy)
# 3: Chroma keeps short vector ids and no metadata; big indexes store fewer dimensions
#    (services/storage/projection.py). Here: no chunk id column (the id is made of path, lines, hash and
#    ordinal; rows are found by vector id), a file number instead of the path and the file hash per
#    chunk, and the text of a file's chunks (docstring and code) compressed together in `texts`,
#    each chunk a span of it. An older catalogue is not read: it is rebuilt.
INDEX_FORMAT = "3"
FORMAT_CHANGES = {"1": "chunk text is now stored once, in the manifest",
                  "2": "the index is about half the size: short vector ids, no vector metadata, fewer dimensions"}
INSERT_COLUMNS = ("vid, file, language, start_line, end_line, text_at, text_length, doc_length, symbol, "
                  "qualified_name, kind, bases, content_hash, refs, ordinal, contiguous")
SELECT_CHUNKS = ("SELECT f.path, c.language, c.start_line, c.end_line, c.file, c.text_at, c.text_length, "
                 "c.doc_length, c.symbol, c.qualified_name, c.kind, c.bases, c.content_hash, f.file_hash, c.refs, "
                 f"c.ordinal, c.contiguous FROM {CHUNKS}")
TEXT_CACHE_FILES = 512  # files whose decompressed chunk text is kept (a query's results span a few hundred)
HASH_CHARS = 16  # hashes kept per chunk (64 bits; the chunk id holds the same 16 characters)
INCREMENTAL = 2  # PRAGMA auto_vacuum's value: free pages go back to the file system on incremental_vacuum


@dataclass(frozen=True)
class FileRecord:
    path: str
    file_hash: str
    size: int
    mtime_ns: int
    language: str


class Catalog(CatalogDb):
    """Files and chunks, metadata and skipped files; the rest in its parts (keywords, graph, awaiting)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # another process's lock is waited on as long as the other stores wait (then "busy: …"), not 5 s
        super().__init__(sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=LOCK_WAIT),
                         threading.RLock())
        self._text_cache: dict[tuple[int, str], str] = {}  # (file number, file hash) -> its chunks' text
        self._listing: list[tuple[str, str, str]] | None = None  # id_paths_languages() until a write
        self.generation = 0  # counts writes: what is kept of the listing (go to symbol) is of one generation
        if not self._db.execute("PRAGMA page_count").fetchone()[0]:  # a new file's mode (an older one's: compact());
            self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")  # opening an existing file must write nothing
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._add_indexes()
        self.keywords = Keywords(self._db, self._lock)
        self.graph = Graph(self._db, self._lock)
        self.awaiting = Awaiting(self._db, self._lock)
        self.keywords_filled = self.keywords.keep_keywords()

    def _add_indexes(self) -> None:
        """On the current layout only: an older catalogue is read for its metadata, then rebuilt."""
        if self._current_layout():
            self._db.execute("CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file)")
            self._db.execute("CREATE INDEX IF NOT EXISTS chunks_by_vid ON chunks(vid)")
            self._db.execute("CREATE INDEX IF NOT EXISTS chunks_by_symbol ON chunks(symbol COLLATE NOCASE)")
            code_graph.create(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- metadata ---
    def backend(self) -> str:
        """The encoder backend that made this index's vectors (indexes from before backends were torch's)."""
        return self.get_meta("backend", "torch")

    def set_meta(self, **values: str) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                 [(k, str(v)) for k, v in values.items()])

    # --- files and chunks ---
    def files(self, paths=None) -> dict[str, FileRecord]:
        """Every file's record, or only those of `paths` (a query's results: no read of every row)."""
        sql = "SELECT path, file_hash, size, mtime_ns, language FROM files"
        if paths is None:
            return {r[0]: FileRecord(*r) for r in self._query(sql)}
        rows = [r for part in batches(sorted(set(paths)))
                for r in self._query(sql + f" WHERE path IN ({marks(len(part))})", part)]
        return {r[0]: FileRecord(*r) for r in rows}

    def files_under(self, folder: str) -> dict[str, FileRecord]:
        """The records of the files inside a folder (workspace-relative), at any depth."""
        rows = self._query("SELECT path, file_hash, size, mtime_ns, language FROM files WHERE path > ? AND path < ?",
                           (folder + "/", folder + "0"))  # "0" sorts just after "/"
        return {r[0]: FileRecord(*r) for r in rows}

    def commit_file(self, record: FileRecord, chunks: list[Chunk], uses: dict[str, str] | None = None,
                    awaiting: Iterable[str] = ()) -> list[str]:
        """Replace a file's chunks, and its references when `uses` is given ({name: encoded uses}, the code
        graph's), in one transaction; return the ids it no longer has. `awaiting`: the ids of those chunks
        whose vectors are not stored yet."""
        with self._lock, self._transaction():
            self._db.execute("INSERT INTO files VALUES (?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET "
                             "file_hash = excluded.file_hash, size = excluded.size, mtime_ns = excluded.mtime_ns, "
                             "language = excluded.language",  # an update keeps the file's number (rowid)
                             (record.path, record.file_hash, record.size, record.mtime_ns, record.language))
            number = self._file_number(record.path)
            self._file_changed(number)
            old = set(self._ids(f"SELECT {ID_PARTS} FROM {CHUNKS} WHERE c.file = ?", (number,)))
            self.keywords.remove_file(number, record.path)
            self._db.execute("DELETE FROM awaiting WHERE vid IN (SELECT vid FROM chunks WHERE file = ?)", (number,))
            self._db.execute("DELETE FROM chunks WHERE file = ?", (number,))
            self._db.executemany("INSERT OR IGNORE INTO awaiting VALUES (?)", [(vector_id(i),) for i in awaiting])
            text, spans = _layout(chunks)
            self._db.executemany(f"INSERT INTO chunks ({INSERT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                 [_chunk_row(c, number, span) for c, span in zip(chunks, spans)])
            self.keywords.add_file(number, record.path, chunks)
            self._db.execute("INSERT OR REPLACE INTO texts VALUES (?, ?)", (number, zlib.compress(text.encode(), 6)))
            if uses is not None:
                code_graph.replace(self._db, number, uses)
            self._db.execute("DELETE FROM skipped WHERE path = ?", (record.path,))
        return sorted(old - {c.id for c in chunks})

    def remove_file(self, path: str) -> list[str]:
        with self._lock, self._transaction():
            number = self._file_number(path)
            self._file_changed(number)
            ids = self._ids(f"SELECT {ID_PARTS} FROM {CHUNKS} WHERE c.file = ?", (number,))
            self.keywords.remove_file(number, path)
            self._db.execute("DELETE FROM awaiting WHERE vid IN (SELECT vid FROM chunks WHERE file = ?)", (number,))
            self._db.execute("DELETE FROM chunks WHERE file = ?", (number,))
            self._db.execute("DELETE FROM texts WHERE file = ?", (number,))
            code_graph.remove(self._db, number)
            self._db.execute("DELETE FROM files WHERE path = ?", (path,))
        return ids

    def _file_number(self, path: str) -> int | None:
        row = self._db.execute("SELECT rowid FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def clear(self) -> None:
        with self._lock, self._transaction():
            for table in ("files", "chunks", "texts", "skipped", "meta", "awaiting"):
                self._db.execute(f"DELETE FROM {table}")
            if self._current_layout():
                words.remove_all(self._db)
                file_words.remove_all(self._db)
                code_graph.remove_all(self._db)
            self._text_cache.clear()
            self._listing = None
            self.generation += 1

    def _file_changed(self, number: int | None) -> None:
        """Drop what is kept of a file about to be written (its text) and the chunk listing."""
        self._listing = None
        self.generation += 1
        for key in [k for k in self._text_cache if k[0] == number]:
            del self._text_cache[key]

    def chunks(self, ids: list[str] | None = None, path: str | None = None) -> list[Chunk]:
        if ids is not None:
            wanted = set(ids)
            found: dict = {}
            for part in batches([vector_id(i) for i in wanted]):
                chunks = self._read(f"WHERE c.vid IN ({marks(len(part))})", part)
                found.update((c.id, c) for c in chunks if c.id in wanted)
            return [found[i] for i in ids if i in found]
        if path is not None:
            return self._read("WHERE f.path = ? ORDER BY c.start_line", (path,))
        return self._read("ORDER BY c.rowid")

    def definitions(self, names: list[str], limit: int = 500, ending: str = "") -> list[Chunk]:
        """Chunks that define one of `names` (their symbol, ignoring case; not module or text chunks), at most
        `limit`, those spelled as asked first, then classes and module-level functions before methods, by path (a
        name like `__init__` is defined thousands of times in a big repository: each row read costs its file's text).
        `ending` (`Config.__init__`): only those whose qualified name is it or ends with `.ending`, ignoring case."""
        found: list[Chunk] = []
        where = "AND (c.qualified_name = ? COLLATE NOCASE OR c.qualified_name LIKE ? ESCAPE '\\') " if ending else ""
        extra = (ending, "%." + like_escaped(ending)) if ending else ()
        for part in batches(list(dict.fromkeys(names)), SQL_VALUES // 2):  # each name is bound twice
            found += self._read(f"WHERE c.symbol COLLATE NOCASE IN ({marks(len(part))}) {where}"
                                f"AND c.kind NOT IN ('module', 'text') ORDER BY c.symbol IN ({marks(len(part))}) "
                                "DESC, c.qualified_name IN ('', c.symbol) DESC, f.path, c.start_line LIMIT ?",
                                (*part, *extra, *part, limit - len(found)))
            if len(found) >= limit:
                break
        return found

    def paths_ending(self, path: str) -> list[str]:
        """Catalogued paths equal to `path` or ending with `/path` (case-insensitive), shortest first."""
        tail = path.strip("/").lower()
        pattern = "%/" + like_escaped(tail)
        rows = self._query("SELECT path FROM files WHERE lower(path) = ? OR lower(path) LIKE ? ESCAPE '\\' "
                           "ORDER BY length(path), path", (tail, pattern))
        return [r[0] for r in rows]

    def chunk_batches(self, files: int = 200):
        """Every chunk, a few hundred files' worth at a time (each batch one snapshot; a file committed
        between batches is read at its new version, or missed when it came after its place)."""
        last = 0
        while True:
            numbers = [r[0] for r in self._query("SELECT rowid FROM files WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                                 (last, files))]
            if not numbers:
                return
            last = numbers[-1]
            yield self._read("WHERE c.file BETWEEN ? AND ? ORDER BY c.rowid", (numbers[0], last))

    def _read(self, where: str, params=()) -> list[Chunk]:
        """Chunks with their text, rows and texts read in one snapshot."""
        with self._lock:
            began = not self._db.in_transaction
            if began:
                self._db.execute("BEGIN")
            try:
                rows = self._db.execute(f"{SELECT_CHUNKS} {where}", params).fetchall()
                texts = self._texts({(row[4], row[13]) for row in rows})
            finally:
                if began:
                    self._db.execute("COMMIT")
        return [_row_chunk(row, texts[row[4]]) for row in rows]

    def _texts(self, files: set[tuple[int, str]]) -> dict[int, str]:
        """Each file's chunk text by file number, from the cache of recently read ones (kept by
        number and file hash, dropped when the file is written) or decompressed."""
        found: dict = {}
        for key in files:
            if key in self._text_cache:
                found[key[0]] = self._text_cache[key] = self._text_cache.pop(key)  # now the most recent
        missing = sorted(number for number, _ in files if number not in found)
        hashes = dict(files)
        for part in batches(missing):
            rows = self._db.execute(f"SELECT file, text FROM texts WHERE file IN ({marks(len(part))})", part)
            for number, blob in rows:
                found[number] = zlib.decompress(blob).decode("utf-8")
                self._text_cache[(number, hashes[number])] = found[number]
        while len(self._text_cache) > TEXT_CACHE_FILES:
            self._text_cache.pop(next(iter(self._text_cache)))
        return found

    def id_paths_languages(self) -> list[tuple[str, str, str]]:
        """(id, path, language) of every chunk, without their text (for filtering); kept until a write."""
        with self._lock:
            if self._listing is None:
                rows = self._db.execute(f"SELECT {ID_PARTS}, c.language FROM {CHUNKS}").fetchall()
                self._listing = [(chunk_id(*row[:5]), row[0], row[5]) for row in rows]
            return self._listing

    def ids_for_vectors(self, vids: list[str]) -> dict[str, str]:
        """Chunk ids by vector id (store.vector_id), for the vectors the catalogue lists."""
        found: dict = {}
        for part in batches(vids):
            rows = self._query(f"SELECT c.vid, {ID_PARTS} FROM {CHUNKS} WHERE c.vid IN ({marks(len(part))})",
                               part)
            found.update((row[0], chunk_id(*row[1:])) for row in rows)
        return found

    def chunk_ids(self) -> set[str]:
        return set(self._ids(f"SELECT {ID_PARTS} FROM {CHUNKS}"))

    def vector_ids(self) -> list[str]:
        """The vector id of every chunk that is not awaiting its vector (what the vector store should hold)."""
        return [row[0] for row in self._query("SELECT vid FROM chunks WHERE vid NOT IN (SELECT vid FROM awaiting)")]

    # --- chunks awaiting their vectors (the second step of a run; which ones: self.awaiting) ---
    def awaiting_chunks(self, path: str) -> list[Chunk]:
        """A file's chunks whose vectors are not stored yet, by line."""
        return self._read("WHERE f.path = ? AND c.vid IN (SELECT vid FROM awaiting) ORDER BY c.start_line", (path,))

    def paths_of_vectors(self, vids: list[str]) -> set[str]:
        """The files holding these vector ids' chunks."""
        found: set = set()
        for part in batches(vids):
            rows = self._query(f"SELECT DISTINCT f.path FROM {CHUNKS} WHERE c.vid IN ({marks(len(part))})",
                               part)
            found.update(row[0] for row in rows)
        return found

    # --- reference counts and totals ---
    def set_references(self, counts: dict[str, int]) -> None:
        with self._lock, self._transaction():
            self._db.execute("UPDATE chunks SET refs = 0")
            self._db.executemany("UPDATE chunks SET refs = ? WHERE vid = ?",
                                 [(n, vector_id(i)) for i, n in counts.items() if n])

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

    # --- compaction ---
    def compact(self) -> None:
        """Fold the write-ahead log into the database and return its free pages to the file system: VACUUM
        when over a quarter of it is free (after a rebuild or many removals; it also packs the tables) or when
        the file is of before incremental vacuum (once), else an incremental vacuum (cheap)."""
        with self._lock:
            if self._current_layout():  # fold some of the keyword table's small per-commit segments (bounded work)
                self._db.execute(f"INSERT INTO {words.TABLE}({words.TABLE}, rank) VALUES ('merge', 500)")
                code_graph.prune(self._db)
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            if pages and (free > pages / 4 or self._db.execute("PRAGMA auto_vacuum").fetchone()[0] != INCREMENTAL):
                self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self._db.execute("VACUUM")
            elif free:
                self._db.executescript("PRAGMA incremental_vacuum")  # execute() would free one page only
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- skipped files ---
    def set_skipped(self, skipped: list[SkippedFile], only: set[str] | None = None) -> None:
        """The skipped files a run found; `only`: it looked at these paths (and what lies under them) alone,
        the rest stay listed."""
        with self._lock, self._transaction():
            if only is None:
                self._db.execute("DELETE FROM skipped")
            else:  # "0" sorts just after "/": the range is what lay under a path that was a folder
                self._db.executemany("DELETE FROM skipped WHERE path = ? OR (path > ? AND path < ?)",
                                     [(path, path + "/", path + "0") for path in only])
            self._db.executemany("INSERT OR REPLACE INTO skipped VALUES (?, ?)",
                                 [(s.path, s.reason) for s in skipped])

    def skipped(self) -> list[SkippedFile]:
        return [SkippedFile(*r) for r in self._query("SELECT path, reason FROM skipped ORDER BY path")]

    def skipped_by_reason(self) -> dict[str, int]:
        return count_by_reason(self.skipped())


def _layout(chunks: list[Chunk]) -> tuple[str, list[tuple[int, int, int]]]:
    """A file's chunk texts (docstring, then code) one after the other, compressed together in
    `texts` (about 4x: twice what compressing each chunk alone gives), and each chunk's span of it:
    (start, length, docstring length)."""
    parts, spans, at = [], [], 0
    for c in chunks:
        piece = c.docstring + c.content
        parts.append(piece)
        spans.append((at, len(piece), len(c.docstring)))
        at += len(piece)
    return "".join(parts), spans


def _chunk_row(c: Chunk, file_number: int, span: tuple[int, int, int]) -> tuple:
    return (vector_id(c.id), file_number, c.language, c.start_line, c.end_line, *span, c.symbol, c.qualified_name,
            c.kind, json.dumps(list(c.bases)) if c.bases else "", c.content_hash[:HASH_CHARS], c.references,
            c.ordinal, int(c.contiguous))


def _row_chunk(row: tuple, text: str) -> Chunk:
    piece = text[row[5]:row[5] + row[6]]
    return Chunk(path=row[0], language=row[1], start_line=row[2], end_line=row[3], content=piece[row[7]:],
                 symbol=row[8], qualified_name=row[9], kind=row[10], bases=tuple(json.loads(row[11] or "[]")),
                 docstring=piece[:row[7]], content_hash=row[12], file_hash=row[13] or "", references=row[14],
                 ordinal=row[15], contiguous=bool(row[16]))


def like_escaped(text: str) -> str:
    """`text` for a LIKE pattern with ESCAPE '\\': its `\\`, `%` and `_` taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
