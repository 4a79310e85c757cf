"""A workspace's git history: its non-merge commits and a keyword index over their messages.

`read_history(folder)` streams one `git log --no-merges -M --name-status -z` call and returns the commits
newest first, each with the files it touched under their CURRENT names (a rename `old -> new` maps every
older commit's `old` to `new`, transitively). `CommitIndex` answers "which commits' messages match this
question, among those made before time T" with BM25 (bm25s) over code-aware tokens.

Pure subprocess + numpy; the git CLI must be on PATH. A folder that is not a repository gives no commits.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from services.core.text import STOP_WORDS, code_tokens

_RS = "\x1e"  # record separator written before each commit
_FORMAT = "--format=%x1e%H%x00%ct%x00%B%x00"


@dataclass(frozen=True)
class Commit:
    sha: str
    time: int  # committer time, unix seconds
    message: str  # subject and body
    files: tuple[str, ...]  # touched files, current (renamed-forward) workspace-relative paths


def repo_state(folder: str | Path) -> str:
    """'full', 'shallow' (history is cut: older commits are missing) or 'none' (not a git repository)."""
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "--is-shallow-repository"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "none"
    if out.returncode != 0:
        return "none"
    return "shallow" if out.stdout.strip() == "true" else "full"


def _records(folder: str | Path, max_commits: int | None):
    """Yield each commit's raw record (text between record separators), streamed from git."""
    cmd = ["git", "-C", str(folder), "-c", "core.quotepath=off", "log", "--no-merges", "-M",
           "--name-status", "-z", _FORMAT]
    if max_commits:
        cmd.append(f"--max-count={max_commits}")
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        buffer = ""
        while chunk := proc.stdout.read(1 << 20):
            buffer += chunk.decode("utf-8", "replace")
            *done, buffer = buffer.split(_RS)
            yield from (r for r in done if r)
        if buffer:
            yield buffer


def _parse(record: str) -> tuple[str, int, str, list[tuple[str, ...]]]:
    """(sha, time, message, changes); a change is (status, path) or (status, old, new) for R/C."""
    sha, ctime, message, rest = record.split("\0", 3)
    tokens = rest.lstrip("\0\n").split("\0")
    changes, i = [], 0
    while i < len(tokens):
        status = tokens[i]
        if not status:
            i += 1
            continue
        width = 2 if status[0] in "RC" else 1
        changes.append((status, *tokens[i + 1:i + 1 + width]))
        i += 1 + width
    return sha, int(ctime), message.strip(), changes


def read_history(folder: str | Path, max_commits: int | None = None) -> list[Commit]:
    """Non-merge commits, newest first, with touched files under their current names ([] if no repo)."""
    if repo_state(folder) == "none":
        return []
    forward: dict[str, str] = {}  # old path -> current path, learnt from renames seen in newer commits
    commits = []
    for record in _records(folder, max_commits):
        sha, ctime, message, changes = _parse(record)
        files = []
        for status, *paths in changes:
            current = forward.get(paths[-1], paths[-1])
            files.append(current)
            if status[0] == "R" and len(paths) == 2:  # older commits' `old` is today's `current`
                forward[paths[0]] = current
        commits.append(Commit(sha, ctime, message, tuple(dict.fromkeys(files))))
    return commits


def message_tokens(text: str) -> list[str]:
    """Code-aware tokens without stop words, short words or bare numbers."""
    return [t for t in code_tokens(text) if len(t) > 2 and t not in STOP_WORDS and not t.isdigit()]


class CommitIndex:
    """BM25 over commit messages; `search` only sees commits strictly before a given time."""

    def __init__(self, commits: list[Commit]) -> None:
        self.commits = commits
        self.times = np.array([c.time for c in commits], dtype=np.int64)
        self.bm25 = bm25s.BM25()
        corpus = [message_tokens(c.message) or ["__empty__"] for c in commits]
        if commits:
            self.bm25.index(corpus, show_progress=False)
        self.vocab = set(self.bm25.vocab_dict) if commits else set()
        self.first_seen: dict[str, int] = {}  # current path -> time of the oldest commit touching it
        for commit in commits:
            for path in commit.files:
                self.first_seen[path] = min(self.first_seen.get(path, commit.time), commit.time)

    def scores(self, query_tokens: list[str], before: int | None = None) -> np.ndarray:
        """BM25 score of every commit (0 for commits at or after `before`)."""
        tokens = [t for t in dict.fromkeys(query_tokens) if t in self.vocab]
        if not tokens:
            return np.zeros(len(self.commits), dtype=np.float32)
        scores = self.bm25.get_scores(tokens)
        if before is not None:
            scores = np.where(self.times < before, scores, 0.0)
        return scores

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
