"""The query flow's steps, each a function of its inputs (services.retrieval.search runs them in order).

Threshold rule (scores from different strategies live on different scales):
- the vector search over-fetches `pool_size(top_k)` candidates (settings.candidate_pool: at least
  max(candidate_pool_min, candidate_pool_factor × top_k); the cross-encoder keeps its own) whose cosine
  similarity is at least 0.8 × min_relevance;
- after reranking, min_relevance is applied to the score that is on the cosine scale:
  * SIMILARITY strategies (none, keyword-boost, heuristic, metadata) keep cosine-based scores
    (boosted or offset), so min_relevance applies to the reranked score, as in the spec;
  * RELATIVE (rrf, hybrid: fused, normalised per query) and PROBABILITY (cross-encoder, llm)
    scores are not cosine similarities, so min_relevance applies to the candidate's original
    cosine score instead. A candidate that only the keyword index found was not in the vector
    ranking, so it has no cosine from the search: its cosine is computed from its stored vector
    (`keyword_cosines`) and the same min_relevance applies, so every result, however it was
    found, is at least as close to the question as the threshold asks (before this, hybrid
    padded short lists with keyword-only hits the question barely relates to). A PROBABILITY
    strategy's own threshold (cross-encoder score_threshold, on its 0-1 scale) cuts its scores
    too. Nothing is dropped because of a scale mismatch;
  * when a strategy falls back (unavailable, adaptive skip), the original ranking is filtered
    as for `none`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from services.core import files
from services.core.errors import StrategyUnavailable
from services.core.messages import MAX_QUESTION_CHARS
from services.core.models import Candidate, Chunk, QueryOptions, QueryResult, ResultChunk, Signal
from services.retrieval.strategies.base import PROBABILITY, SIMILARITY, RerankRequest, RerankStrategy
from services.retrieval.strategies._ranking import unchanged
from services.storage.keyword_index import MAX_WORDS

NOTE_CHARS = 1_000  # a longer question's result says how it was reduced (about where the model stops reading)


class Stages:
    """Wall-clock time of each stage in milliseconds."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._start = time.perf_counter()
        self._last = self._start

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.times[name] = round((now - self._last) * 1000, 2)
        self._last = now

    def total(self) -> dict:
        self.times["total"] = round((time.perf_counter() - self._start) * 1000, 2)
        return self.times


def allowed_paths(all_paths: list[str], glob: str) -> list[str] | None:
    """Paths matching a glob (or several, comma-separated); None means no path filter."""
    patterns = [p.strip() for p in glob.split(",") if p.strip()]
    if not patterns:
        return None
    return [p for p in all_paths if any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, f"*/{pat}") for pat in patterns)]


def semantic_candidates(hits: list[tuple[str, float]], chunks: dict[str, Chunk], floor: float) -> list[Candidate]:
    """Vector hits above the pre-rerank floor that the catalogue lists (the committed versions)."""
    kept = [(i, s) for i, s in hits if s >= floor and i in chunks]
    return [Candidate(chunks[i], s, s, rank) for rank, (i, s) in enumerate(kept, 1)]


def keyword_candidates(hits: list[tuple[str, float]], chunks: dict[str, Chunk],
                       semantic: list[Candidate]) -> list[Candidate]:
    by_id = {c.chunk.id: c for c in semantic}
    out = []
    for rank, (i, score) in enumerate(((i, s) for i, s in hits if i in chunks), 1):
        known = by_id.get(i)
        out.append(Candidate(chunks[i], score, known.original_score if known else None,
                             known.original_rank if known else None, score, rank))
    return out


def rerank(strategy: RerankStrategy, request: RerankRequest) -> tuple[list[Candidate], bool, str | None]:
    """(ranking, reranked, why not): a strategy that cannot run now, or skips this question, leaves
    the original ranking and says why. One that does not rerank (`none`) is never a fallback."""
    if not strategy.reranks:
        return strategy.rerank(request), False, None
    availability = strategy.availability()
    if not availability.available:
        return fell_back(request, availability.reason), False, availability.reason
    try:
        return strategy.rerank(request), True, None
    except StrategyUnavailable as error:  # RerankSkipped included
        return fell_back(request, str(error)), False, str(error)


def fell_back(request: RerankRequest, reason: str) -> list[Candidate]:
    """The vector ranking, each result still explained by its cosine and why the strategy did not run."""
    return unchanged(request.candidates, f"fell back to the vector ranking: {reason}")


