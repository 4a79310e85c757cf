"""The handlers of the REST routes, one function per area, each returning its handlers by name; app.server
registers them from the route table (services.transport.routes). Each route of an operation calls it
(app.operations)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import Body, Request
from fastapi.responses import JSONResponse, StreamingResponse

from app import operations
from app.feeds import IndexRuns, WatchFeeds
from app.limits import check_fields
from app.render import search_rerank_response, to_json
from services.engine.protocol import ServedEngine
from services.core.messages import (
    DocumentRerankRequest, IndexRequest, Label, LabelRequest, Labels, FilesRequest,
    MultiQueryRequest, QueryRequest, RerankingConfig, SearchRerankRequest, SearchRerankResponse, WatchRequest, Workspace, WorkspaceRequest,
)
from services.core.paths import confined
from services.transport.registry import WorkspaceRegistry
from services.core.errors import (
    QueryError,
)
from services.core.models import (
    GotoAnswer, GraphAnswer, IndexHealth, QueryOptions, StrategyInfo,
)



# --- the routes: their handlers, one function per area (each route of an operation calls it, app.operations),
# registered from the one table of routes (services.transport.routes) ---
Handlers = dict[str, Callable[..., Awaitable[Any]]]


def handlers(*functions: Callable[..., Awaitable[Any]]) -> Handlers:
    """An area's handlers by name: the name is their route's in ROUTES."""
    return {function.__name__: function for function in functions}


@dataclasses.dataclass
class Parts:
    """What the routes share: the engine, the registered workspaces, the index runs and watch feeds."""

    service: ServedEngine
    registry: WorkspaceRegistry
    runs: IndexRuns
    watch_feeds: WatchFeeds
    configs: dict[str, RerankingConfig] = dataclasses.field(default_factory=dict)  # per workspace id

    def workspace(self, workspace_id: str) -> Path:
        return self.registry.get(workspace_id)


def respond(value: Any, kind: Any = None, status: int = 200) -> JSONResponse:
    return JSONResponse(to_json(value, kind), status_code=status)


def health_routes(parts: Parts) -> Handlers:
    """Is the engine up; a workspace's index health."""
    service, registry = parts.service, parts.registry

    async def server_health() -> dict[str, Any]:
        return {"status": "ok", "model": service.settings.embedding_model, "workspaces": len(registry.all())}

    async def health(workspace_id: str) -> JSONResponse:
        return respond(await operations.index_status(service, parts.workspace, workspace_id), IndexHealth)

    return handlers(server_health, health)


def workspace_routes(parts: Parts) -> Handlers:
    """Registering folders, index runs (started, followed, cancelled) and watching."""
    service, registry, runs, watch_feeds, workspace = (parts.service, parts.registry, parts.runs, parts.watch_feeds,
                                                       parts.workspace)

    async def register(request: WorkspaceRequest) -> JSONResponse:
        key, root = registry.register(request.path)
        return respond(Workspace(key, str(root)), status=201)

    async def workspaces() -> JSONResponse:
        return respond([Workspace(k, v) for k, v in registry.all().items()], list[Workspace])

    # the reindex operation, run in the background: 202, followed with GET …/index or …/index/events
    async def start_index(workspace_id: str,
                          request: IndexRequest = Body(default_factory=IndexRequest)) -> JSONResponse:
        return respond(runs.start(workspace_id, workspace(workspace_id), request.full), status=202)

    async def index_status(workspace_id: str) -> JSONResponse:
        workspace(workspace_id)
        return respond(runs.get(workspace_id))

    async def index_events(workspace_id: str) -> StreamingResponse:
        workspace(workspace_id)
        return StreamingResponse(runs.events(workspace_id), media_type="text/event-stream")

    async def cancel_index(workspace_id: str) -> JSONResponse:
        workspace(workspace_id)
        return respond(runs.cancel(workspace_id))

    async def watch(workspace_id: str,
                    request: WatchRequest = Body(default_factory=WatchRequest)) -> dict[str, Any]:
        await service.watch(workspace(workspace_id), auto_reindex=request.auto_reindex,
                            on_event=lambda event: watch_feeds.publish(workspace_id, event))
        return {"watching": True, "auto_reindex": request.auto_reindex}

    async def watch_events(workspace_id: str) -> StreamingResponse:
        workspace(workspace_id)
        return StreamingResponse(watch_feeds.events(workspace_id), media_type="text/event-stream")

    async def unwatch(workspace_id: str) -> dict[str, Any]:
        await service.unwatch(workspace(workspace_id))
        return {"watching": False}

    async def pause_watch(workspace_id: str) -> dict[str, Any]:
        await service.pause_watch(workspace(workspace_id))
        return {"paused": True}

    return handlers(register, workspaces, start_index, index_status, index_events, cancel_index, watch, watch_events,
                    unwatch, pause_watch)


