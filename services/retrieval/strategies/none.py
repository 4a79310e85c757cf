"""`none`: the vector ranking as it is."""

from __future__ import annotations

from services.core.models import Candidate
from services.retrieval.strategies._ranking import cosine_signal, explained
from services.retrieval.strategies.base import SIMILARITY, BaseStrategy, RerankRequest, register


@register
class NoReranking(BaseStrategy):
    name = "none"
    label = "No reranking"
    description = "Results in the order of their cosine similarity to the question."
    scale = SIMILARITY
    order = 0
    reranks = False
    legend = "cosine similarity of question and chunk, 0–1; comparable across questions."

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        return [explained(c, [cosine_signal(c)]) for c in request.candidates]
