"""`hybrid`: hybrid-fusion-and-metadata-reranking.md, score-aware RRF of BM25 and vector search.

For each method (semantic = the vector candidates in their order, bm25 = request.keyword_hits):
    contribution = weight x (alpha x 1/(k + rank) + (1 - alpha) x normalised_score)
where normalised_score is the method's own score min-max scaled within its list (a list whose
scores are all equal gives 1.0 to each). A chunk found by both methods gets both contributions;
the union of both lists is returned. Path priors (settings.path_prior_factor, issue #11) multiply the
fused value of tests, examples, docs and generated code. The fused values are min-max scaled to 0-1 within the
query (all equal -> 1.0), so the best chunk scores 1.0 and the worst 0.0.
"""

from __future__ import annotations

from dataclasses import replace

from services.core.models import Candidate, Signal
from services.retrieval.strategies._ranking import (
    apply_signals, best_first, explained, min_max, path_prior, scaled_signals,
)
from services.retrieval.strategies.base import RELATIVE, BaseStrategy, RerankRequest, register


@register
class HybridFusionStrategy(BaseStrategy):
    name = "hybrid"
    label = "Hybrid BM25 + semantic"
    description = ("Merges a BM25 keyword search with the vector search (weights 0.7 semantic, "
                   "0.3 BM25), using both rank and score; finds chunks the vector search missed; "
                   "tests, examples, docs and generated code are demoted (x0.8).")
    scale = RELATIVE
    uses_keyword_index = True
    order = 30

    def contributions(self, ranked: list[tuple[str, int, float]], weight: float,
                      method: str = "vector") -> dict[str, list[Signal]]:
        """ranked: (chunk id, 1-based rank, raw score) -> chunk id -> this method's signals:
        weight x alpha / (k + rank) and weight x (1 - alpha) x the score min-max scaled in its list."""
        s = self.settings
        normalised = min_max([score for _, _, score in ranked])
        return {
            chunk_id: [
                Signal(f"{method} rank {rank}", rank, weight * s.hybrid_alpha / (s.hybrid_k + rank), "add",
                       f"{weight:g} x {s.hybrid_alpha:g}/({s.hybrid_k:g}+rank)"),
                Signal(f"{method} score {score:.3g}", score, weight * (1 - s.hybrid_alpha) * norm, "add",
                       f"{weight:g} x {1 - s.hybrid_alpha:.2g} x {norm:.2f} (score scaled 0-1 in its list)"),
            ]
            for (chunk_id, rank, score), norm in zip(ranked, normalised)
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
        fused: dict[str, list[Signal]] = {chunk_id: [] for chunk_id in merged}
        for chunk_id, signals in self.contributions(semantic, s.hybrid_semantic_weight).items():
            fused[chunk_id] += signals
        for chunk_id, signals in self.contributions(bm25, s.hybrid_bm25_weight, "BM25").items():
            fused[chunk_id] += signals
        for chunk_id, signals in fused.items():
            signals += path_prior(merged[chunk_id].chunk.path, s.path_prior_patterns, s.path_prior_factor)
        raw = {chunk_id: apply_signals(signals) for chunk_id, signals in fused.items()}
        low, high = min(raw.values(), default=0.0), max(raw.values(), default=0.0)
        return best_first(explained(merged[i], scaled_signals(fused[i], low, high), unit=True) for i in fused)


def _semantic_score(candidate: Candidate) -> float:
    return candidate.original_score if candidate.original_score is not None else candidate.score