def keyword_cosines(question_vector, vectors: dict[str, list[float]]) -> dict[str, float]:
    """Cosine similarity of the question to each stored chunk vector (for keyword-only hits)."""
    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    q = np.asarray(question_vector, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    sims = matrix @ q / np.where(norms == 0, 1.0, norms)
    return {i: float(s) for i, s in zip(ids, sims)}


def cosine_of(candidate: Candidate, cosines: dict[str, float] | None) -> float | None:
    """The candidate's cosine: from the vector search, else from its stored vector, else None."""
    if candidate.original_score is not None:
        return candidate.original_score
    return (cosines or {}).get(candidate.chunk.id)


def above_threshold(ranked: list[Candidate], scale: str, min_relevance: float,
                    own_threshold: float = 0.0, cosines: dict[str, float] | None = None) -> list[Candidate]:
    """Apply min_relevance where it means something (see the module docstring); `cosines` gives
    keyword-only candidates their cosine. A PROBABILITY strategy's own threshold (e.g. the
    cross-encoder's score_threshold) applies to its scores."""
    if scale == SIMILARITY:
        return [c for c in ranked if c.score >= min_relevance]
    kept = [c for c in ranked if (cosine := cosine_of(c, cosines)) is None or cosine >= min_relevance]
    return [c for c in kept if c.score >= own_threshold] if scale == PROBABILITY else kept


def removed_by_filters(hits: list[tuple[str, float]], chunks: dict[str, Chunk], options: QueryOptions,
                       paths: list[str] | None) -> dict[str, int]:
    """Of the unfiltered nearest chunks above the threshold, how many each filter removes."""
    near = [chunks[i] for i, s in hits if s >= options.min_relevance and i in chunks]
    wanted = set(paths) if paths is not None else None
    removed = {}
    if options.languages:
        removed["languages"] = sum(c.language not in options.languages for c in near)
    if wanted is not None:
        removed["path"] = sum(c.path not in wanted for c in near)
    return removed


def expand(chunk: Chunk, lines: list[str] | None, context_lines: int) -> tuple[str, int]:
    """The chunk with `context_lines` lines around it, from the file as it is on disk now.

    When the file changed since it was indexed (lines differ), the chunk's own text is shown.
    """
    if lines is None or chunk.end_line > len(lines) or \
            "".join(lines[chunk.start_line - 1:chunk.end_line]).rstrip("\n") != chunk.content.rstrip("\n"):
        return chunk.content, chunk.start_line
    start = max(1, chunk.start_line - context_lines)
    end = min(len(lines), chunk.end_line + context_lines)
    return "".join(lines[start - 1:end]), start


def to_results(ranked: list[Candidate], contexts: dict[str, tuple[str, int]]) -> list[ResultChunk]:
    out = []
    for rank, c in enumerate(ranked, 1):
        text, start = contexts.get(c.chunk.id, ("", 0))
        out.append(ResultChunk(c.chunk, rank, c.score, c.original_rank, c.original_score, text, start,
                               signals=c.signals))
    return out


def pool_seen(request: RerankRequest) -> int:
    """How many distinct candidates the strategy could rank (vector hits plus BM25-only hits)."""
    return len({c.chunk.id for c in request.candidates} | {c.chunk.id for c in request.keyword_hits})


def assemble(question: str, options: QueryOptions, reranked: list[ResultChunk], original: list[ResultChunk],
             total: int, above: int, was_reranked: bool, fallback: str | None, stages: Stages,
             pool: int = 0) -> QueryResult:
    files = list(dict.fromkeys(r.chunk.path for r in reranked))
    return QueryResult(question=question, strategy=options.strategy, results=reranked, original=original,
                       relevant_files=files, total_chunks_searched=total, chunks_above_threshold=above,
                       reranked=was_reranked, fallback_reason=fallback, cache_hit=False,
                       timings_ms=stages.total(), pool_size=pool)


def reduction_note(question: str, strategy: str, settings) -> str:
    """For a question over NOTE_CHARS: its length against the one limit, and what of it each search reads
    (what keeps a 50,000-character bug report about as fast to answer as a short one). "" for a shorter one."""
    if len(question) <= NOTE_CHARS:
        return ""
    note = (f"long question: {len(question):,} characters (the limit is {MAX_QUESTION_CHARS:,}); the vector "
            f"search reads its first {settings.max_seq_length} tokens, the keyword search its {MAX_WORDS} most "
            "telling words at most")
    if strategy == "bug-report":
        note += (f"; bug-report adds the paths, traceback frames and names it cites, its "
                 f"{settings.bugreport_max_terms} most telling terms and its first {settings.bugreport_max_parts} "
                 "parts (title, paragraphs, code blocks)")
    return note


def mark_cached(result: QueryResult) -> QueryResult:
    return replace(result, cache_hit=True)


def file_states(root: Path, paths, records: dict) -> dict[str, str]:
    """Per path: "" when the file on disk still has the size and mtime it was indexed with,
    "modified" when not, "deleted" when it is gone. One stat per path, no reading."""
    states = {}
    for path in set(paths):
        record = records.get(path)
        try:
            info = os.stat(root / path)
        except FileNotFoundError:
            states[path] = "deleted"
            continue
        except OSError:
            states[path] = ""
            continue
        same = record is None or (info.st_size, info.st_mtime_ns) == (record.size, record.mtime_ns)
        states[path] = "" if same else "modified"  # no record: not indexed yet (a run is on it), not modified
    return states


def over_limit(root: Path, paths: list[str], limit: int) -> list[str]:
    """For each file now over the read limit (grown since it was indexed): "d.py is 20.0 MiB now, over the
    1.0 MiB limit: reindex to drop it" (it is never read whole)."""
    notes = []
    for path in paths:
        with contextlib.suppress(OSError):
            size = os.stat(root / path).st_size
            if size > limit:
                notes.append(str(files.FileTooLarge(path, size, limit)))
    return notes


def mark_stale(result: QueryResult, states: dict[str, str]) -> QueryResult:
    """The result with each chunk's `stale` flag set from `states` (see file_states)."""
    def marked(items: list[ResultChunk]) -> list[ResultChunk]:
        return [replace(r, stale=states.get(r.chunk.path, "")) for r in items]

    return replace(result, results=marked(result.results), original=marked(result.original))


def names_first(kept: list[Candidate], definitions: list, scored: list[Candidate], reading) -> list[Candidate]:
    """Navigation: the definitions of the name asked first, in the name channel's order (best match, then
    path: classes and module-level functions before methods), each labelled with the strategy's own score and
    a row saying why it leads; then the rest in the strategy's order. A definition below the threshold still
    leads: it is what was asked for."""
    if not definitions:
        return kept
    by_id = {c.chunk.id: c for c in reversed(scored)}  # the strategy's scoring wins over the pool's
    by_id.update((c.chunk.id, c) for c in kept)
    found = [d for d in definitions if d.chunk.id in by_id]
    first = [labelled(by_id[d.chunk.id], d, n, len(found), reading) for n, d in enumerate(found, 1)]
    ids = {c.chunk.id for c in first}
    return first + [c for c in kept if c.chunk.id not in ids]


def labelled(candidate: Candidate, definition, number: int, count: int, reading) -> Candidate:
    what = {"path": f"the file `{reading.name}`", "line": f"line {reading.line} of `{reading.name}`"}.get(
        definition.match, f"defines `{reading.name}`, the name asked")
    where = f" ({number} of {count} definitions)" if count > 1 and definition.match not in ("path", "line") else ""
    row = Signal(f"{what}{where}", 1.0, 0.0, "add",
                 f"navigation: what the question names comes first ({definition.match} match)")
    return replace(candidate, signals=(*candidate.signals, row))


def reading_note(reading, definitions: list) -> str:
    """What the result says about how the question was read."""
    if not reading.navigation:
        return ""
    if not definitions:
        kind = "file" if reading.kind == "path" else "definition"
        return f"no {kind} named `{reading.name}` in this index; the usual search follows"
    what = "file" if reading.kind == "path" else "definition"
    count = len(definitions)
    return f"read as {reading.kind} `{reading.name}`: {count} {what}{'s' if count > 1 else ''} first"


RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al.)


