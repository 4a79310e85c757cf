"""Reranking strategies: one module each, behind `base.RerankStrategy` and its registry."""

from services.retrieval.strategies.base import (
    PROBABILITY,
    RELATIVE,
    SIMILARITY,
    BaseStrategy,
    RerankRequest,
    RerankSkipped,
    RerankStrategy,
    StrategyContext,
    create_strategy,
    register,
    strategy_info,
    strategy_class,
    strategy_names,
)

__all__ = [
    "PROBABILITY", "RELATIVE", "SIMILARITY", "BaseStrategy", "RerankRequest", "RerankSkipped", "RerankStrategy",
    "StrategyContext",
    "create_strategy", "register", "strategy_info", "strategy_class", "strategy_names",
]
