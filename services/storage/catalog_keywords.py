"""The catalogue's keyword tables: per chunk (services/storage/keyword_index.py) and per file
(services/storage/file_words.py), written in the catalogue's transactions, so they always list exactly the
catalogued chunks and files; searched here under its lock."""

from __future__ import annotations

import zlib

from services.core.batching import batches, marks
from services.core.models import Chunk, chunk_id
from services.storage import file_words
from services.storage import keyword_index as words
from services.storage.catalog_db import CHUNKS, ID_PARTS, CatalogDb


class Keywords(CatalogDb):
    """Keyword search over the catalogue (`catalog.keywords`), and the keyword rows its writes keep."""

    def keep_keywords(self) -> int:
        """Create and fill the keyword table when the catalogue has none (an index from before it, whose
        BM25 files the caller removes) or fills it with other tokens; returns the chunks filled (0: none)."""
        if not self._current_layout():
            return 0
        has = self._db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (words.TABLE,)).fetchone()
        has_files = file_words.exists(self._db)
        if has and has_files and self.get_meta("keyword_tokens") == words.TOKENS_VERSION \
                and self.get_meta("file_words") == file_words.WORDS_VERSION:
            return 0
        with self._lock, self._transaction():
            if not has:
                words.create(self._db)
            if not has_files:
                file_words.create(self._db)
            return self._fill_keywords()

    def refill_keywords(self) -> int:
        """Rebuild the keyword table from the catalogue (a repair); returns the chunks it holds."""
        with self._lock, self._transaction():
            return self._fill_keywords()

    def _fill_keywords(self) -> int:
        """Under the caller's transaction: the keyword table from every catalogued chunk, file by file."""
        words.remove_all(self._db)
        file_words.remove_all(self._db)
        filled = 0
        for number, path in self._db.execute("SELECT rowid, path FROM files").fetchall():
            rows = self._word_rows(number)
            words.add(self._db, rows)
            file_words.add(self._db, number, path, self._file_text(number))
            filled += len(rows)
        self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                             [("keyword_tokens", words.TOKENS_VERSION), ("file_words", file_words.WORDS_VERSION)])
        return filled

    def _file_text(self, number: int) -> str:
        """A catalogued file's text as file_words holds it: its chunks' content in line order."""
        rows = self._db.execute("SELECT text_at, text_length, doc_length FROM chunks WHERE file = ? "
                                "ORDER BY start_line, end_line, rowid", (number,)).fetchall()
        blob = self._db.execute("SELECT text FROM texts WHERE file = ?", (number,)).fetchone() if rows else None
        text = zlib.decompress(blob[0]).decode("utf-8") if blob else ""
        return file_words.file_text(text[at:at + length][doc:] for at, length, doc in rows)

    def _word_rows(self, number: int | None) -> list[tuple[int, str]]:
        """(chunk row, its words) of a file's catalogued chunks, as the keyword table holds them."""
        if number is None:
            return []
        rows = self._db.execute("SELECT rowid, text_at, text_length, doc_length, qualified_name FROM chunks "
                                "WHERE file = ? ORDER BY rowid", (number,)).fetchall()
        blob = self._db.execute("SELECT text FROM texts WHERE file = ?", (number,)).fetchone() if rows else None
        text = zlib.decompress(blob[0]).decode("utf-8") if blob else ""
        out = []
        for rowid, at, length, doc_length, qualified_name in rows:
            piece = text[at:at + length]
            out.append((rowid, words.words(qualified_name, piece[:doc_length], piece[doc_length:])))
        return out

    def remove_file(self, number: int | None, path: str) -> None:
        """Under the caller's transaction, before the file's chunks go: its rows in both tables."""
        words.remove(self._db, self._word_rows(number))
        if number is not None and self._db.execute(f"SELECT 1 FROM {file_words.TABLE}_docsize WHERE id = ?",
                                                   (number,)).fetchone():
            file_words.remove(self._db, number, path, self._file_text(number))

    def add_file(self, number: int, path: str, chunks: list[Chunk]) -> None:
        """Under the caller's transaction, once the file's chunks are in: its rows in both tables."""
        rowids = [row[0] for row in self._db.execute("SELECT rowid FROM chunks WHERE file = ? ORDER BY rowid",
                                                     (number,))]
        words.add(self._db, zip(rowids, map(words.chunk_words, chunks)))
        in_order = sorted(chunks, key=lambda c: (c.start_line, c.end_line))  # stable: rowid order on ties
        file_words.add(self._db, number, path, file_words.file_text(c.content for c in in_order))

    def ranked(self, tokens: list[str], limit: int | None) -> list[tuple[int, float]]:
        """(chunk row, BM25 score) of chunks holding any token, best first."""
        with self._lock:
            return words.ranked(self._db, tokens, limit)

    def weighted(self, weights: dict[str, float], limit: int) -> list[tuple[int, float]]:
        with self._lock:
            return words.weighted(self._db, weights, limit)

    def file_listing(self) -> list[tuple[int, str]]:
        """(file number, path) of every catalogued file."""
        return self._query("SELECT rowid, path FROM files")

    def file_term_scores(self, term: str) -> list[tuple[int, float]]:
        """(file number, whole-file BM25 score) of every file holding the token (file_words)."""
        with self._lock:
            return file_words.term_scores(self._db, term)

    def paths_holding(self, term: str) -> list[str]:
        """The paths of the files whose text holds the token (file_words), sorted."""
        with self._lock:
            numbers = [number for number, _score in file_words.term_scores(self._db, term)]
            return sorted(path for part in batches(numbers) for (path,) in self._db.execute(
                f"SELECT path FROM files WHERE rowid IN ({marks(len(part))})", part))

    def file_names(self) -> list[tuple[int, str]]:
        """(file number, a function or class it defines), every file's."""
        with self._lock:
            return file_words.names(self._db)

    def refs(self, rowids: list[int]) -> dict[int, tuple[str, str]]:
        """(chunk id, path) by chunk row."""
        found: dict = {}
        for part in batches(rowids):
            rows = self._query(f"SELECT c.rowid, {ID_PARTS} FROM {CHUNKS} WHERE c.rowid IN ({marks(len(part))})",
                               part)
            found.update((row[0], (chunk_id(*row[1:]), row[1])) for row in rows)
        return found

    def keyword_problem(self, verify: bool = False) -> str:
        """What is wrong with the keyword table against the chunks ("" when they agree). `verify` also reads
        the whole table's structure (FTS5's integrity-check), raising sqlite3.DatabaseError when garbled."""
        with self._lock:
            if not self._db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (words.TABLE,)).fetchone():
                return "the keyword index is missing"
            if verify:
                words.verify(self._db)
            lacking = self._db.execute(f"SELECT COUNT(*) FROM chunks WHERE rowid NOT IN "
                                       f"(SELECT id FROM {words.TABLE}_docsize)").fetchone()[0]
            extra = words.row_count(self._db) + lacking - self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            if not file_words.exists(self._db):
                return "the file-level keyword index is missing"
            if verify:
                file_words.verify(self._db)
            files_lacking, files_extra = file_words.mismatch(self._db)
        if lacking:
            return f"{lacking} chunks missing from the keyword index"
        if extra:
            return f"{extra} removed chunks still in the keyword index"
        if files_lacking:
            return f"{files_lacking} files missing from the file-level keyword index"
        if files_extra:
            return f"{files_extra} removed files still in the file-level keyword index"
        return ""
