"""The workspace set's state and texts (Qt-free): a question asked over the open workspace and the
others the user ticked ("also search in"), answered as one merged ranking (MultiQueryResult)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from services.core.models import MultiQueryResult, QueryOptions, WorkspaceHit
from ui.viewmodels.ranking import lines_text

if TYPE_CHECKING:
    from services.engine.protocol import Engine


class WorkspaceSetViewModel:
    """Asks the engine over several workspaces; keeps the answer on screen and what it answers."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.result: MultiQueryResult | None = None
        self.asked: tuple | None = None  # (question, options, workspaces) of `result`

    def is_current(self, question: str, options: QueryOptions, workspaces: list[str]) -> bool:
        return self.asked == (question, options, tuple(workspaces))

    async def ask(self, question: str, options: QueryOptions, workspaces: list[str]) -> MultiQueryResult:
        result = await self.engine.query_many(question, workspaces, options)
        self.result, self.asked = result, (question, options, tuple(workspaces))
        return result


def others(current: str, known: list[str]) -> list[str]:
    """The workspaces that may be added to the open one: the known ones but it, each once."""
    return [p for p in dict.fromkeys(known) if p and Path(p) != Path(current or ".")]


def counted(n: int, noun: str) -> str:
    """"1 workspace", "3 workspaces"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def hit_row(hit: WorkspaceHit) -> tuple[str, str, str, str, str]:
    """#, workspace, evidence (the merged order's cosine; its rank and score there), location, symbol."""
    r = hit.result
    return (str(hit.rank), hit.name, f"{hit.evidence:.2f} (#{r.rank} there, {r.score:.3f})",
            f"{r.chunk.path}:{lines_text(r.chunk.start_line, r.chunk.end_line)}", r.chunk.qualified_name or r.chunk.symbol)


def summary_text(result: MultiQueryResult) -> str:
    counts = ", ".join(f"{Path(w).name} {n}" for w, n in result.searched.items())
    return (f"{len(result.results)} results for “{result.question}” with {result.strategy} over "
            f"{counted(len(result.workspaces), 'workspace')} ({counts}), merged by evidence")
