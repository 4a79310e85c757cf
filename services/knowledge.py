"""KnowledgeService: the engine's one public entry point (async, Qt-free).

The UI and the CLI use only this class and the types in services.models.
Long work runs in worker threads; progress callbacks are delivered on the caller's event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from services.models import (
    IndexHealth, IndexReport, ProgressEvent, QueryOptions, QueryResult, RelevantFile, StrategyInfo,
)
from services.settings import Settings

ProgressCallback = Callable[[ProgressEvent], None]


class KnowledgeService:
    def __init__(self, settings: Settings | None = None, *, data_dir: str | Path | None = None,
                 chroma_url: str | None = None) -> None:
        raise NotImplementedError

    # --- indexing ---
    async def index(self, workspace: str | Path, *, full: bool = False,
                    progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> IndexReport:
        """Index (incrementally, or fully with full=True). Set `cancel` to stop; the index stays consistent."""
        raise NotImplementedError

    async def health(self, workspace: str | Path) -> IndexHealth:
        raise NotImplementedError

    async def is_indexed(self, workspace: str | Path) -> bool:
        raise NotImplementedError

    # --- querying ---
    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        """Raises QueryError (bad input), IndexMissingError, ModelLoadError."""
        raise NotImplementedError

    def strategies(self) -> list[StrategyInfo]:
        raise NotImplementedError

    async def relevant_files(self, question: str, workspace: str | Path,
                             max_files: int = 10) -> list[RelevantFile]:
        raise NotImplementedError

    async def build_context(self, question: str, options: QueryOptions, token_budget: int = 2000) -> str:
        raise NotImplementedError

    async def suggestions(self, prefix: str, workspace: str | Path, limit: int = 10) -> list[str]:
        raise NotImplementedError

    async def symbol_names(self, workspace: str | Path) -> list[str]:
        raise NotImplementedError

    async def warm_up(self) -> None:
        """Load the embedding model (and any model-backed strategy) ahead of the first query."""
        raise NotImplementedError

    def close(self) -> None:
        """Shut down worker threads. Safe to call twice."""
        raise NotImplementedError
