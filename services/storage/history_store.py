"""A workspace's git history as stored in its index folder, and a keyword index over commit messages.

`HistoryStore` keeps each non-merge commit (sha, time, message, the changes git reported) in a small SQLite
file of its own beside the catalogue, with the head it was read up to and the history's state (full, shallow,
none, ...). Changes are stored as git reported them; `follow_renames` maps them to today's paths when the
commits are loaded, so a later rename also renames the files of every older commit.

`CommitIndex` answers "which commits' messages match this question, among those made before time T" with
BM25 over code-aware tokens. Its statistics (IDF, average length) are those of the commits before T only:
a later commit teaches it nothing, not even which words are rare.

Reading git is services/indexing/history.py's job; this module only stores and searches.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from services.core.text import STOP_WORDS, code_tokens
from services.storage.faults import LOCK_WAIT, proven_problem

HISTORY_FILE = "history.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (seq INTEGER PRIMARY KEY, sha TEXT NOT NULL, time INTEGER NOT NULL,
                                    data BLOB NOT NULL);
"""
# What a history's state means, for health: full and shallow have commits; the others say why there are none.
FULL, SHALLOW, EMPTY, NOT_A_REPOSITORY, NO_GIT, FAILED, NOT_READ = (
    "full", "shallow", "empty", "none", "no-git", "error", "")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Commit:
    sha: str
    time: int  # committer time, unix seconds
    message: str  # subject and body
    files: tuple[str, ...]  # touched files, current (renamed-forward) workspace-relative paths


@dataclass(frozen=True)
class RecordedCommit:
    """A commit as git reported it: each change is (status, path) or (status, old, new) for R/C."""

    sha: str
    time: int
    message: str
    changes: tuple[tuple[str, ...], ...]

    def encode(self) -> bytes:
        fields = [self.message] + [part for change in self.changes for part in change]
        return zlib.compress("\0".join(fields).encode("utf-8"), 6)


def parse_changes(tokens: list[str]) -> list[tuple[str, ...]]:
    """git's `--name-status -z` fields (status, path[, path], ...) as changes."""
    changes, i = [], 0
    while i < len(tokens):
        status = tokens[i]
        if not status:
            i += 1
            continue
        width = 2 if status[0] in "RC" else 1
        changes.append((status, *tokens[i + 1:i + 1 + width]))
        i += 1 + width
    return changes


def decode(sha: str, time: int, data: bytes) -> RecordedCommit:
    message, *tokens = zlib.decompress(data).decode("utf-8").split("\0")
    return RecordedCommit(sha, time, message, tuple(parse_changes(tokens)))


def follow_renames(recorded: list[RecordedCommit]) -> list[Commit]:
    """Commits (newest first) with their files under today's names: a rename `old -> new` maps every
    older commit's `old` to `new`, transitively."""
    forward: dict[str, str] = {}  # old path -> current path, learnt from renames seen in newer commits
    commits = []
    for record in recorded:
        files = []
        for status, *paths in record.changes:
            current = forward.get(paths[-1], paths[-1])
            files.append(current)
            if status[0] == "R" and len(paths) == 2:  # older commits' `old` is today's `current`
                forward[paths[0]] = current
        commits.append(Commit(record.sha, record.time, record.message, tuple(dict.fromkeys(files))))
    return commits


@dataclass(frozen=True)
class HistoryState:
    """What is stored: `state` (FULL, SHALLOW, ... above), why there are no commits (`reason`), the head it
    was read up to, how many commits and the time of the newest."""

    state: str = NOT_READ
    reason: str = ""
    head: str = ""
    commits: int = 0
    newest: int = 0  # unix time of the newest commit, 0 without commits
    repaired: str = ""  # the damage a check found in the store's file, which was set aside and read again

    def repair_note(self) -> str:
        """"history: history.sqlite is not an SQLite database (…): set aside as history.sqlite.damaged; rebuilt
        from git" ("…; the next index run reads it again from git" until one has), or ""."""
        if not self.repaired:
            return ""
        then = "the next index run reads it again from git" if self.state == NOT_READ else "rebuilt from git"
        return f"history: {self.repaired}; {then}"

    @property
    def until(self) -> str:
        """The newest commit's date, 'YYYY-MM-DD' (UTC), or ''."""
        return datetime.fromtimestamp(self.newest, timezone.utc).strftime("%Y-%m-%d") if self.newest else ""

    def describe(self) -> str:
        """One line for health: '11,111 commits up to 2023-03-11', 'shallow clone: 1,000 commits up to ...',
        'none (not a git repository)'."""
        counted = f"{self.commits:,} commit{'' if self.commits == 1 else 's'}" + (
            f" up to {self.until}" if self.until else "")
        if self.state == FULL:
            return counted
        if self.state == SHALLOW:
            return f"shallow clone: {counted}"
        if self.state == FAILED and self.commits:
            return f"{counted} (could not be updated: {self.reason})"
        return f"none ({self.reason or 'not read yet: reindex to read it'})"


