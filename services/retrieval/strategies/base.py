"""The one protocol every reranking strategy implements, what it is given, and the registry that finds them.

A new strategy is one new module in this package that defines a class with `@register`. It sees the
workspace only through a StrategyContext (never the storage layer), and declares what it can do
(class attributes on BaseStrategy) instead of being probed for it.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

from services.core.errors import StrategyUnavailable
from services.core.models import Availability, Candidate, Chunk, StrategyInfo
from services.core.settings import Settings

if TYPE_CHECKING:
    from services.retrieval.plan import QueryPlan

# How a strategy's scores relate to cosine similarity; decides where min_relevance applies.
SIMILARITY = "similarity"  # cosine similarity, possibly boosted: min_relevance applies to the reranked score
RELATIVE = "relative"  # rank-fusion scores normalised within one query: min_relevance applies to the original score
PROBABILITY = "probability"  # a model's 0-1 relevance: its own threshold applies; min_relevance to the original score

LEGENDS = {
    SIMILARITY: "cosine similarity (0–1) with this strategy's boosts added or multiplied in, so a boosted "
                "score can pass 1; comparable across questions.",
    RELATIVE: "fused ranks scaled 0–1 within this question (1 = best here, 0 = weakest candidate here); "
              "not comparable across questions.",
    PROBABILITY: "the model's relevance probability, 0–1; comparable across questions.",
}


class StrategyContext(Protocol):
    """What a strategy may read beyond its candidates: the workspace's index (read-only) and the
    encoder. The search flow builds one per question (services.retrieval.search.IndexContext)."""

    key: str  # names the index, for caches kept across questions
    labels_file: Path  # the workspace's relevance labels (services.storage.labels)
    adapter_file: Path  # where `tuned` keeps the adapter it learns from them
    before: int | None  # the question's history cut-off: commits at or after it must not be used

    def history(self):
        """The workspace's services.storage.history_store.CommitIndex, or None without history."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """Texts -> vectors as the index stores them (the query encoder, then the index's projection)."""

    def version(self) -> tuple:
        """A value that changes whenever the catalogue changes."""

    def chunks(self, ids: list[str] | None = None) -> list[Chunk]:
        """The catalogue's chunks with these ids (every chunk when None)."""

    def embeddings(self, ids: list[str]) -> dict[str, list[float]]:
        """Stored vectors by chunk id; ids without one are left out."""

    def vector_search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        """The `limit` nearest chunks: (chunk id, cosine similarity), best first."""

    def keyword_search(self, weights: dict[str, float], limit: int) -> list[tuple[str, float]]:
        """BM25 over the index with weighted query terms: (chunk id, score), best first."""


@dataclass(frozen=True)
class RerankRequest:
    """Everything a strategy may look at. Candidates are in original (vector) order."""

    query: str
    candidates: list[Candidate]
    keyword_hits: list[Candidate] = field(default_factory=list)  # BM25 ranking, only if uses_keyword_index
    top_k: int = 10
    # For strategies that look beyond the pool; None when there is no index (standalone documents):
    context: StrategyContext | None = None
    query_vector: np.ndarray | None = None  # the question's vector, as the vector search used it


class RerankSkipped(StrategyUnavailable):
    """A strategy chose not to rerank this question (e.g. the cross-encoder's adaptive mode): the
    vector ranking is kept and the message says why."""


@runtime_checkable
class RerankStrategy(Protocol):
    name: ClassVar[str]  # registry key, e.g. "keyword-boost"
    label: ClassVar[str]  # shown in the UI, e.g. "Keyword boost"
    description: ClassVar[str]
    scale: ClassVar[str]  # SIMILARITY, RELATIVE or PROBABILITY
    legend: ClassVar[str]  # what the scores mean; "" for the scale's legend (LEGENDS)
    order: ClassVar[int]  # position in lists shown to users
    uses_keyword_index: ClassVar[bool]  # the search fills RerankRequest.keyword_hits
    reranks: ClassVar[bool]  # False: the vector ranking as it is (`none`), never reported as reranked
    loads_model: ClassVar[bool]  # True: warm_up() loads a model the first question would wait for
    score_threshold: float  # PROBABILITY strategies: results scoring below it are cut (0: none are)

    def __init__(self, settings: Settings) -> None: ...

    def availability(self) -> Availability: ...

    def pool_size(self, top_k: int) -> int:
        """How many vector candidates to fetch for a request of top_k results."""

    def warm_up(self) -> None:
        """Load what the first question would otherwise wait for (called when loads_model)."""

    def route(self, plan: QueryPlan) -> tuple[RerankStrategy, str]:
        """The strategy that answers the planned question (itself, or the one `auto` picks) and a note saying
        why."""

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        """Return candidates best first, each with `score` set to its reranked score.

        Deterministic for the same input. Raise StrategyUnavailable (cannot run) or RerankSkipped
        (chooses not to) to keep the original ranking, with the reason shown to the user.
        """


class BaseStrategy:
    """Sensible defaults; strategies may subclass it (not required by the protocol)."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    scale: ClassVar[str] = SIMILARITY
    uses_keyword_index: ClassVar[bool] = False
    order: ClassVar[int] = 100  # position in lists shown to users
    legend: ClassVar[str] = ""  # what the scores mean; default: the scale's legend (LEGENDS)
    wide_pool: ClassVar[bool] = True  # False: the spec's narrow_pool_factor x top_k (measured better for it)
    reranks: ClassVar[bool] = True
    loads_model: ClassVar[bool] = False
    score_threshold: float = 0.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def availability(self) -> Availability:
        return Availability(True)

    def pool_size(self, top_k: int) -> int:
        if not self.wide_pool:
            return self.settings.narrow_pool_factor * top_k
        return self.settings.candidate_pool(top_k)

    def warm_up(self) -> None:
        """Nothing to load (strategies with loads_model override this)."""

    def route(self, plan: QueryPlan) -> tuple[RerankStrategy, str]:
        return self, ""

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        raise NotImplementedError


_REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: make a strategy available under `cls.name`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    package = importlib.import_module("services.retrieval.strategies")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "base" and not module.name.startswith("_"):
            importlib.import_module(f"services.retrieval.strategies.{module.name}")


def strategy_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY, key=lambda n: (_REGISTRY[n].order, n))


def strategy_class(name: str) -> type:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r}; known: {', '.join(strategy_names())}") from None


def create_strategy(name: str, settings: Settings) -> RerankStrategy:
    return strategy_class(name)(settings)


def strategy_info(strategy: RerankStrategy) -> StrategyInfo:
    """What a user is shown about a strategy: its label, description and availability now."""
    availability = strategy.availability()
    return StrategyInfo(strategy.name, strategy.label or strategy.name, strategy.description,
                        availability.available, availability.reason, strategy.scale,
                        strategy.legend or LEGENDS.get(strategy.scale, ""))
