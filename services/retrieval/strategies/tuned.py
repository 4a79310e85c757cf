"""`tuned`: the vector ranking with the question's vector passed through an adapter learned from your labels
(or, with too few labels, from the repository's commits: services/retrieval/strategies/query_adapter.py).

See services/retrieval/strategies/query_adapter.py. Training runs in the background: until the adapter is ready, `tuned`
answers as the vector ranking and says so. The pool is re-scored with the adapted question vector against the chunks'
stored vectors (filters stay as the pool applied them). Without enough labels, or when the adapter's
held-out score is not above the plain vector ranking's, it falls back to the vector ranking and says why.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from services.retrieval.strategies import query_adapter as adapters
from services.core.errors import StrategyUnavailable
from services.core.models import Candidate, Signal
from services.retrieval.strategies._ranking import best_first
from services.retrieval.strategies.base import SIMILARITY, BaseStrategy, RerankRequest, register


@register
class TunedStrategy(BaseStrategy):
    name = "tuned"
    label = "Tuned to your labels"
    description = ("The vector search with the question's vector adapted to the results you marked relevant "
                   "(right-click a result). Used only when it ranks your held-out labelled questions better "
                   "than the plain vector search.")
    scale = SIMILARITY
    order = 80

    def pool_size(self, top_k: int) -> int:
        return self.settings.candidate_pool(top_k)

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        context = request.context
        if context is None or request.query_vector is None:
            raise StrategyUnavailable("needs the workspace index")
        adapter, labelled, training = adapters.for_workspace(context)
        if adapter is None and training:
            source = f"your {labelled} labelled questions" if labelled >= adapters.MIN_QUERIES else "the git history"
            raise StrategyUnavailable(f"its adapter is being trained on {source} in the background; the vector "
                                      "ranking answers until it is ready")
        if adapter is None:
            raise StrategyUnavailable(f"needs {adapters.MIN_QUERIES} questions with a result marked relevant "
                                      f"(has {labelled}; right-click results to label them) or a git history "
                                      f"with {adapters.HISTORY_MIN_COMMITS} commits to learn from")
        held = adapter.held_out
        history = adapter.source == "history"
        if not held.useful:
            on = f"{held.queries} held-out newer commits" if history else "your held-out labelled questions"
            raise StrategyUnavailable(f"not used: {'trained on the history, ' if history else ''}on {on} it "
                                      f"scores MRR@10 {held.mrr_tuned:.3f}, not above the plain vector search's "
                                      f"{held.mrr_none:.3f}")
        stored = context.embeddings([c.chunk.id for c in request.candidates])
        query = adapter.apply(np.asarray(request.query_vector)[None, :])[0]
        out = []
        for c in request.candidates:
            vector = stored.get(c.chunk.id)
            if vector is None:
                continue
            score = float(np.asarray(vector, dtype=np.float32) @ query)
            note = (f"held-out MRR@10 {held.mrr_tuned:.3f} vs {held.mrr_none:.3f} "
                    f"({held.queries} {'newer commits; learnt from the history' if history else 'questions'})")
            out.append(replace(c, score=score, signals=(Signal("adapted cosine", score, score, "set", note),)))
        return best_first(out)
