"""The one protocol every reranking strategy implements, and the registry that finds them.

A new strategy is one new module in this package that defines a class with `@register`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import ClassVar, Protocol, runtime_checkable

from services.core.models import Availability, Candidate, RerankRequest, StrategyInfo
from services.core.settings import Settings

# How a strategy's scores relate to cosine similarity; decides where min_relevance applies.
SIMILARITY = "similarity"  # cosine similarity, possibly boosted: min_relevance applies to the reranked score
RELATIVE = "relative"  # rank-fusion scores normalised within one query: min_relevance applies to the original score
PROBABILITY = "probability"  # a model's 0-1 relevance: its own threshold applies; min_relevance to the original score

LEGENDS = {
    SIMILARITY: "cosine similarity (0–1) with this strategy's boosts added or multiplied in; "
                "comparable across questions.",
    RELATIVE: "fused ranks scaled 0–1 within this question (1 = best here, 0 = worst here); "
              "not comparable across questions.",
    PROBABILITY: "the model's relevance probability, 0–1; comparable across questions.",
}


@runtime_checkable
class RerankStrategy(Protocol):
    name: ClassVar[str]  # registry key, e.g. "keyword-boost"
    label: ClassVar[str]  # shown in the UI, e.g. "Keyword boost"
    description: ClassVar[str]
    scale: ClassVar[str]  # SIMILARITY, RELATIVE or PROBABILITY
    uses_keyword_index: ClassVar[bool]  # the pipeline fills RerankRequest.keyword_hits

    def __init__(self, settings: Settings) -> None: ...

    def availability(self) -> Availability: ...

    def pool_size(self, top_k: int) -> int:
        """How many vector candidates to fetch for a request of top_k results."""

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        """Return candidates best first, each with `score` set to its reranked score.

        Deterministic for the same input. Raise StrategyUnavailable to make the pipeline
        fall back to the original ranking with the reason shown to the user.
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

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def availability(self) -> Availability:
        return Availability(True)

    def pool_size(self, top_k: int) -> int:
        if not self.wide_pool:
            return self.settings.narrow_pool_factor * top_k
        return self.settings.candidate_pool(top_k)

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
    return sorted(_REGISTRY, key=lambda n: (getattr(_REGISTRY[n], "order", 100), n))


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
    scale = getattr(strategy, "scale", SIMILARITY)
    return StrategyInfo(strategy.name, strategy.label or strategy.name, strategy.description,
                        availability.available, availability.reason, scale,
                        getattr(strategy, "legend", "") or LEGENDS.get(scale, ""))
