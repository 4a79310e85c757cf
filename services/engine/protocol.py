"""The one Engine API: what the in-process service, the engine process and the remote client all offer.

LocalEngine (services.engine.service), EngineProcess (services.transport.engine_process) and
RemoteEngine (services.transport.remote) implement every method with the same name and signature
(tests/contract checks it, and runs one suite against all three). Errors are the classes of
services.core.errors, whichever way the call travelled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from services.core.messages import DocumentRerankResponse
from services.core.models import (
    FileAnswer, GotoAnswer, GraphAnswer, IndexHealth, IndexReport, MultiQueryResult, ProgressEvent, QueryOptions, QueryResult,
    StrategyInfo, WatchEvent,
)

if TYPE_CHECKING:  # what the server holds beside the protocol (ServedEngine), not imported at run time
    from services.core.settings import Settings
    from services.storage.ownership import OwnerLock

ProgressCallback = Callable[[ProgressEvent], None]
WatchCallback = Callable[[WatchEvent], None]


class Indexing(Protocol):
    """Index folders and keep their indexes fresh."""

    async def index(self, workspace: str | Path, *, full: bool = False,
                    progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> IndexReport:
        """Index the workspace (incrementally, or all of it with full=True); set `cancel` to stop."""

    async def health(self, workspace: str | Path) -> IndexHealth:
        """The index's state; a missing folder is reported in `last_error`, not raised."""

    async def watch(self, workspace: str | Path, *, auto_reindex: bool = True,
                    on_event: WatchCallback | None = None) -> None:
        """Keep watching the folder until unwatch()/close(); changes are indexed or reported as stale."""

    async def unwatch(self, workspace: str | Path) -> None:
        """Stop watching the folder."""

    async def pause_watch(self, workspace: str | Path) -> None:
        """Cancel the automatic run under way and start none until a user's index() run finishes;
        changes meanwhile are reported as stale, never lost."""


class Searching(Protocol):
    """Ask questions, go to names and files, follow references, rank documents."""

    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        """Both rankings (vector order and reranked) for a question."""

    async def query_many(self, question: str, workspaces: list[str], options: QueryOptions) -> MultiQueryResult:
        """The question over each workspace (options.workspace is ignored), their results merged by
        evidence (the question's cosine: services.retrieval.multi) and labelled with their workspace."""

    async def find_files(self, question: str, options: QueryOptions, max_files: int = 10,
                         before: int | None = None) -> FileAnswer:
        """The question answered as ranked files, each with its best chunks and the signals that rank it;
        history ignores commits at or after `before` (unix time)."""

    async def symbol_names(self, workspace: str | Path) -> list[str]:
        """Every symbol name in the workspace's index."""

    async def goto_symbols(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        """Go to symbol: the definitions whose names fuzzily match `query` (`fm` finds FixtureManager,
        `Class.method` a method), best first (services.retrieval.goto)."""

    async def goto_files(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        """Go to file: the indexed files whose paths fuzzily match `query`, best first; `latex.py:120`
        opens at line 120."""

    async def references(self, name_or_chunk: str, workspace: str | Path) -> GraphAnswer:
        """Find references, "who uses this": every use of a definition (a name, `Class.method`, or a chunk
        id) with its path, line and enclosing chunk, grouped by file (services.retrieval.graph)."""

    async def uses(self, chunk: str, workspace: str | Path) -> GraphAnswer:
        """"What does it use": the definitions a chunk's code (a chunk id, or a definition's name) uses,
        grouped by the file defining them, with the lines that use each."""

    async def rerank_documents(self, query: str, documents: list[str], strategy: str = "cross-encoder",
                               top_k: int | None = None) -> DocumentRerankResponse:
        """Score arbitrary documents for a query with a strategy."""

    async def strategies(self) -> list[StrategyInfo]:
        """Every reranking strategy, with whether it can run now and why not."""

    async def warm_up(self) -> None:
        """Load the models ahead of the first query."""


class Labelling(Protocol):
    """Record and read relevance labels (what evaluation and `tuned` read)."""

    async def record_label(self, workspace: str | Path, question: str, path: str, symbol: str,
                           relevant: bool) -> None:
        """Label (path, symbol) relevant or not for a question, where evaluation and `tuned` read it."""

    async def labels_for(self, workspace: str | Path, question: str) -> dict[tuple[str, str], int]:
        """{(path, symbol): grade} labelled so far for a question (1 relevant, 0 not)."""


@runtime_checkable
class Engine(Indexing, Searching, Labelling, Protocol):
    """Index folders, ask questions, keep indexes fresh, record relevance labels: the sum of the three roles,
    what every face and the window hold."""

    def close(self) -> None:
        """Stop watching and background work, give up the data dir. Safe to call twice."""


def engine_methods() -> dict[str, Callable]:
    """The Engine protocol's methods by name, its roles' included, in the order they are declared."""
    found: dict[str, Callable] = {}
    for role in (Indexing, Searching, Labelling, Engine):
        found |= {name: member for name, member in vars(role).items()
                  if callable(member) and not name.startswith("_")}
    return found


class ServedEngine(Engine, Protocol):
    """What `knowledge-explorer serve` holds beyond the Engine (a LocalEngine, owning its data dir): its
    settings and owner lock, the reranking spec's configuration, and the URL it publishes."""

    settings: Settings
    owner_lock: OwnerLock

    def model_name(self, strategy: str, workspace: str | Path | None = None) -> str:
        """The model a strategy runs with for a workspace (the reranking spec's `model`)."""

    def configure_reranking(self, workspace: str | Path, model_name: str | None = None, batch_size: int | None = None,
                            max_input_length: int | None = None, score_threshold: float | None = None) -> None:
        """The reranking spec's configuration, for one workspace."""

    async def set_owner_url(self, url: str | None) -> None:
        """Publish the loopback URL of a server fronting this engine in its data dir's owner file."""
