"""`hybrid`: hybrid-fusion-and-metadata-reranking.md, score-aware RRF of BM25 and vector search.

For each method (semantic = the vector candidates in their order, bm25 = request.keyword_hits):
    contribution = weight x (alpha x 1/(k + rank) + (1 - alpha) x normalised_score)
where normalised_score is the method's own score min-max scaled within its list (a list whose
scores are all equal gives 1.0 to each). A chunk found by both methods gets both contributions;
the union of both lists is returned. The fused values are min-max scaled to 0-1 within the
query (all equal -> 1.0), so the best chunk scores 1.0 and the worst 0.0.
"""

from __future__ import annotations

from dataclasses import replace

from services.models import Candidate, RerankRequest
from services.reranking._ranking import best_first, min_max
from services.reranking.base import RELATIVE, BaseStrategy, register


@register
class HybridFusionStrategy(BaseStrategy):
    name = "hybrid"
    label = "Hybrid BM25 + semantic"
    description = ("Merges a BM25 keyword search with the vector search (weights 0.7 semantic, "
                   "0.3 BM25), using both rank and score; finds chunks the vector search missed.")
    scale = RELATIVE
    uses_keyword_index = True
    order = 30

    def contributions(self, ranked: list[tuple[str, int, float]], weight: float) -> dict[str, float]:
        """ranked: (chunk id, 1-based rank, raw score) -> chunk id -> this method's contribution."""
        s = self.settings
        normalised = min_max([score for _, _, score in ranked])
        return {
            chunk_id: weight * (s.hybrid_alpha / (s.hybrid_k + rank) + (1 - s.hybrid_alpha) * norm)
            for (chunk_id, rank, _), norm in zip(ranked, normalised)
        }

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        s = self.settings
        merged: dict[str, Candidate] = {c.chunk.id: c for c in request.candidates}
        semantic = [(c.chunk.id, i, _semantic_score(c))
                    for i, c in enumerate(request.candidates, start=1)]
        bm25 = []
        for i, hit in enumerate(request.keyword_hits, start=1):
            rank = hit.keyword_rank or i
            score = hit.keyword_score if hit.keyword_score is not None else hit.score
            bm25.append((hit.chunk.id, rank, score))
            known = merged.get(hit.chunk.id)
            merged[hit.chunk.id] = (hit if known is None else
                                    replace(known, keyword_score=score, keyword_rank=rank))
        fused = dict.fromkeys(merged, 0.0)
        for chunk_id, value in self.contributions(semantic, s.hybrid_semantic_weight).items():
            fused[chunk_id] += value
        for chunk_id, value in self.contributions(bm25, s.hybrid_bm25_weight).items():
            fused[chunk_id] += value
        ids = list(fused)
        scaled = min_max([fused[i] for i in ids])
        return best_first(replace(merged[i], score=v) for i, v in zip(ids, scaled))


def _semantic_score(candidate: Candidate) -> float:
    return candidate.original_score if candidate.original_score is not None else candidate.score
