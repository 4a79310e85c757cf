"""A question answered as ranked files (issue #19): the engine's use of file_ranking.

`FileRanker` holds what one index state needs (a FileIndex over the catalogue's file_words table, and the
workspace's CommitIndex when it has history). `answer()` folds a QueryResult's chunk rankings into
files (the strategy's ranking, and the vector ranking for the `none` order), adds the whole-file
keyword, mention and history signals (file_ranking.contributions), the code graph's (files the top chunks
and the traceback's frames call; optionally, what the definitions the question names call and who calls the
top chunks: `graph_votes`) and says in words why each file ranks.
"""

from __future__ import annotations

from collections.abc import Sequence, Set as AbstractSet
from dataclasses import replace

import numpy as np

from services.core.models import FileAnswer, FileChunk, QueryResult, RankedFile, ResultChunk, Signal
from services.core.text import code_tokens
from services.retrieval import file_ranking as fr
from services.retrieval import graph
from services.retrieval.query_signals import Frame

CHUNK_WEIGHT = 1.0  # the strategy's chunk evidence, beside the file-level weights tuned without it
POOL = 100  # chunks the strategy ranks for a file answer
BLEND_POOL = 60  # files each ranking gives a fused answer (`FileRanker.blended`)
BEST_CHUNKS = 3  # chunks shown per file
PROSE = frozenset({"text", "markdown"})  # languages left out of file answers unless the language filter names them
NOTE_TERMS = 4  # terms named in a note
# `commits`: a services.indexing.history.CommitIndex (commits, weighted_scores, first_seen); retrieval
# does not import indexing (a sibling layer), the engine passes it in.


def evidence(ranked: list[ResultChunk]) -> list[tuple[str, float]]:
    """(path, score) best first, scores made positive (a strategy may score below zero) for the fold."""
    if not ranked:
        return []
    scores = np.array([r.score for r in ranked], dtype=float)
    low, high = float(scores.min()), float(scores.max())
    if low <= 0:
        scores = 0.05 + 0.95 * (scores - low) / (high - low) if high > low else np.ones_like(scores)
    return [(r.chunk.path, float(s)) for r, s in zip(ranked, scores)]


