"""`keyword-boost`: reranking-strategies.md, KeywordBoostStrategy.

boost = exact_phrase_boost (the whole question occurs in the chunk, case-insensitive)
      + boost_per_keyword x (query keywords found at a word boundary, case-insensitive)
capped at max_boost; new score = min(1.0, score + boost). Chunks without a match keep their score.
"""

from __future__ import annotations

from dataclasses import replace

from services.models import Candidate, RerankRequest
from services.reranking._ranking import Keywords, WordCounts, best_first, searchable_text
from services.reranking.base import SIMILARITY, BaseStrategy, register
from services.text import query_keywords


@register
class KeywordBoostStrategy(BaseStrategy):
    name = "keyword-boost"
    label = "Keyword boost"
    description = ("Adds 5% per question keyword found in the chunk and 10% for the exact phrase, "
                   "at most 30%.")
    scale = SIMILARITY
    order = 10

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        keywords = query_keywords(request.query)
        if not keywords:
            return list(request.candidates)
        phrase = request.query.strip().lower()
        prepared = Keywords(keywords)
        return best_first(self._boosted(c, prepared, phrase) for c in request.candidates)

    def boost(self, text: str, keywords: list[str] | Keywords, phrase: str) -> float:
        """The spec's ApplyKeywordBoost, without the score arithmetic."""
        s = self.settings
        keywords = keywords if isinstance(keywords, Keywords) else Keywords(keywords)
        total = s.exact_phrase_boost if phrase and phrase in text.lower() else 0.0
        total += s.boost_per_keyword * keywords.found(WordCounts(text))
        return min(total, s.max_boost)

    def _boosted(self, candidate: Candidate, keywords: Keywords, phrase: str) -> Candidate:
        boost = self.boost(searchable_text(candidate), keywords, phrase)
        if boost <= 0:
            return candidate
        return replace(candidate, score=min(1.0, candidate.score + boost))
