"""Relevance labels from the window: the engine keeps them (next to its index), per workspace and question."""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.core.models import ResultChunk
from ui.viewmodels.results import one_line

if TYPE_CHECKING:
    from services.engine.protocol import Engine


class LabelsViewModel:
    """Marks results relevant or not for a question (the Compare view and `tuned` evaluate with them)."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine

    async def mark(self, workspace: str, question: str, item: ResultChunk, relevant: bool) -> str:
        """Save the label; the line that confirms it."""
        symbol = item.chunk.qualified_name or item.chunk.symbol
        await self.engine.record_label(workspace, question, item.chunk.path, symbol, relevant)
        verdict = "relevant" if relevant else "not relevant"
        return f"Marked {symbol or item.chunk.path} {verdict} for \u201c{one_line(question)}\u201d."

    async def grades(self, workspace: str, question: str) -> dict[tuple[str, str], int]:
        """{(path, symbol): grade} labelled so far for `question`."""
        return await self.engine.labels_for(workspace, question)