class FileRanker:
    """One index state's file-level ranking (build once, ask many questions)."""

    def __init__(self, index: fr.FileIndex, commits=None, history: str = "", prose: AbstractSet[str] = frozenset(),
                 catalog=None, graph_weight: float = 0.0, graph_chunks: int = 0, graph_names: float = 0.0,
                 graph_callers: int = 0) -> None:
        self.index = index
        self.prose = prose  # the paths of text and Markdown files
        self.commits = commits if commits is not None and commits.commits else None
        self.history = history  # what the history is, or why there is none
        self.catalog = catalog  # the code graph's (services/storage/catalog.py); None: no graph signal
        self.graph_weight, self.graph_chunks = graph_weight, graph_chunks
        self.graph_names, self.graph_callers = graph_names, graph_callers  # off by default: see Settings

    def source_files(self, allowed: set[str] | None) -> set[str] | None:
        """The files an answer may name without a language filter: source files (a changelog that every fix
        touches, a README, is not where to look), unless the workspace (or the filter) leaves nothing else."""
        if not self.prose:
            return allowed
        source = (set(self.index.paths) if allowed is None else allowed) - self.prose
        return source if source else allowed

    def answer(self, result: QueryResult, max_files: int, before: int | None = None,
               allowed: set[str] | None = None) -> FileAnswer:
        """The `max_files` best files for `result`'s question; `allowed`: paths the filters let through."""
        weights = self.partial(self.weights(), result)
        feats, why = self.features(result, before, weights)
        return self.ranked(result, feats, why, weights, max_files, before, allowed)

    def partial(self, weights: fr.Weights, result: QueryResult) -> fr.Weights:
        """While chunks await their vectors, the vector ranking's weight times the share of the answer's
        chunks that have theirs (the vector ranking favours the files that have theirs, so it counts as
        far as the question's likely files have them: with the useful order, source files come first)."""
        if result.chunks_with_vectors is None or self.catalog is None or not result.results:
            return weights
        share = self.catalog.awaiting.share_with_vectors([r.chunk.id for r in result.results])
        return replace(weights, vector=weights.vector * share)

    def blended(self, report: QueryResult, words: QueryResult, max_files: int, before: int | None,
                allowed: set[str] | None, blend) -> FileAnswer:
        """`auto`'s answer to a report (strategies/auto.py `Blend`): the report strategy's file ranking (the
        vector ranking's chunks at `blend.vector`) and the words strategy's, fused by reciprocal rank."""
        report_weights = self.partial(replace(self.weights(), vector=blend.vector), report)
        named = replace(report, strategy=blend.first)  # its why rows name the strategy that ranked its chunks
        first = self.ranked(named, *self.features(named, before, report_weights), report_weights, BLEND_POOL,
                            before, allowed)
        second = self.answer(words, BLEND_POOL, before, allowed)
        fused = fuse([f.path for f in first.files], [f.path for f in second.files], blend.share, blend.k)
        by_path = {f.path: f for f in second.files} | {f.path: f for f in first.files}
        where = {name: {f.path: f.rank for f in answer.files}
                 for name, answer in ((blend.first, first), (blend.second, second))}
        files = [replace(by_path[p], rank=n, score=score,
                         signals=by_path[p].signals + (Signal("fused by rank", score, score, "set",
                                                              _fused_note(p, where)),))
                 for n, (p, score) in enumerate(fused[:max_files], 1)]
        return replace(first, strategy=report.strategy, files=files, original=first.original[:max_files])

    def weights(self) -> fr.Weights:
        return replace(fr.Weights(), chunks=CHUNK_WEIGHT, graph=self.graph_weight)

    def ranked(self, result: QueryResult, feats: dict[str, np.ndarray], why: _Why, weights: fr.Weights,
               max_files: int, before: int | None, allowed: set[str] | None) -> FileAnswer:
        """The answer from the question's signals (`features`) added with `weights`."""
        parts = fr.contributions(feats, self.index.is_test, weights)
        total = sum(parts.values(), np.zeros(len(self.index.paths)))
        baseline = {k: v for k, v in feats.items() if k != "vector"}  # the `none` order: the vector ranking alone
        baseline["chunks"] = self.index.fold(fr.chunk_evidence(evidence(result.original), weights.chunk_decay))
        original_total = fr.combine(baseline, self.index.is_test, weights)
        found = _found(feats, allowed, self.index.paths)
        original_found = _found(baseline, allowed, self.index.paths)
        order = [i for i in np.argsort(-total, kind="stable") if found[i]][:max_files]
        original = [self.index.paths[i] for i in np.argsort(-original_total, kind="stable") if original_found[i]]
        original_rank = {p: n for n, p in enumerate(original, 1)}
        by_path: dict[str, list[ResultChunk]] = {}
        for r in result.results:
            by_path.setdefault(r.chunk.path, []).append(r)
        files = []
        for rank, i in enumerate(order, 1):
            path = self.index.paths[i]
            signals = tuple(Signal(name, float(feats.get(name, part)[i]), float(part[i]), "add",
                                   why.note(name, i, path, by_path.get(path, []), result.strategy))
                            for name, part in parts.items() if part[i])
            chunks = tuple(FileChunk(r.chunk.id, r.chunk.start_line, r.chunk.end_line, r.chunk.symbol, r.rank,
                                     r.score) for r in by_path.get(path, [])[:BEST_CHUNKS])
            files.append(RankedFile(path, rank, float(total[i]), original_rank.get(path), chunks, signals))
        return FileAnswer(result.question, result.strategy, files, original[:max_files], self.history, before,
                          question_note=result.question_note, strategy_note=result.strategy_note,
                          warning=result.warning)

    def features(self, result: QueryResult, before: int | None, weights: fr.Weights
                 ) -> tuple[dict[str, np.ndarray], _Why]:
        """Every signal's value per file for `result`'s question, and the words that explain them."""
        why = _Why(result.question, self.index, self.commits, before, weights)
        for r in result.original:
            why.vector.setdefault(r.chunk.path, []).append(r)
        feats = dict(why.features, chunks=self.index.fold(fr.chunk_evidence(evidence(result.results), weights.chunk_decay)))
        # the vector ranking as a second opinion (without reranking it is the first); while chunks await
        # their vectors, weighed down by `partial`
        if result.reranked:
            feats["vector"] = self.index.fold(fr.chunk_evidence(evidence(result.original), weights.chunk_decay))
        if self.catalog is not None and weights.graph and self.catalog.graph.graph_ready():
            names = why.signals.names() if self.graph_names else []
            votes = graph_votes(self.catalog, result.results[:self.graph_chunks], why.signals.frames, names,
                                self.graph_names, result.results[:self.graph_callers])
            feats["graph"] = self.index.fold({path: sum(v for v, _, _ in vs) for path, vs in votes.items()})
            why.callers = {path: [(label, calls) for _, label, calls in vs] for path, vs in votes.items()}
        return feats, why


