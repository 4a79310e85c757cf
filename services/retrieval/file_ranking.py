"""Rank FILES for a bug report ("where do I look?") from cheap signals, each a score per candidate file.

Signals (each `-> np.ndarray` aligned with `FileIndex.paths`, higher is better):
- `FileIndex.bm25`: BM25 over whole files (path and symbol names weighted up, plus the full text,
  code-aware tokens; the file_words FTS5 table, kept per file by the catalogue), queried with the bug-report strategy's weighted terms (identifiers > title > prose)
  (`bm25`) and with the title's words alone (`title`);
- `history_votes`: commits (strictly before the report) whose messages match the report vote for the
  files they touched, by match score, split over the files of a commit, decayed by age; matched with the
  weighted terms (`history`) and with the title alone (`history_title`);
- `mentions`: files the report names (path, module) and files defining names it uses;
- `traceback`: files the report's traceback frames run in, each frame matched to a workspace file by the longest
  path suffix (`/usr/lib/python3.8/site-packages/_pytest/nodes.py` -> `src/_pytest/nodes.py`); the innermost
  frame counts 1, the next 1/2, then 1/3 ...; standard-library frames only when no project frame matched;
- `graph`: files that the top chunks (and the traceback's frames) call, by the code graph
  (services/retrieval/file_answer.py: `graph_votes`);
- `chunk_evidence`: a chunk ranking (e.g. the `bug-report` strategy's) folded into files:
  best chunk plus a decaying sum of the file's next chunks (`chunks`); when the strategy reranked, the vector
  ranking's too (`vector`);
`combine` normalises each signal by its best value and adds them with weights; test files are pushed down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from services.core.settings import Settings
from services.core.text import STOP_WORDS, code_tokens
from services.retrieval.query_signals import Frame, NameTable, QuerySignals, extract, shared_suffix
from services.storage.file_words import MemoryFileWords
from services.core.files import is_test_file
from services.retrieval.strategies.bugreport import bm25_weights

SIGNALS = ("bm25", "title", "history", "history_title", "path", "symbol", "traceback", "chunks", "vector", "graph")
_STDLIB = re.compile(r"(^|/)lib/python[\d.]*/(?!(site|dist)-packages/)")  # /usr/lib/python3.8/reprlib.py


@dataclass
class Weights:
    """Weights of the normalised signals; `test` is subtracted from test files.

    Defaults: the mean of the weights benchmarks/file_level.py tuned on pytest and on Sphinx (issue #19).
    """

    bm25: float = 1.0
    title: float = 0.9
    history: float = 0.3
    history_title: float = 0.9
    path: float = 0.3
    symbol: float = 0.4
    traceback: float = 3.0  # leave-one-repository-out: 3 folds of 4 chose 3, one 1 (benchmarks/README.md, issue 41)
    chunks: float = 0.0
    vector: float = 0.5  # the vector ranking's chunks beside a reranking strategy's: 3 folds of 4 chose 0.5, one 1
    graph: float = 0.0  # the engine sets it from Settings.files_graph_weight
    test: float = 1.6
    chunk_decay: float = 0.5  # a file's k-th best chunk counts chunk_decay**(k-1) (chunk_evidence)
    history_knobs: dict = field(default_factory=lambda: dict(top=100, file_power=0.5, half_life_days=365.0))


@dataclass(frozen=True)
class _Symbol:  # the fields NameTable reads from a chunk
    id: str
    path: str
    symbol: str
    qualified_name: str


def query_terms(question: str, settings: Settings | None = None
                ) -> tuple[QuerySignals, dict[str, float], dict[str, float]]:
    """The report's signals, its weighted BM25 terms (as the bug-report strategy weighs them), its title's terms."""
    signals = extract(question)
    title = {t: 1.0 for t in code_tokens(signals.title) if len(t) > 2 and t not in STOP_WORDS and not t.isdigit()}
    return signals, bm25_weights(signals, settings or Settings()), title


class FileIndex:
    """Whole-file BM25 and a name table over a set of files, read from a file_words table
    (services/storage/file_words.py): the catalogue's, kept per file as files are indexed, or one in
    memory (`from_texts`). Nothing is tokenised or indexed here; `source` gives `listing()` (file number,
    path), `term_scores(term)` (file number, BM25) and `names()` (file number, a name it defines)."""

    def __init__(self, source) -> None:
        self.source = source
        listing = sorted(source.listing(), key=lambda row: row[1])
        self.paths = [path for _, path in listing]
        self.position = {p: i for i, p in enumerate(self.paths)}
        self.row = {number: i for i, (number, _) in enumerate(listing)}
        self.is_test = np.array([is_test_file(p) for p in self.paths])
        symbols = [_Symbol(f"{self.paths[self.row[n]]}#{name}", self.paths[self.row[n]], name, name)
                   for n, name in source.names() if n in self.row]
        symbols += [_Symbol(f"{p}#", p, "", "") for p in self.paths]  # every file has a row, even without names
        self.names = NameTable(symbols)

    @classmethod
    def from_texts(cls, files: dict[str, str]) -> FileIndex:
        """Over texts that are not in a catalogue (relative path -> text)."""
        return cls(MemoryFileWords(files))

    def bm25(self, terms: dict[str, float]) -> np.ndarray:
        """Weighted BM25: sum over terms of weight x the term's BM25 score."""
        total = np.zeros(len(self.paths), dtype=np.float32)
        for term, scores in self.term_scores(terms).items():
            total += terms[term] * scores
        return total

    def term_scores(self, terms: dict[str, float]) -> dict[str, np.ndarray]:
        """Each term's BM25 score over the files (unweighted), for the terms some file holds."""
        out = {}
        for term in terms:
            rows = [(self.row[n], score) for n, score in self.source.term_scores(term) if n in self.row]
            if rows:
                scores = np.zeros(len(self.paths), dtype=np.float32)
                at, values = zip(*rows)
                scores[list(at)] = values
                out[term] = scores
        return out

    def mentions(self, signals: QuerySignals) -> tuple[np.ndarray, np.ndarray]:
        """(path, symbol) scores: files the report names, and files defining names it uses (summed IDF)."""
        path, symbol, _, _ = self.mentions_explained(signals)
        return path, symbol

    def mentions_explained(self, signals: QuerySignals
                           ) -> tuple[np.ndarray, np.ndarray, dict[int, str], dict[int, list[str]]]:
        """`mentions`, plus per file position how the report names it and which of its names it uses. Paths
        written only in traceback frames are the `traceback` signal's, not a mention."""
        path, symbol = np.zeros(len(self.paths)), np.zeros(len(self.paths))
        in_frames = {f.path.lstrip("./") for f in signals.frames}
        signals = replace(signals, paths=tuple(p for p in signals.paths if p.lstrip("./") not in in_frames))
        named: dict[int, str] = {}
        used: dict[int, list[str]] = {}
        for p, (score, mention) in self.names.path_matches(signals).items():
            path[self.position[p]] = max(path[self.position[p]], score)
            named[self.position[p]] = mention
        for chunk_id, (score, names) in self.names.symbol_matches(signals).items():
            i = self.position[chunk_id.rsplit("#", 1)[0]]
            symbol[i] += score
            used.setdefault(i, []).extend(n for n in names.split(", ") if n not in used.get(i, []))
        return path, symbol, named, used

    def frame_files(self, frame: Frame) -> list[str]:
        """The workspace files a frame's path may be: those sharing the longest path suffix with it (ties
        narrowed to the files defining the frame's function, when some do)."""
        parts = [p.lower() for p in frame.path.split("/") if p and p != "."]
        if not parts:
            return []
        shared = {path: shared_suffix(parts, path.lower().split("/")) for path in self.names.by_basename.get(parts[-1], [])}
        if not shared:
            return []
        best = max(shared.values())
        found = [path for path, n in shared.items() if n == best]
        defining = [p for p in found if f"{p}#{frame.function}" in self.names.by_name.get(frame.function.lower(), ())]
        return defining if len(found) > 1 and defining else found

    def traceback(self, frames: tuple[Frame, ...]) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
        """Per file, the traceback's evidence: the innermost matched frame counts 1, the next 1/2, ... (a frame
        matching k files gives each 1/k of it); standard-library frames only when no project frame matched.
        Also per file position: (frames naming it, the depth of its innermost one, 1 = innermost)."""
        scores = np.zeros(len(self.paths))
        told: dict[int, tuple[int, int]] = {}
        matched = [(f, files) for f in frames if (files := self.frame_files(f))]
        project = [(f, files) for f, files in matched if not _STDLIB.search(f.path)]
        for depth, (_, files) in enumerate(reversed(project or matched), 1):
            for path in files:
                i = self.position[path]
                scores[i] += 1.0 / depth / len(files)
                count, innermost = told.get(i, (0, depth))
                told[i] = (count + 1, innermost)
        return scores, told

    def fold(self, per_path: dict[str, float]) -> np.ndarray:
        """A {path: score} mapping as an array over this index's files (other paths dropped)."""
        out = np.zeros(len(self.paths))
        for p, v in per_path.items():
            if p in self.position:
                out[self.position[p]] = v
        return out


def history_votes(commits, scores: np.ndarray, before: int | None, *, top: int = 30, max_files: int = 30,
                  file_power: float = 0.5, half_life_days: float = 0.0) -> dict[str, float]:
    """Files touched by the `top` best-scoring commits (`scores` aligned with `commits`, 0 for commits
    at or after the report, e.g. services.indexing.history.CommitIndex.weighted_scores).

    A commit votes score / n_files**file_power for each file it touched; commits touching more than
    `max_files` files (mass edits) do not vote; with a half-life, older commits vote less.
    """
    votes: dict[str, float] = {}
    for _, path, share in _votes(commits, scores, before, top, max_files, file_power, half_life_days):
        votes[path] = votes.get(path, 0.0) + share
    return votes


def history_voters(commits, scores: np.ndarray, before: int | None, *, top: int = 30, max_files: int = 30,
                   file_power: float = 0.5, half_life_days: float = 0.0) -> dict[str, list[int]]:
    """Per file, the positions (in `commits`) of the commits that voted for it in `history_votes`."""
    voters: dict[str, list[int]] = {}
    for i, path, _ in _votes(commits, scores, before, top, max_files, file_power, half_life_days):
        voters.setdefault(path, []).append(i)
    return voters


def _votes(commits, scores, before, top, max_files, file_power, half_life_days):
    """(commit position, path, share) for every vote, best commits first."""
    for i in np.argsort(-scores)[:top]:
        commit, score = commits[i], float(scores[i])
        if score <= 0 or not commit.files or len(commit.files) > max_files:
            continue
        if half_life_days and before is not None:
            score *= 0.5 ** ((before - commit.time) / 86400 / half_life_days)
        share = score / len(commit.files) ** file_power
        for path in commit.files:
            yield int(i), path, share


def chunk_evidence(ranked: list[tuple[str, float]], decay: float = 0.5) -> dict[str, float]:
    """(path, score) chunks best first -> per file: best score + decay x 2nd + decay**2 x 3rd ..."""
    out: dict[str, float] = {}
    seen: dict[str, int] = {}
    for path, score in ranked:
        n = seen.get(path, 0)
        out[path] = out.get(path, 0.0) + score * decay ** n
        seen[path] = n + 1
    return out


def _normalise(values: np.ndarray) -> np.ndarray:
    best = float(values.max()) if len(values) else 0.0
    return values / best if best > 0 else np.zeros_like(values, dtype=float)


def combine(features: dict[str, np.ndarray], is_test: np.ndarray, weights: Weights) -> np.ndarray:
    """Weighted sum of each signal divided by its best value, minus `test` for test files (and files that
    did not exist yet, `new`, go last)."""
    return sum(contributions(features, is_test, weights).values(), np.zeros(len(is_test)))



def contributions(features: dict[str, np.ndarray], is_test: np.ndarray, weights: Weights) -> dict[str, np.ndarray]:
    """What each signal adds to each file's score (`combine` is their sum): weight x value / best value,
    `test` (minus the test weight for test files) and `new` (minus 100 for files not yet committed)."""
    out = {}
    for name in SIGNALS:
        weight = getattr(weights, name)
        if weight and name in features:
            out[name] = weight * _normalise(np.asarray(features[name], dtype=float))
    out["test"] = -weights.test * np.asarray(is_test, dtype=float)
    if "new" in features:
        out["new"] = -100.0 * np.asarray(features["new"], dtype=float)
    return out


def file_features(question: str, index: FileIndex, commit_index=None, before: int | None = None,
                  chunks: list[tuple[str, float]] | None = None, weights: Weights | None = None) -> dict[str, np.ndarray]:
    """Every signal for one report. `commit_index`: a services.indexing.history.CommitIndex (None: no
    history signals); only commits strictly before `before` count."""
    knobs = (weights or Weights()).history_knobs
    signals, terms, title = query_terms(question)
    path, symbol = index.mentions(signals)
    feats = {"bm25": index.bm25(terms), "title": index.bm25(title), "path": path, "symbol": symbol,
             "traceback": index.traceback(signals.frames)[0]}
    if commit_index is not None:
        for name, query in (("history", terms), ("history_title", title)):
            scores = commit_index.weighted_scores(query, before)
            feats[name] = index.fold(history_votes(commit_index.commits, scores, before, **knobs))
        if before is not None:  # files first committed at or after the report did not exist yet
            feats["new"] = np.array([commit_index.first_seen.get(p, 0) >= before for p in index.paths])
    if chunks is not None:
        feats["chunks"] = index.fold(chunk_evidence(chunks, (weights or Weights()).chunk_decay))
    return feats


def rank(paths: list[str], scores: np.ndarray, k: int = 10) -> list[str]:
    """The `k` best paths, best first (ties keep path order)."""
    order = np.argsort(-scores, kind="stable")[:k]
    return [paths[i] for i in order]
