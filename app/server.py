"""`knowledge-explorer serve`: the engine as an HTTP service (FastAPI + uvicorn), MCP mounted at /mcp.

One process owns the data dir and keeps a LocalEngine warm. Every handler calls the service's
methods; bodies and responses are the dataclasses of services.core.models and services.core.messages
rendered by app.render through one codec (services.core.codec), as the CLI's --json and MCP render them.
Errors are JSON {"error": {"code", "message"}}, with the code and HTTP status of services.core.errors' table
(the remote client rebuilds the same error class from the code).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import ipaddress
import json
import logging
import threading
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Body, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import operations
from app.limits import check_fields, check_known, describe
from app.mcp_server import build_mcp
from app.render import search_rerank_response, to_json
from services.core.messages import (
    DocumentRerankRequest, IndexRequest, IndexStatus, Label, LabelRequest, Labels,
    FilesRequest, MultiQueryRequest, QueryRequest, RerankingConfig, SearchRerankRequest, SearchRerankResponse, WatchRequest, Workspace,
    WorkspaceRequest,
)
from services.core import files
from services.transport.paths import confined
from services.transport.registry import WorkspaceRegistry
from services.transport.routes import ROUTES
from services.transport.roots import refusal
from services.core.errors import (
    BodyTooLarge, HttpError, IndexRunning, InternalError, InvalidRequest, KnowledgeError, MalformedJson, NotFound,
    QueryError, Unauthorized,
)
from services.core.models import (
    GotoAnswer, GraphAnswer, IndexHealth, QueryOptions, StrategyInfo, WatchEvent,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024


def error_response(error: KnowledgeError, status: int | None = None) -> JSONResponse:
    """{"error": {"code", "message"}} with the error's code and HTTP status (services.core.errors). A message
    quoting a path that is not valid UTF-8 shows its odd characters escaped."""
    message = str(error).encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": {"code": error.code, "message": message}}, status_code=status or error.status)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- guards, in front of every route (the MCP endpoint too) ---
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")


def host_name(value: str) -> str:
    """The name in a Host header or URL authority, without the port: "[::1]:8765" -> "::1"."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_host_names(host: str, extra: list[str] = ()) -> set[str] | None:
    """The Host names the server answers to: the loopback names, the bound address (unless a wildcard one)
    and `extra` (--allowed-host); None when `extra` holds "*" (no check)."""
    if "*" in extra:
        return None
    names = set(LOOPBACK_NAMES) | {host_name(h) for h in extra}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host_name(host) if not host.count(":") > 1 else host.lower())
    return names


class Guard:
    """Pure ASGI middleware: 401 without the bearer token; 400 for a Host header the server does not answer
    to (DNS rebinding); 403 for a request from another site's page (its Origin); 415 for a state-changing
    request whose body is not JSON (what a cross-site form or `text/plain` fetch sends); 413 for bodies
    over `max_body` bytes."""

    def __init__(self, app, token: str | None, max_body: int, hosts: set[str] | None = None) -> None:
        self.app, self.token, self.max_body, self.hosts = app, token, max_body, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        refused = self._refusal(scope, headers)
        if refused is not None:
            return await refused(scope, receive, send)
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await self._too_large(scope, receive, send)
        body, more = [], True
        size = 0
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.append(message.get("body", b""))
            size += len(body[-1])
            more = message.get("more_body", False)
            if size > self.max_body:
                return await self._too_large(scope, receive, send)
        if size and scope["method"] in STATE_CHANGING and b"content-type" not in headers:
            return await self._not_json(scope, receive, send)
        replay = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        return await self.app(scope, replayed, send)

    def _refusal(self, scope, headers: dict) -> JSONResponse | None:
        """The response refusing the request from its headers alone, or None."""
        if self.token is not None and not self._authorised(headers):
            return error_response(Unauthorized("A valid bearer token is required."))
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._answers_to(host, any_address=True):
            return error_response(HttpError(f"This server does not answer to the host name {host!r} (DNS "
                                            "rebinding protection); start it with --allowed-host NAME to add one."),
                                  400)
        origin = headers.get(b"origin")
        if origin is not None and not self._answers_to(urlsplit(origin.decode("latin-1")).netloc):
            return error_response(HttpError("Requests from other sites' pages are refused."), 403)
        content_type = headers.get(b"content-type")
        if scope["method"] in STATE_CHANGING and content_type is not None and not is_json(content_type):
            return error_response(HttpError(NOT_JSON), 415)
        return None

    def _answers_to(self, authority: str, any_address: bool = False) -> bool:
        """A Host (or Origin authority) this server answers to: a listed name, a loopback address, or (for
        the Host header) any address: DNS rebinding needs a name, an address cannot be rebound."""
        name = host_name(authority)
        if self.hosts is None or name in self.hosts or is_loopback(name):
            return True
        return any_address and is_address(name)

    async def _not_json(self, scope, receive, send):
        return await error_response(HttpError(NOT_JSON), 415)(scope, receive, send)

    def _authorised(self, headers: dict) -> bool:
        value = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, given = value.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    async def _too_large(self, scope, receive, send):
        message = f"The request body is larger than {self.max_body} bytes."
        return await error_response(BodyTooLarge(message))(scope, receive, send)


