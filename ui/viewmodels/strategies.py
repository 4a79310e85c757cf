"""Which strategies the strategy picker offers, and stepping through the available ones."""

from __future__ import annotations

from services.core.models import StrategyInfo


def fallback_strategies() -> list[StrategyInfo]:
    """What the picker offers when the engine lists none (or fails to): the vector order as is."""
    return [StrategyInfo("none", "None (vector order)", "The vector ranking as is", True, "")]


def step_strategy(available: list[bool], current: int, step: int) -> int | None:
    """The row `step` places on from `current` (wrapping) whose strategy is available; None if none is."""
    count = len(available)
    for offset in range(1, count + 1):
        row = (current + step * offset) % count
        if available[row]:
            return row
    return None
