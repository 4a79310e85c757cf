"""BM25 keyword search over the catalogue's chunks: an SQLite FTS5 table inside the manifest.

The table (`chunk_words`) holds each chunk's code-aware tokens (services/core/text.code_tokens:
`parseHTTPResponse` -> `parsehttpresponse parse http response`), keyed by the chunk's row in the
catalogue. It is written in the same transaction as the file's chunks (Catalog.commit_file), so a
committed edit is searchable at once, a removed file is gone at once, and after a kill the two agree.
It is contentless (the chunk text is already in the catalogue): a delete names the words the row was
added with, worked out again from the catalogue's text, so TOKENS_VERSION must change with code_tokens.

Scores are FTS5's bm25() (k1 1.2, b 0.75), negated so higher is better. Query tokens are quoted, so
no FTS syntax can be injected. FTS5 scores every row a question's words reach, so a long question
(a bug report's 200 words reach every chunk) is answered by its most telling words, as Lucene's
MoreLikeThis picks them: count in the question x IDF, best first, until they reach MAX_ROWS rows or
MAX_WORDS words (`telling`). A short question is bounded the same way: on a big index its commonest words
reach too many rows (at a million chunks `line` alone reaches ~100,000), and they add least to the scores;
a question whose words reach at most MAX_ROWS rows (every question, on an index under 10,000 chunks) is
scored whole. A run commits every file's chunks (and so their words) before it makes their vectors:
keyword search covers the whole workspace while vectors are still being made.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from services.core.batching import batches, marks
from services.core.models import Chunk
from services.core.text import code_tokens

TABLE = "chunk_words"
TOKENS_VERSION = "1"  # change with code_tokens: an index with another version is refilled on open
CREATE = (f"CREATE VIRTUAL TABLE {TABLE} USING fts5(words, content='', "
          "tokenize=\"unicode61 remove_diacritics 0 tokenchars '_'\")")
MAP_BATCH = 256  # hits mapped to chunk ids at a time while a filter drops some
MAX_ROWS = 40_000  # rows (summed over words) a question's words may reach before the least telling are dropped
MIN_WORDS = 1  # the most telling word is kept whatever it reaches
MAX_WORDS = 32  # and at most this many (FTS5's bm25() costs rows reached x words asked)
VOCAB = "temp.chunk_vocab"  # FTS5's own per-word row counts, per connection


def words(qualified_name: str, docstring: str, content: str) -> str:
    """A chunk's tokens as the table stores them, space-separated."""
    return " ".join(code_tokens(f"{qualified_name} {docstring} {content}"))


def chunk_words(chunk: Chunk) -> str:
    return words(chunk.qualified_name, chunk.docstring, chunk.content)


def query_tokens(text: str) -> list[str]:
    """The question's tokens, repeats kept (they count towards which words are most telling)."""
    return code_tokens(text)


def _phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def create(db: sqlite3.Connection) -> None:
    db.execute(CREATE)