class HistoryStore:
    """The commits of one workspace, newest last in `seq`; every write bumps a generation number."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=LOCK_WAIT)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)
            self._db.execute("SELECT COUNT(*) FROM meta").fetchone()
        except BaseException:
            self._db.close()
            raise
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def state(self) -> HistoryState:
        meta = self._meta()
        return HistoryState(meta.get("state", NOT_READ), meta.get("reason", ""), meta.get("head", ""),
                            int(meta.get("commits", 0)), int(meta.get("newest", 0)), meta.get("repaired", ""))

    def generation(self) -> int:
        """Changes whenever the stored commits do (for caches built on them)."""
        return int(self._meta().get("generation", 0))

    def replace(self, recorded: list[RecordedCommit], state: str, head: str, reason: str = "") -> None:
        """Store `recorded` (newest first) instead of whatever was stored."""
        self._write(recorded, state, head, reason, keep=False)

    def append(self, recorded: list[RecordedCommit], state: str, head: str) -> None:
        """Add commits newer than every stored one (newest first), read up to `head`."""
        self._write(recorded, state, head, "", keep=True)

    def set_state(self, state: str, reason: str) -> None:
        """Record that the history could not be read (its commits, if any, are kept)."""
        with self._lock, self._db:
            self._set_meta(state=state, reason=reason)

    def recorded(self) -> list[RecordedCommit]:
        """Every stored commit, newest first."""
        rows = self._query("SELECT sha, time, data FROM commits ORDER BY seq DESC")
        return [decode(*row) for row in rows]

    def commits(self) -> list[Commit]:
        """Every stored commit, newest first, its files under today's names."""
        return follow_renames(self.recorded())

    def _write(self, recorded: list[RecordedCommit], state: str, head: str, reason: str, keep: bool) -> None:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            if not keep:
                self._db.execute("DELETE FROM commits")
            self._db.executemany("INSERT INTO commits (sha, time, data) VALUES (?, ?, ?)",
                                 [(c.sha, c.time, c.encode()) for c in reversed(recorded)])
            count, newest = self._db.execute("SELECT COUNT(*), COALESCE(MAX(time), 0) FROM commits").fetchone()
            generation = int(self._meta().get("generation", 0)) + 1
            self._set_meta(state=state, reason=reason, head=head, commits=count, newest=newest,
                           generation=generation)

    def _set_meta(self, **values) -> None:
        self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, str(v)) for k, v in values.items()])

    def _meta(self) -> dict[str, str]:
        return dict(self._query("SELECT key, value FROM meta"))

    def _query(self, sql: str, params=()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()


def open_checked(path: Path) -> HistoryStore:
    """The store at `path`, checked as it opens. A file proven damaged (faults.proven_problem: not SQLite,
    failing its structure check) is set aside as `history.sqlite.damaged` and started again, empty, noting
    what was found: it is derived data, read again from git by the next index run. A fault that passes (a
    lock, a full disk) is raised as it is, and nothing is set aside on it."""
    try:
        return HistoryStore(path)
    except sqlite3.DatabaseError:
        problem = proven_problem([path])
        if not problem:
            raise
    aside = path.with_name(path.name + ".damaged")
    for suffix in ("", "-wal", "-shm"):
        if path.with_name(path.name + suffix).exists():
            os.replace(path.with_name(path.name + suffix), aside.with_name(aside.name + suffix))
    log.warning("%s: %s; set aside as %s", path, problem, aside.name)
    store = HistoryStore(path)
    with store._lock, store._db:
        store._set_meta(state=NOT_READ, reason="its file was damaged: the next index run reads it again from git",
                        repaired=f"{problem}: set aside as {aside.name}")
    return store


def message_tokens(text: str) -> list[str]:
    """Code-aware tokens without stop words, short words or bare numbers."""
    return [t for t in code_tokens(text) if len(t) > 2 and t not in STOP_WORDS and not t.isdigit()]


class CommitIndex:
    """BM25 (Lucene's variant, as bm25s computes it) over commit messages; with `before`, only commits strictly
    before that time count, for their scores and for the statistics (IDF, average length) behind them."""

    K1, B = 1.5, 0.75

    def __init__(self, commits: list[Commit]) -> None:
        self.commits = commits
        self.times = np.array([c.time for c in commits], dtype=np.int64)
        vocab: dict[str, int] = {}
        terms, docs, counts, lengths = [], [], [], []
        for number, commit in enumerate(commits):
            tokens = message_tokens(commit.message)
            lengths.append(len(tokens) or 1)  # an empty message counts as one word, as bm25s's placeholder did
            for token, count in Counter(tokens).items():
                terms.append(vocab.setdefault(token, len(vocab)))
                docs.append(number)
                counts.append(count)
        self.vocab = vocab
        self.lengths = np.array(lengths, dtype=np.float32)
        order = np.argsort(np.array(terms, dtype=np.int64), kind="stable")
        self.docs = np.array(docs, dtype=np.int32)[order]  # postings, grouped by term
        self.counts = np.array(counts, dtype=np.float32)[order]
        self.starts = np.concatenate([[0], np.cumsum(np.bincount(np.array(terms, dtype=np.int64),
                                                                 minlength=len(vocab)))]).astype(np.int64)
        self.first_seen: dict[str, int] = {}  # current path -> time of the oldest commit touching it
        for commit in commits:
            for path in commit.files:
                self.first_seen[path] = min(self.first_seen.get(path, commit.time), commit.time)

    def _visible(self, before: int | None) -> np.ndarray | None:
        return None if before is None else self.times < before

    def scores(self, query_tokens: list[str], before: int | None = None) -> np.ndarray:
        """BM25 score of every commit (0 for commits at or after `before`)."""
        total = np.zeros(len(self.commits), dtype=np.float32)
        tokens = [t for t in dict.fromkeys(query_tokens) if t in self.vocab]
        visible = self._visible(before)
        if not tokens:
            return total
        count = len(self.commits) if visible is None else int(visible.sum())
        if not count:
            return total
        lengths = self.lengths if visible is None else self.lengths[visible]
        norm = self.K1 * (1 - self.B + self.B * self.lengths / float(lengths.mean()))
        for token in tokens:
            total += self._term(self.vocab[token], visible, count, norm)
        return total

    def _term(self, term: int, visible: np.ndarray | None, count: int, norm: np.ndarray) -> np.ndarray:
        out = np.zeros(len(self.commits), dtype=np.float32)
        docs = self.docs[self.starts[term]:self.starts[term + 1]]
        tf = self.counts[self.starts[term]:self.starts[term + 1]]
        if visible is not None:
            keep = visible[docs]
            docs, tf = docs[keep], tf[keep]
        df = len(docs)
        idf = math.log(1 + (count - df + 0.5) / (df + 0.5))
        out[docs] = idf * tf / (norm[docs] + tf)
        return out

    def weighted_scores(self, terms: dict[str, float], before: int | None = None) -> np.ndarray:
        """Sum over `terms` of weight x the term's BM25 score, per commit (0 at or after `before`)."""
        total = np.zeros(len(self.commits), dtype=np.float32)
        for term, weight in terms.items():
            if term in self.vocab:
                total += weight * self.scores([term], before)
        return total

    def search(self, question: str, before: int | None = None, k: int = 50) -> list[tuple[Commit, float]]:
        """The `k` best-matching commits made before `before` (all commits when None)."""
        scores = self.scores(message_tokens(question), before)
        top = np.argsort(-scores)[:k]
        return [(self.commits[i], float(scores[i])) for i in top if scores[i] > 0]
