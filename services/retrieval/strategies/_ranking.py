"""Small helpers shared by the strategies: deterministic ordering, min-max, word matching."""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from services.core.models import Candidate, Signal


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


_WORD_RUN = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-z0-9_]+")


class WordCounts:
    """`\\bword\\b` matches in one text, for many words: the text's word runs are counted once, so a
    long question costs one pass per chunk instead of one regex scan per keyword. For a word of
    ASCII letters, digits and `_`, a boundary match is exactly a whole word run equal to it
    (case-insensitive); any other word falls back to the regex."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii_lower = text.lower() if text.isascii() else None
        runs = _WORD_RUN.findall(self.ascii_lower) if self.ascii_lower is not None else \
            [r.lower() for r in _WORD_RUN.findall(text)]
        self.counts = Counter(runs)

    def may_contain(self, word: str) -> bool:
        """False only when `word` cannot match: an ASCII text without it as a substring."""
        return self.ascii_lower is None or not word.isascii() or word.lower() in self.ascii_lower

    def count(self, word: str) -> int:
        if _ASCII_WORD.fullmatch(word.lower()):
            return self.counts.get(word.lower(), 0)
        return count_words(self.text, word)

    def contains(self, word: str) -> bool:
        return self.count(word) > 0


class Keywords:
    """A question's (distinct, lower-case) keywords, sorted once into plain ASCII words, matched
    against a chunk's word counts as sets, and the rest, matched with the regex."""

    def __init__(self, keywords: list[str]) -> None:
        self.words = list(dict.fromkeys(keywords))
        self.plain = {k for k in self.words if _ASCII_WORD.fullmatch(k)}
        self.other = [k for k in self.words if k not in self.plain]

    def found(self, words: WordCounts) -> int:
        """How many keywords occur at a word boundary."""
        return len(self.plain & words.counts.keys()) + sum(
            1 for k in self.other if words.may_contain(k) and contains_word(words.text, k))

    def occurrences(self, words: WordCounts) -> int:
        """Word-boundary occurrences of all keywords together."""
        return (sum(words.counts[k] for k in self.plain & words.counts.keys())
                + sum(count_words(words.text, k) for k in self.other if words.may_contain(k)))


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


def explained(candidate: Candidate, signals: Iterable[Signal], unit: bool = False) -> Candidate:
    """The candidate scored by its signals, so the explanation always reproduces the score. `unit`: the
    rows describe a 0-1 score, kept in [0, 1] (summed floats may land a hair outside, 1.0000000000000002)."""
    signals = tuple(signals)
    score = apply_signals(signals)
    return replace(candidate, score=min(1.0, max(0.0, score)) if unit else score, signals=signals)


def cosine_signal(candidate: Candidate) -> Signal:
    """The starting point of similarity-scale strategies: the score the candidate came with."""
    return Signal("cosine similarity", candidate.score, candidate.score, "set")


def unchanged(candidates: Iterable[Candidate], why: str) -> list[Candidate]:
    """The candidates in their order with their scores, explained by `why` (e.g. no keywords)."""
    return [explained(c, [replace(cosine_signal(c), note=why)]) for c in candidates]


def scaled_signals(signals: list[Signal], low: float, high: float) -> list[Signal]:
    """min_max as signals a reader can add up: every step rescaled to this question's 0-1 range
    (a multiplier becomes the points it adds or takes away), then the weakest candidate's value
    subtracted, so the rows sum to the scaled score (all equal -> one row, 1.0)."""
    if high - low <= 0:
        return [Signal("every candidate scores the same", apply_signals(signals), 1.0, "set",
                       "scaled 0–1 within this question: all get 1.0")]
    factor = 1.0 / (high - low)
    out, running = [], 0.0
    for signal in signals:
        after = apply_signals([signal], running)
        note = f"{signal.note}; " if signal.note else ""
        out.append(Signal(signal.name, signal.value, (after - running) * factor, "add",
                          f"{note}{after - running:+.4f} before scaling (×{factor:.4g}, this question's range)"))
        running = after
    out.append(Signal("minus the weakest candidate", low, -low * factor, "add",
                      "so the weakest candidate here scores 0 and the best 1"))
    return out


@lru_cache(maxsize=64)
def _prior_patterns(patterns: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in patterns.split(",") if p.strip())


def path_prior(path: str, patterns: str, factor: float) -> list[Signal]:
    """A 'demoted path' multiplier when the path matches one of the globs (at the top or below any
    folder) and the factor is not 1; else nothing."""
    if factor == 1.0:
        return []
    pattern = _demoting_pattern(path, patterns)
    return [Signal("demoted path", factor, factor, "mul", f"matches {pattern} (tests, examples, docs, generated)")] \
        if pattern else []


@lru_cache(maxsize=65536)
def _demoting_pattern(path: str, patterns: str) -> str | None:
    """The first glob the path matches (a pool holds many chunks of one file: asked once per file)."""
    for pattern in _prior_patterns(patterns):
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, f"*/{pattern}"):
            return pattern
    return None
