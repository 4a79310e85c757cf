"""`auto`: reads the question and answers it with the strategy measured best for its kind (issue 41).

A name or a dotted name the index defines (`saferepr`, `Poly.degree`, `_pytest.nodes`; its plan's `by_name`) -> its
definitions, then the chunks that use it by keyword, without vectors (services/retrieval/name_answer.py: no encoder,
no vector store, an answer in a blink from a cold start). A path (`src/x.py:12`), or a name the index does not
define -> `metadata`: the name channel puts the definition, the module's or the path's file first
(services/retrieval/names.py). A traceback or
a pasted bug report -> `bug-report` (file answers: the traceback's frames, innermost first, and `bug-report`'s
file ranking fused by rank with `metadata`'s, `Blend`). A
question in words -> `metadata`: the vector ranking unless it asks for implementations or a protocol (CoSQA:
equal to `none`, 0.522, and no strategy above it). Figures:
benchmarks/README.md ("The right answer by default").
"""

from __future__ import annotations

from dataclasses import dataclass

from services.core.models import Candidate
from services.retrieval.plan import FOR_NAMES, FOR_REPORTS, FOR_WORDS, QueryPlan, plan
from services.retrieval.strategies.base import (
    SIMILARITY, BaseStrategy, RerankRequest, RerankStrategy, create_strategy, register,
)



@dataclass(frozen=True)
class Blend:
    """A report's FILE answer: `first`'s file ranking (the vector ranking's chunks at `vector` beside its own)
    fused by reciprocal rank (k) with `second`'s, which gets `share` of the weight. Chosen
    leave-one-repository-out on pytest, Sphinx, xarray and pylint (benchmarks/file_default.py): three folds chose
    share 0.2, k 30, one (pylint held out) 0.3, k 1; every fold vector 1; all four together choose these."""

    share: float = 0.2
    k: int = 30
    vector: float = 1.0
    first: str = FOR_REPORTS
    second: str = FOR_WORDS


FILES = Blend()


def files_note(note: str) -> str:
    """`choose`'s note for a report, as said of its file answer."""
    return f"{note}; files: its file ranking fused by rank with {FILES.second}'s ({FILES.share:.0%})"


@register
class AutoStrategy(BaseStrategy):
    name = "auto"
    label = "Auto"
    description = ("Reads the question and picks: a name or dotted name the index defines lists its definitions, "
                   "then the chunks that use it by keyword match (no vectors); a path, or a name not defined, goes "
                   f"to its file or definition ({FOR_NAMES}); a traceback or bug report is ranked by {FOR_REPORTS} (file answers: the "
                   f"traceback's innermost frames first, fused by rank with {FOR_WORDS}'s file ranking); a question "
                   f"in words is ranked by {FOR_WORDS}.")
    scale = SIMILARITY
    legend = ("the scores of what it picked (its note says which): for a name, keyword (BM25) scores over the "
              f"best, 0–1; else {FOR_NAMES}'s cosine similarity with its boosts; for a report, {FOR_REPORTS}'s fused ranks scaled 0–1 within the question.")
    order = -1  # first in every list: the default

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self._chosen: dict[str, RerankStrategy] = {}

    def route(self, plan: QueryPlan) -> tuple[RerankStrategy, str]:
        if plan.route not in self._chosen:
            self._chosen[plan.route] = create_strategy(plan.route, self.settings)
        return self._chosen[plan.route], plan.note

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        """Asked directly (standalone documents): as the strategy the question routes to."""
        return self.route(plan(request.query))[0].rerank(request)