NOT_JSON = "The request body must be JSON (Content-Type: application/json)."


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_json(content_type: bytes) -> bool:
    media = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


# --- index runs, one per workspace at a time ---
HEARTBEAT_SECONDS = 15  # an event stream says ": still here" this often while nothing happens


class Feeds:
    """Server-sent event streams: every client following a workspace gets each of its messages, in order."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue]] = {}

    def publish(self, key: str, message: object) -> None:
        """Queue `message` for every follower of `key` (on the server's loop)."""
        for queue in self._queues.get(key, ()):
            queue.put_nowait(message)

    @contextlib.contextmanager
    def following(self, key: str):
        queue: asyncio.Queue = asyncio.Queue()
        self._queues.setdefault(key, set()).add(queue)
        try:
            yield queue
        finally:
            self._queues[key].discard(queue)

    async def next(self, queue: asyncio.Queue) -> object | None:
        """The next message, or None after HEARTBEAT_SECONDS without one."""
        try:
            return await asyncio.wait_for(queue.get(), timeout=HEARTBEAT_SECONDS)
        except asyncio.TimeoutError:
            return None


def sse(value: object, kind: object = None) -> str:
    return f"data: {json.dumps(to_json(value, kind))}\n\n"


class IndexRuns:
    """Index runs started over the API: status for polling, every change as server-sent events, cancel."""

    def __init__(self, service) -> None:
        self.service = service
        self.status: dict[str, IndexStatus] = {}
        self._cancels: dict[str, threading.Event] = {}
        self._feeds = Feeds()
        self._tasks: set = set()

    def get(self, key: str) -> IndexStatus:
        return self.status.get(key) or IndexStatus(key, "idle")

    def start(self, key: str, root: Path, full: bool) -> IndexStatus:
        if self.get(key).state == "running":
            raise IndexRunning("An index run is already going on for this workspace; cancel it or wait.")
        self._cancels[key] = threading.Event()
        self._set(key, IndexStatus(key, "running", started_at=now_iso()))
        task = asyncio.ensure_future(self._run(key, root, full))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return self.get(key)

    async def _run(self, key: str, root: Path, full: bool) -> None:
        try:
            report = await self.service.index(root, full=full, cancel=self._cancels[key],
                                              progress=lambda event: self._set(key, replace(self.get(key), progress=event)))
            state = "cancelled" if report.cancelled else "done"
            self._set(key, replace(self.get(key), state=state, report=report, finished_at=now_iso()))
        except Exception as error:  # reported in the status; details in the log
            log.warning("index run for %s failed", root, exc_info=not isinstance(error, KnowledgeError))
            message = str(error) if isinstance(error, KnowledgeError) else f"{type(error).__name__}: {error}"
            self._set(key, replace(self.get(key), state="failed", error=message, finished_at=now_iso()))

    def cancel(self, key: str) -> IndexStatus:
        if key in self._cancels and self.get(key).state == "running":
            self._cancels[key].set()
        return self.get(key)

    def _set(self, key: str, status: IndexStatus) -> None:
        """On the server's loop (the service delivers progress there)."""
        self.status[key] = status
        self._feeds.publish(key, status)

    async def events(self, key: str):
        """Server-sent events: the status now, then every change (each progress event), until the run ends."""
        with self._feeds.following(key) as queue:
            status: object | None = self.get(key)
            while True:
                if isinstance(status, IndexStatus):
                    yield sse(status)
                    if status.state != "running":
                        return
                else:
                    yield ": still here\n\n"
                status = await self._feeds.next(queue)

    def cancel_all(self) -> None:
        for event in self._cancels.values():
            event.set()


class WatchFeeds(Feeds):
    """The watch events of the folders the server watches, streamed to the clients following them."""

    async def events(self, key: str):
        """Server-sent events: a first comment once following (a client then asks to watch and misses
        nothing), then every WatchEvent of the workspace until the client leaves."""
        with self.following(key) as queue:
            yield ": following\n\n"
            while True:
                event = await self.next(queue)
                yield ": still here\n\n" if event is None else sse(event, WatchEvent)


# --- the application ---
def build_app(service, data_dir: str | Path, *, token: str | None = None, max_body: int = MAX_BODY_BYTES,
              warm: bool = True, mcp: bool = True, host: str = "127.0.0.1", allowed_roots: list[str] = (),
              allowed_hosts: list[str] = ()) -> FastAPI:
    """The HTTP app over `service` (a LocalEngine). With `token`, every request needs it.
    `allowed_roots` (--allow-root) are folders whose subfolders may be registered, beside those the owner
    opened itself; every route answers only Host names of `host` (the bound address), the loopback names
    and `allowed_hosts` (DNS rebinding)."""
    registry = WorkspaceRegistry(Path(data_dir), allowed_roots)
    runs = IndexRuns(service)
    watch_feeds = WatchFeeds()
    mcp_server = None
    if mcp:
        mcp_server = build_mcp(service, registry)
        unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # the Guard checks every route
        mcp_routes = mcp_server.streamable_http_app(streamable_http_path="/mcp", host=host,
                                                    transport_security=unchecked).routes

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        if warm:
            await service.warm_up()
        async with (mcp_server.session_manager.run() if mcp_server else contextlib.nullcontext()):
            yield
        runs.cancel_all()

    app = FastAPI(title="Knowledge Explorer engine", version="1", lifespan=lifespan,
                  dependencies=[Depends(known_query)],
                  description="Index a codebase, ask questions, compare reranking strategies. Errors are "
                              '`{"error": {"code", "message"}}`.')
    app.state.service, app.state.registry, app.state.runs = service, registry, runs
    install_error_handlers(app)
    parts = Parts(service, registry, runs, watch_feeds)
    written: Handlers = {}
    for area in (health_routes, workspace_routes, query_routes, navigation_routes, label_routes):
        written |= area(parts)
    register_routes(app.router, written)  # on the app's own router: flat routes that FastAPI and the guards read alike
    if mcp_server is not None:
        app.router.routes.extend(mcp_routes)
    app.add_middleware(Guard, token=token, max_body=max_body, hosts=allowed_host_names(host, allowed_hosts))
    return app


# --- the routes: their handlers, one function per area (each route of an operation calls it, app.operations),
# registered from the one table of routes (services.transport.routes) ---
Handlers = dict[str, Callable[..., Awaitable[Any]]]


def handlers(*functions: Callable[..., Awaitable[Any]]) -> Handlers:
    """An area's handlers by name: the name is their route's in ROUTES."""
    return {function.__name__: function for function in functions}


def register_routes(router: APIRouter, written: Handlers) -> None:
    """Every route of ROUTES with its handler, in the table's order; a route without a handler, or a handler
    without a route, stops the server from being built."""
    if unmatched := sorted(written.keys() ^ ROUTES.keys()):
        raise RuntimeError(f"routes and handlers do not match: {', '.join(unmatched)}")
    for name, route in ROUTES.items():
        router.add_api_route(route.path, written[name], methods=[route.method], response_model=route.response,
                             status_code=route.status, summary=route.summary)


@dataclasses.dataclass
class Parts:
    """What the routes share: the engine, the registered workspaces, the index runs and watch feeds."""

    service: Any
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
        return respond(await operations.search(service, lambda _: root, workspace="", **query_fields(request)))

    async def query_many(request: MultiQueryRequest) -> JSONResponse:
        roots = [str(registry.find(w)[1]) for w in request.workspaces]  # ids or folders, registered only
        check_fields(languages=request.languages, path_glob=request.path_glob)
        return respond(await operations.search_many(service, request.question, roots, request))

    async def files(workspace_id: str, request: FilesRequest) -> JSONResponse:
        root = workspace(workspace_id)
        return respond(await operations.find_files(service, lambda _: root, workspace="", **query_fields(request),
                                                   max_files=request.max_files))

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


def query_fields(request: QueryRequest) -> dict:
    """A REST query body as the search operation's arguments (the workspace is in the URL)."""
    return {"question": request.question, "top_k": request.top_k, "strategy": request.strategy,
            "languages": list(request.languages), "path_glob": request.path_glob,
            "min_relevance": request.min_relevance, "context_lines": request.context_lines,
            "expand_context": request.expand_context, "use_cache": request.use_cache, "before": request.before}


def accepted(route: APIRoute) -> tuple[set[str], set[str]]:
    """(query parameters, body fields) a route takes by name."""
    body: set[str] = set()
    for param in route.dependant.body_params:  # a dataclass of services.core.messages
        kind = param.field_info.annotation
        body |= {f.name for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind) else {param.alias}
    return {p.alias for p in route.dependant.query_params}, body


async def known_query(request: Request) -> None:
    """Every route refuses a query parameter it does not take (`?topk=3`), naming the nearest it takes."""
    route = request.scope.get("route")
    if isinstance(route, APIRoute):
        check_known(request.query_params.keys(), accepted(route)[0])


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


async def search_and_rerank(service, root: Path, request: SearchRerankRequest, strategy: str) -> SearchRerankResponse:
    """The spec's search-then-rerank response, from the pipeline's QueryResult."""
    options = QueryOptions(workspace=str(root), top_k=request.final_top_k, strategy=strategy,
                           min_relevance=request.min_relevance, expand_context=False)
    result = await service.query(request.query_text, options)
    return search_rerank_response(result, service.model_name(strategy, root), strategy)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(KnowledgeError)
    async def knowledge_error(_request: Request, error: KnowledgeError):
        return error_response(error)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        problems = error.errors()
        if any(p.get("type") == "json_invalid" for p in problems):
            return error_response(MalformedJson("The request body is not valid JSON."))
        route = request.scope.get("route")
        known = accepted(route)[1] if isinstance(route, APIRoute) else set()
        return error_response(InvalidRequest("; ".join(describe(p, known) for p in problems[:5])))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, error: StarletteHTTPException):
        if error.status_code == 404:
            return error_response(NotFound(str(error.detail)))
        return error_response(HttpError(str(error.detail)), error.status_code)

    @app.exception_handler(ClientGone)
    async def client_gone(_request: Request, _error: ClientGone):
        log.info("the client left before its answer was ready; the work was cancelled")
        return error_response(HttpError("The client closed the connection."), 499)

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, error: Exception):
        log.error("unexpected error", exc_info=error)
        return error_response(InternalError("The engine failed on this request; see the server log."))


