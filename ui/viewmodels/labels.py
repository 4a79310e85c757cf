"""Relevance labels from the window: the engine keeps them (next to its index), per workspace and question."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from services.core.models import ResultChunk
from services.evaluation import labels  # until the Engine protocol has labels

if TYPE_CHECKING:
    from services.engine.service import KnowledgeService


def engine_labels(engine: Any) -> Any:  # until the Engine protocol has labels
    """The engine's `record_label` / `labels_for`; for an engine without them, its data dir's labels file."""
    if hasattr(engine, "record_label"):
        return engine
    class LabelsFile:
        async def record_label(self, workspace: str, question: str, path: str, symbol: str, relevant: bool) -> None:
            labels.record_label(labels.default_labels_file(engine.data_dir, workspace), question, path, symbol,
                                relevant)

        async def labels_for(self, workspace: str, question: str) -> dict[tuple[str, str], int]:
            return labels.labels_for(labels.default_labels_file(engine.data_dir, workspace), question)

    return LabelsFile()


class LabelsViewModel:
    """Marks results relevant or not for a question (the Compare view and `tuned` evaluate with them)."""

    def __init__(self, engine: "KnowledgeService") -> None:
        self.engine = engine

    async def mark(self, workspace: str, question: str, item: ResultChunk, relevant: bool) -> str:
        """Save the label; the line that confirms it."""
        symbol = item.chunk.qualified_name or item.chunk.symbol
        await engine_labels(self.engine).record_label(workspace, question, item.chunk.path, symbol, relevant)
        verdict = "relevant" if relevant else "not relevant"
        return f"Marked {symbol or item.chunk.path} {verdict} for \u201c{question}\u201d."

    async def grades(self, workspace: str, question: str) -> dict[tuple[str, str], int]:
        """{(path, symbol): grade} labelled so far for `question`."""
        return await engine_labels(self.engine).labels_for(workspace, question)