def add(db: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> None:
    db.executemany(f"INSERT INTO {TABLE}(rowid, words) VALUES (?, ?)", rows)


def remove(db: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> None:
    """Rows as they were added (rowid, the same words)."""
    db.executemany(f"INSERT INTO {TABLE}({TABLE}, rowid, words) VALUES ('delete', ?, ?)", rows)


def remove_all(db: sqlite3.Connection) -> None:
    db.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('delete-all')")


def telling(db: sqlite3.Connection, weights: dict[str, float]) -> list[str]:
    """The tokens worth scoring: all while they are at most MAX_WORDS reaching at most MAX_ROWS rows, else
    the most telling (weight x IDF, best first) within both bounds (the first MIN_WORDS whatever they reach).
    Tokens no row holds are left out."""
    if not weights:
        return []
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB} USING fts5vocab(main, {TABLE}, row)")
    rows = {term: doc for part in batches(list(weights))
            for term, doc in db.execute(f"SELECT term, doc FROM {VOCAB} WHERE term IN ({marks(len(part))})", part)}
    if sum(rows.values()) <= MAX_ROWS and len(rows) <= MAX_WORDS:
        return [t for t in weights if t in rows]
    total = row_count(db)
    idf = {t: math.log((total - n + 0.5) / (n + 0.5)) for t, n in rows.items()}
    kept: list = []
    reached = 0
    for token in sorted(rows, key=lambda t: (-weights[t] * idf[t], t)):
        if len(kept) < MIN_WORDS or reached + rows[token] <= MAX_ROWS:
            kept.append(token)
            reached += rows[token]
        if len(kept) == MAX_WORDS:
            break
    return kept


def ranked(db: sqlite3.Connection, tokens: list[str], limit: int | None) -> list[tuple[int, float]]:
    """(rowid, BM25 score) of rows holding any of the question's telling tokens (a token's weight: its
    count in the question), best first; all of them when limit is None."""
    tokens = telling(db, dict(Counter(tokens)))
    if not tokens:
        return []
    sql = f"SELECT rowid, -rank FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY rank"
    params: tuple = (" OR ".join(map(_phrase, tokens)),)
    if limit is not None:
        sql, params = sql + " LIMIT ?", params + (limit,)
    return db.execute(sql, params).fetchall()


def weighted(db: sqlite3.Connection, weights: dict[str, float], limit: int) -> list[tuple[int, float]]:
    """(rowid, score) of the `limit` best rows, score = sum over the telling tokens of weight x that token's
    BM25 score. FTS5's bm25() of an OR query is the sum of its words' scores: one query per distinct weight,
    summed by SQLite."""
    groups: dict[float, list[str]] = {}
    for token in telling(db, weights):
        groups.setdefault(weights[token], []).append(token)
    if not groups:
        return []
    each = f"SELECT rowid AS row, -rank * ? AS score FROM {TABLE} WHERE {TABLE} MATCH ?"
    sql = (f"SELECT row, SUM(score) AS total FROM ({' UNION ALL '.join([each] * len(groups))}) "
           "GROUP BY row ORDER BY total DESC, row LIMIT ?")
    params = [x for weight, tokens in groups.items() for x in (weight, " OR ".join(map(_phrase, tokens)))]
    return db.execute(sql, [*params, limit]).fetchall()


def verify(db: sqlite3.Connection) -> None:
    """FTS5's own check of the index's structure (O(index)); raises sqlite3.DatabaseError when garbled."""
    db.execute(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('integrity-check', 0)")


def row_count(db: sqlite3.Connection) -> int:
    return db.execute(f"SELECT COUNT(*) FROM {TABLE}_docsize").fetchone()[0]


class KeywordIndex:
    """Top-k BM25 search over the catalogue's chunks (its `keywords`: services/storage/catalog_keywords.py)."""

    def __init__(self, catalog: Callable[[], Any]) -> None:
        self._catalog = catalog

    def search(self, query: str, k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score) with score > 0; `allowed` restricts to those ids (filters inside)."""
        return self.search_tokens(query_tokens(query), k, allowed)

    def search_tokens(self, tokens: list[str], k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """As `search`, for tokens as the table stores them (`query_tokens` of a question, or whole identifiers)."""
        if not tokens or k <= 0 or allowed == set():
            return []
        return self._top(k, allowed, lambda keywords, limit: keywords.ranked(tokens, limit))

    def search_weighted(self, weights: dict[str, float], k: int) -> list[tuple[str, float]]:
        """Top-k (id, score) where score = sum over tokens of weight x that token's BM25 score.

        For long questions: the caller picks the tokens and weighs them (identifiers over prose).
        """
        weights = {t: w for t, w in weights.items() if w > 0 and t}
        if not weights or k <= 0:
            return []
        return self._top(k, None, lambda keywords, limit: keywords.weighted(weights, limit))

    def _top(self, k: int, allowed: set[str] | None,
             best_rows: Callable[[Any, int], list[tuple[int, float]]]) -> list[tuple[str, float]]:
        """The k best hits over the catalogue; `best_rows(keywords, limit)` gives its best (row, score) pairs.
        A filter may drop many: the limit widens until k are kept or every match was seen."""
        keywords = self._catalog().keywords
        accept = None if allowed is None else (lambda i, path: i in allowed)
        limit = k if accept is None else max(4 * k, MAP_BATCH)
        while True:
            rows = best_rows(keywords, limit)
            found = _first(rows, k, keywords.refs, accept)
            if len(found) == k or len(rows) < limit:
                return _best(found, k)
            limit *= 16


def _first(rows: list[tuple[int, float]], k: int, refs: Callable[[list[int]], dict[int, tuple[str, str]]],
           accept: Callable[[str, str], bool] | None) -> list[tuple[str, float]]:
    """The first k rows (best first) with score > 0 that `accept` keeps, as (chunk id, score)."""
    out: list[tuple[str, float]] = []
    for start in range(0, len(rows), MAP_BATCH if accept else max(k, 1)):
        part = [(r, s) for r, s in rows[start:start + (MAP_BATCH if accept else max(k, 1))] if s > 0]
        found = refs([r for r, _ in part])
        for rowid, score in part:
            if rowid in found and (accept is None or accept(*found[rowid])):
                out.append((found[rowid][0], score))
                if len(out) == k:
                    return out
        if accept is None:
            break
    return out


def _best(hits: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    return sorted(hits, key=lambda hit: -hit[1])[:k]
