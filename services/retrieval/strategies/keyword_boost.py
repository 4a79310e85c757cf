"""`keyword-boost`: reranking-strategies.md, KeywordBoostStrategy.

boost = exact_phrase_boost (the whole question occurs in the chunk, case-insensitive)
      + boost_per_keyword x (query keywords found at a word boundary, case-insensitive)
capped at max_boost; new score = min(1.0, score + boost). Chunks without a match keep their score.
"""

from __future__ import annotations

from services.core.models import Candidate, Signal
from services.retrieval.strategies._ranking import (
    Keywords, WordCounts, apply_signals, best_first, cosine_signal, explained, searchable_text, unchanged,
)
from services.retrieval.strategies.base import SIMILARITY, BaseStrategy, RerankRequest, register
from services.core.text import query_keywords


@register
class KeywordBoostStrategy(BaseStrategy):
    name = "keyword-boost"
    label = "Keyword boost"
    description = ("Adds 5% per question keyword found in the chunk and 10% for the exact phrase, "
                   "at most 30%.")
    scale = SIMILARITY
    order = 10
    wide_pool = False  # a wider pool did not help it (pytest MRR@10 0.293 -> 0.291; benchmarks/experiments/README.md)

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        keywords = query_keywords(request.query)
        if not keywords:
            return unchanged(request.candidates, "the question has no keywords")
        phrase = request.query.strip().lower()
        prepared = Keywords(keywords)
        return best_first(explained(c, self.signals(c, prepared, phrase)) for c in request.candidates)

    def boosts(self, text: str, keywords: list[str] | Keywords, phrase: str) -> list[Signal]:
        """The spec's ApplyKeywordBoost as signals: phrase, each keyword found, the cap."""
        s = self.settings
        keywords = keywords if isinstance(keywords, Keywords) else Keywords(keywords)
        words = WordCounts(text)
        found = []
        if phrase and phrase in text.lower():
            found.append(Signal("exact phrase", 1, s.exact_phrase_boost, "add", phrase))
        found += [Signal(f"keyword '{k}'", 1, s.boost_per_keyword, "add") for k in keywords.words
                  if words.contains(k)]
        total = sum(f.contribution for f in found)
        if total > s.max_boost:
            found.append(Signal(f"boost capped at +{s.max_boost:g}", total, s.max_boost - total, "add"))
        return found

    def boost(self, text: str, keywords: list[str] | Keywords, phrase: str) -> float:
        return apply_signals(self.boosts(text, keywords, phrase))

    def signals(self, candidate: Candidate, keywords: Keywords, phrase: str) -> list[Signal]:
        out = [cosine_signal(candidate), *self.boosts(searchable_text(candidate), keywords, phrase)]
        score = apply_signals(out)
        if score > 1.0:
            out.append(Signal("score capped at 1.0", score, 1.0 - score, "add"))
        return out