def graph_votes(catalog, top: list[ResultChunk], frames: tuple[Frame, ...], names: Sequence[str] = (),
                name_vote: float = 0.0, called: Sequence[ResultChunk] = ()) -> dict[str, list[tuple[float, str, bool]]]:
    """Per file, (vote, who, whether the file calls them) for every definition related to it: each of the `top`
    chunks (the k-th votes 1/k), each definition the traceback's frames run in (votes 1) and each definition
    of a name the question uses (votes `name_vote`) vote for the other files defining what they call; each
    of the `called` chunks (the k-th votes 1/k) votes for the other files calling it."""
    callers = [(graph.chunk_target(r.chunk), 1.0 / k, f"(#{k})") for k, r in enumerate(top, 1)]
    in_frames = graph.frame_targets(catalog, frames)
    callers += [(t, 1.0, "(traceback)") for t in in_frames]
    if name_vote and names:
        callers += [(t, name_vote, "(named)") for t in graph.named_targets(catalog, list(names), in_frames)]
    votes: dict[str, list[tuple[float, str, bool]]] = {}
    for caller, vote, where in callers:
        for path in sorted(graph.callee_files(catalog, caller)):
            votes.setdefault(path, []).append((vote, f"`{_name(caller)}` {where}", False))
    for k, r in enumerate(called, 1):
        callee = graph.chunk_target(r.chunk)
        for path in sorted(graph.caller_files(catalog, callee)):
            votes.setdefault(path, []).append((1.0 / k, f"`{_name(callee)}` (#{k})", True))
    return votes


def _name(target: graph.Target) -> str:
    return target.qualified_name or target.symbol or target.path.rsplit("/", 1)[-1]


def _found(feats: dict[str, np.ndarray], allowed: set[str] | None, paths: list[str]) -> np.ndarray:
    """Files with some evidence (any positive signal) that the filters allow."""
    evidence_seen = np.zeros(len(paths), dtype=bool)
    for name in fr.SIGNALS:
        if name in feats:
            evidence_seen |= np.asarray(feats[name]) > 0
    if allowed is not None:
        evidence_seen &= np.array([p in allowed for p in paths])
    return evidence_seen


