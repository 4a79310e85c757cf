"""The Compare tab's work with the engine: rankings per strategy, an evaluation, and relevance labels.

Everything goes through the Engine (services.engine.protocol), so with a remote engine the labels are the
server's, where `tuned` and every other client read them, not a file on the window's machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.core.models import QueryOptions, QueryResult, ResultChunk
from services.core.labelled import LabelledQuery
from services.evaluation.formats import Qrels, WorkspaceDocIds
from services.evaluation.report import EvalReport
from services.evaluation.runner import ProgressFn, choose_strategies, evaluate

if TYPE_CHECKING:
    from services.engine.protocol import Engine


def label_key(item: ResultChunk) -> tuple[str, str]:
    """(path, symbol) a label of this result is kept under."""
    return item.chunk.path, item.chunk.qualified_name or item.chunk.symbol


def grade_of(item: ResultChunk, grades: dict[tuple[str, str], int]) -> int | None:
    """The result's label: its own, else its whole file's; None when unlabelled."""
    path, symbol = label_key(item)
    return grades.get((path, symbol), grades.get((path, "")))


class CompareViewModel:
    """One question through every available strategy; a labelled query set scored; labels kept by the engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def strategies(self) -> tuple[list[str], dict[str, str]]:
        """(the available strategies, `none` first; {unavailable: why})."""
        return await choose_strategies(self.engine, "all")

    async def rank(self, question: str, workspace: str, strategy: str, top_k: int) -> QueryResult:
        options = QueryOptions(workspace=workspace, top_k=top_k, strategy=strategy, expand_context=False)
        return await self.engine.query(question, options)

    async def evaluate(self, queries: list[LabelledQuery], qrels: Qrels, workspace: str, names: list[str],
                       skipped: dict[str, str], progress: ProgressFn | None = None) -> EvalReport:
        """The strategies `names` over the judged queries (each query run through the engine); `skipped`
        ({strategy: why}, from strategies()) goes into the report."""
        health = await self.engine.health(workspace)
        report = await evaluate(self.engine, queries, qrels, names, workspace, 100, doc_id_for=WorkspaceDocIds(qrels),
                                documents=health.files, progress=progress)
        report.skipped = skipped
        return report

    async def mark(self, workspace: str, question: str, item: ResultChunk, relevant: bool) -> None:
        path, symbol = label_key(item)
        await self.engine.record_label(workspace, question, path, symbol, relevant)

    async def grades(self, workspace: str, question: str) -> dict[tuple[str, str], int]:
        """{(path, symbol): grade} the engine holds for the question."""
        return await self.engine.labels_for(workspace, question)