def query_routes(parts: Parts) -> Handlers:
    """Questions (one workspace, several, as files), the reranking strategies and the reranking spec's routes."""
    service, registry, configs, workspace = parts.service, parts.registry, parts.configs, parts.workspace

    async def query(workspace_id: str, request: QueryRequest) -> JSONResponse:
        root = workspace(workspace_id)  # an unknown id first (404), then the fields
        return respond(await operations.ask(service, lambda _: root, request, workspace=""))

    async def query_many(request: MultiQueryRequest) -> JSONResponse:
        roots = [str(registry.find(w)[1]) for w in request.workspaces]  # ids or folders, registered only
        return respond(await operations.search_many(service, request.question, roots, request))

    async def files(workspace_id: str, request: FilesRequest) -> JSONResponse:
        root = workspace(workspace_id)
        return respond(await operations.ask_files(service, lambda _: root, request, "", request.max_files))

    async def search_rerank(workspace_id: str, request: SearchRerankRequest) -> JSONResponse:
        root = workspace(workspace_id)
        config = configs.get(workspace_id, RerankingConfig())
        strategy = (request.strategy or config.strategy) if request.enable_reranking else "none"
        return respond(await search_and_rerank(service, root, request, strategy))

    async def configure(workspace_id: str, config: RerankingConfig) -> JSONResponse:
        root = workspace(workspace_id)
        known = [s.name for s in await service.strategies()]
        if config.strategy not in known:
            raise QueryError(f"Unknown strategy {config.strategy!r}. Known: {', '.join(known)}.")
        await asyncio.to_thread(service.configure_reranking, root, config.model_name, config.batch_size,
                                config.max_input_length, config.score_threshold)  # this workspace's only
        configs[workspace_id] = config
        return respond(config)

    async def reranking_config(workspace_id: str) -> JSONResponse:
        workspace(workspace_id)
        return respond(configs.get(workspace_id, RerankingConfig()))

    async def strategies() -> JSONResponse:
        return respond(await operations.list_strategies(service, workspace), list[StrategyInfo])

    async def rerank(request: DocumentRerankRequest, http: Request) -> JSONResponse:
        work = asyncio.ensure_future(service.rerank_documents(request.query, request.documents, request.strategy,
                                                              request.top_k))
        return respond(await unless_disconnected(http, work))

    return handlers(query, query_many, files, search_rerank, configure, reranking_config, strategies, rerank)


def navigation_routes(parts: Parts) -> Handlers:
    """Go to symbol / file, find references and uses, a workspace's names and files."""
    service, workspace = parts.service, parts.workspace

    async def symbols(workspace_id: str) -> list[str]:
        return await service.symbol_names(workspace(workspace_id))

    async def goto_symbols(workspace_id: str, q: str, limit: int = 20) -> JSONResponse:
        return respond(await operations.find_symbol(service, workspace, q, workspace_id, limit), GotoAnswer)

    async def goto_files(workspace_id: str, q: str, limit: int = 20) -> JSONResponse:
        return respond(await operations.find_file(service, workspace, q, workspace_id, limit), GotoAnswer)

    async def graph_references(workspace_id: str, q: str) -> JSONResponse:
        return respond(await operations.find_references(service, workspace, q, workspace_id), GraphAnswer)

    async def graph_uses(workspace_id: str, q: str) -> JSONResponse:
        return respond(await operations.find_uses(service, workspace, q, workspace_id), GraphAnswer)

    # REST sends the whole file as {path, text}; MCP's open_file sends a range of its lines
    async def read_file(workspace_id: str, path: str) -> dict[str, Any]:
        target = confined(workspace(workspace_id), path)
        return {"path": path, "text": await asyncio.to_thread(operations.workspace_text, target, path)}

    return handlers(symbols, goto_symbols, goto_files, graph_references, graph_uses, read_file)


def label_routes(parts: Parts) -> Handlers:
    """Relevance labels (what evaluation and `tuned` read)."""
    service, workspace = parts.service, parts.workspace

    async def record_label(workspace_id: str, request: LabelRequest) -> JSONResponse:
        root = workspace(workspace_id)
        check_fields(path=request.path, symbol=request.symbol)
        await service.record_label(root, request.question, request.path, request.symbol, request.relevant)
        return respond(await labels(root, request.question))

    async def labels_for(workspace_id: str, question: str) -> JSONResponse:
        check_fields(question=question)
        return respond(await labels(workspace(workspace_id), question))

    async def labels(root: Path, question: str) -> Labels:
        found = await service.labels_for(root, question)
        return Labels(question, [Label(path, symbol, grade) for (path, symbol), grade in found.items()])

    return handlers(record_label, labels_for)


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


async def unless_disconnected(request: Request, work: asyncio.Future, poll_seconds: float = 0.25):
    """The result of `work`; cancelled (and ClientGone raised) as soon as the client has left."""
    while True:
        done, _ = await asyncio.wait({work}, timeout=poll_seconds)
        if done:
            return work.result()
        if await request.is_disconnected():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            raise ClientGone()


async def search_and_rerank(service: ServedEngine, root: Path, request: SearchRerankRequest, strategy: str) -> SearchRerankResponse:
    """The spec's search-then-rerank response, from the pipeline's QueryResult."""
    options = QueryOptions(workspace=str(root), top_k=request.final_top_k, strategy=strategy,
                           min_relevance=request.min_relevance, expand_context=False, pool=request.initial_top_k)
    result = await service.query(request.query_text, options)
    return search_rerank_response(result, service.model_name(strategy, root), strategy)