class _Why:
    """Every file-level signal for one question, and the words that explain each."""

    def __init__(self, question: str, index: fr.FileIndex, commits, before: int | None,
                 weights: fr.Weights) -> None:
        self.signals, self.terms, self.title = fr.query_terms(question)
        signals = self.signals
        self.callers: dict[str, list[tuple[str, bool]]] = {}  # per file, the graph's (who, whether it calls them)
        self.vector: dict[str, list[ResultChunk]] = {}  # per file, its chunks in the vector ranking
        self.term_scores = index.term_scores(self.terms)
        self.title_scores = index.term_scores(self.title)
        path, symbol, self.named, self.used = index.mentions_explained(signals)
        frames, self.frames = index.traceback(signals.frames)
        self.features = {"bm25": _weighted(self.term_scores, self.terms, len(index.paths)),
                         "title": _weighted(self.title_scores, self.title, len(index.paths)),
                         "path": path, "symbol": symbol, "traceback": frames}
        self.commits, self.before = commits, before
        self.voters: dict[str, dict[str, list[int]]] = {}
        if commits is not None:
            for name, query in (("history", self.terms), ("history_title", self.title)):
                scores = commits.weighted_scores(query, before)
                self.features[name] = index.fold(fr.history_votes(commits.commits, scores, before,
                                                                  **weights.history_knobs))
                self.voters[name] = fr.history_voters(commits.commits, scores, before, **weights.history_knobs)
            if before is not None:  # files first committed at or after the cut-off did not exist yet
                self.features["new"] = np.array([commits.first_seen.get(p, 0) >= before for p in index.paths])

    def note(self, name: str, i: int, path: str, chunks: list[ResultChunk], strategy: str) -> str:
        if name == "bm25":
            return "whole-file keywords: " + ", ".join(_top_terms(self.term_scores, self.terms, i))
        if name == "title":
            return "title words in the file: " + ", ".join(_top_terms(self.title_scores, self.title, i))
        if name in ("history", "history_title"):
            return self._history_note(self.voters[name].get(path, []), self.terms if name == "history" else self.title)
        if name == "path":
            return f"named in the question ({self.named.get(i, path)})"
        if name == "traceback":
            return _frames_note(*self.frames[i])
        if name == "symbol":
            return "defines names the question uses: " + ", ".join(self.used.get(i, [])[:NOTE_TERMS])
        if name == "chunks":
            best = chunks[0].rank if chunks else None
            where = f", best at #{best}" if best else ""
            return f"{len(chunks)} of its chunks in the `{strategy}` ranking{where}"
        if name == "vector":
            best = next((r.rank for r in self.vector.get(path, [])), None)
            return f"{len(self.vector.get(path, []))} of its chunks in the vector ranking" + (f", best at #{best}" if best else "")
        if name == "graph":
            return _graph_note(self.callers.get(path, []))
        if name == "test":
            return "a test file: pushed down"
        if name == "new":
            return "first committed at or after the cut-off: it did not exist yet"
        return ""

    def _history_note(self, voters: list[int], terms: dict[str, float]) -> str:
        shared: dict[str, float] = {}
        for position in voters:
            for token in set(code_tokens(self.commits.commits[position].message)) & set(terms):
                shared[token] = terms[token]
        words = " ".join(f"`{t}`" for t in sorted(shared, key=lambda t: (-shared[t], t))[:NOTE_TERMS])
        n = len(voters)
        earlier = "earlier " if self.before is not None else ""
        return f"{n} {earlier}commit{'s' if n != 1 else ''} about {words} touched this file"


def fuse(first: list[str], second: list[str], share: float, k: int) -> list[tuple[str, float]]:
    """Two rankings fused by reciprocal rank: (path, score) best first; `second` gets `share` of the weight. Scores
    are scaled so that a path first in both scores 1."""
    scores: dict[str, float] = {}
    for weight, ranking in ((1.0 - share, first), (share, second)):
        for rank, path in enumerate(ranking, 1):
            scores[path] = scores.get(path, 0.0) + weight * (k + 1) / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def _fused_note(path: str, where: dict[str, dict[str, int]]) -> str:
    """"#2 by bug-report, #1 by metadata, fused by rank"."""
    ranks = [f"#{ranks[path]} by {name}" if path in ranks else f"not in {name}'s first {BLEND_POOL}"
             for name, ranks in where.items()]
    return ", ".join(ranks) + ", fused by rank"


def _frames_note(count: int, depth: int) -> str:
    """"named in 7 traceback frames, innermost"; "named in 1 traceback frame, 3rd from the innermost"."""
    where = "innermost" if depth == 1 else f"{_ordinal(depth)} from the innermost"
    return f"named in {count} traceback frame{'s' if count != 1 else ''}, {where}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _graph_note(related: list[tuple[str, bool]]) -> str:
    """"called by `lambdify` (#1), `parse` (traceback); calls `Node.run` (#2)"."""
    parts = []
    for head, wanted in (("called by ", False), ("calls ", True)):
        who = [name for name, calls in related if calls == wanted][:NOTE_TERMS]
        if who:
            parts.append(head + ", ".join(who))
    return "; ".join(parts)


def _weighted(term_scores: dict[str, np.ndarray], terms: dict[str, float], n: int) -> np.ndarray:
    total = np.zeros(n, dtype=np.float32)
    for term, scores in term_scores.items():
        total += terms[term] * scores
    return total


def _top_terms(term_scores: dict[str, np.ndarray], terms: dict[str, float], i: int) -> list[str]:
    scored = [(terms[t] * float(s[i]), t) for t, s in term_scores.items() if s[i] > 0]
    return [t for _, t in sorted(scored, reverse=True)[:NOTE_TERMS]]