# --- `knowledge-explorer serve` ---
def read_token(token_file: str | None) -> str | None:
    from services.transport.remote import token_from

    token = token_from(token_file)
    if token is not None and len(token) < 16:
        raise KnowledgeError("The token is too short (use at least 16 characters).")
    return token


def run_server(service_kwargs: dict, host: str, port: int, token_file: str | None,
               ready=None, allowed_roots: list[str] = (), allowed_hosts: list[str] = ()) -> int:
    """Own the data dir, load the model, serve until interrupted. `ready(url)` is called once listening.
    `allowed_roots`: folders (with their subfolders) clients may register beside the owner's own;
    `allowed_hosts`: Host names to answer to beside the loopback names and `host`."""
    import uvicorn

    from services.engine.service import LocalEngine
    from services.core.settings import default_data_dir

    token = read_token(token_file)
    if not is_loopback(host) and token is None:
        raise KnowledgeError(f"Refusing to serve on {host} without a token: pass --token-file FILE "
                             "(or bind 127.0.0.1).")
    data_dir = Path(service_kwargs.get("data_dir") or default_data_dir())
    for folder in allowed_roots:
        check_allowed_root(Path(folder).expanduser())
    service = LocalEngine(**{**service_kwargs, "data_dir": data_dir}, kind="server")
    try:
        service.owner_lock.require()  # IndexBusyError naming the owner when another process has the data dir
        app = build_app(service, data_dir, token=token, host=host, allowed_roots=allowed_roots,
                        allowed_hosts=allowed_hosts)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                               timeout_graceful_shutdown=5))
        asyncio.run(_serve(server, host, service, ready))
    finally:
        service.close()  # gives up the data dir
    return 0


def check_allowed_root(folder: Path) -> None:
    """A `--allow-root` must be a folder that may be served (not `/`, the home folder or a system folder)."""
    if not folder.is_dir():
        raise KnowledgeError(f"--allow-root {folder}: not a folder.")
    reason = refusal(folder.resolve())
    if reason is not None:
        raise KnowledgeError(f"--allow-root {folder}: refused, {reason}. Allow a project folder, or a folder "
                             "holding projects.")


async def _serve(server, host: str, service, ready) -> None:
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        if task.done():
            task.result()  # raises the bind error
            raise KnowledgeError("The server stopped while starting.")
        await asyncio.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"
    await service.set_owner_url(url)
    print(f"Knowledge Explorer engine serving on {url} (docs at {url}/docs, MCP at {url}/mcp)", flush=True)
    if ready is not None:
        ready(url)
    await task