def fuse(ranked: list[Candidate], by_keywords: list[Candidate], share: float) -> list[Candidate]:
    """While vectors are missing: the strategy's ranking (over chunks with vectors, weighed by `share`:
    Searcher.covered) and what names and keywords found over every chunk (weighed by the rest), in one
    ranking by reciprocal rank fusion: with no vectors it is the keyword answer, with all the strategy's.
    Scores become the fused ones."""
    if not by_keywords:
        return ranked
    scores: dict[str, float] = {}
    first: dict[str, Candidate] = {}
    for weight, ranking in ((share, ranked), (1.0 - share, by_keywords)):
        for rank, c in enumerate(ranking, 1):
            scores[c.chunk.id] = scores.get(c.chunk.id, 0.0) + weight / (RRF_K + rank)
            first.setdefault(c.chunk.id, c)
    order = sorted(first, key=lambda i: -scores[i])
    return [replace(first[i], score=round(scores[i] * RRF_K, 6)) for i in order]


def vectors_note(with_vectors: int, total: int) -> str:
    """What an answer stands on while a run makes vectors: "vectors for 4,210 of 37,748 chunks (11 %): ranked
    by keywords and names where vectors are missing"."""
    share = min(99, int(100 * with_vectors / total)) if total else 0
    return (f"vectors for {with_vectors:,} of {total:,} chunks ({share} %): ranked by keywords and names where "
            "vectors are missing")
