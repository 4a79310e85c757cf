"""Small helpers shared by the strategies: deterministic ordering, min-max, word matching."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from services.models import Candidate, Signal


def tie_key(candidate: Candidate) -> tuple:
    """Ties broken by original rank, then keyword rank (BM25-only hits), then chunk id."""
    rank = candidate.original_rank if candidate.original_rank is not None else math.inf
    keyword_rank = candidate.keyword_rank if candidate.keyword_rank is not None else math.inf
    return (rank, keyword_rank, candidate.chunk.id)


def best_first(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Highest `score` first; deterministic for equal scores."""
    return sorted(candidates, key=lambda c: (-c.score, *tie_key(c)))


def min_max(values: list[float]) -> list[float]:
    """Scale to 0-1. When every value is the same (range 0) each becomes 1.0."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 0:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


@lru_cache(maxsize=1024)
def word_pattern(word: str) -> re.Pattern[str]:
    """`\\bword\\b`, case-insensitive, as the spec's ContainsKeyword."""
    return re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)


def contains_word(text: str, word: str) -> bool:
    return word_pattern(word).search(text) is not None


def count_words(text: str, word: str) -> int:
    return sum(1 for _ in word_pattern(word).finditer(text))


def searchable_text(candidate: Candidate) -> str:
    """What keyword matching looks at: the chunk's names plus its content."""
    chunk = candidate.chunk
    return "\n".join(part for part in (chunk.qualified_name, chunk.symbol, chunk.content) if part)


# --------------------------------------------------------------------------- explanations

def apply_signals(signals: Iterable[Signal], start: float = 0.0) -> float:
    """The score the signals describe: each adds to, multiplies or sets the running score."""
    score = start
    for signal in signals:
        if signal.op == "set":
            score = signal.contribution
        elif signal.op == "mul":
            score *= signal.contribution
        else:
            score += signal.contribution
    return score


def explained(candidate: Candidate, signals: Iterable[Signal]) -> Candidate:
    """The candidate scored by its signals, so the explanation always reproduces the score."""
    signals = tuple(signals)
    return replace(candidate, score=apply_signals(signals), signals=signals)


def cosine_signal(candidate: Candidate) -> Signal:
    """The starting point of similarity-scale strategies: the score the candidate came with."""
    return Signal("cosine similarity", candidate.score, candidate.score, "set")


def unchanged(candidates: Iterable[Candidate], why: str) -> list[Candidate]:
    """The candidates in their order with their scores, explained by `why` (e.g. no keywords)."""
    return [explained(c, [replace(cosine_signal(c), note=why)]) for c in candidates]


def scaled_signals(raw: float, low: float, high: float) -> list[Signal]:
    """min_max as signals: subtract the list's lowest value, divide by its range (all equal -> 1.0)."""
    if high - low <= 0:
        return [Signal("scaled 0–1 in this list", raw, 1.0, "set", "every candidate has the same value")]
    return [Signal("minus the list's lowest", low, -low, "add"),
            Signal("divided by the list's range", high - low, 1.0 / (high - low), "mul",
                    "scaled 0–1 within this question's candidates")]


@lru_cache(maxsize=64)
def _prior_patterns(patterns: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in patterns.split(",") if p.strip())


def path_prior(path: str, patterns: str, factor: float) -> list[Signal]:
    """A 'demoted path' multiplier when the path matches one of the globs (at the top or below any
    folder) and the factor is not 1; else nothing."""
    if factor == 1.0:
        return []
    for pattern in _prior_patterns(patterns):
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, f"*/{pattern}"):
            return [Signal("demoted path", factor, factor, "mul", f"matches {pattern} (tests, examples, docs, generated)")]
    return []
