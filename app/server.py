"""`knowledge-explorer serve`: the engine as an HTTP service (FastAPI + uvicorn), MCP mounted at /mcp.

One process owns the data dir and keeps a LocalEngine warm. Here: the app, built from its parts (the guard,
app.guard; index runs and event streams, app.feeds; the handlers, app.handlers, registered from the route table,
services.transport.routes), and the server's start-up. Every handler calls the service's methods; bodies and responses are the dataclasses of services.core.models and services.core.messages
rendered by app.render through one codec (services.core.codec), as the CLI's --json and MCP render them.
Errors are JSON {"error": {"code", "message"}}, with the code and HTTP status of services.core.errors' table
(the remote client rebuilds the same error class from the code).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.feeds import IndexRuns, WatchFeeds
from app.guard import Guard, allowed_host_names, error_response, is_loopback
from app.handlers import (
    ClientGone, Handlers, Parts, health_routes, label_routes, navigation_routes, query_routes, workspace_routes,
)
from app.limits import check_known, describe
from app.mcp_server import build_mcp
from services.engine.protocol import ServedEngine
from services.transport.registry import WorkspaceRegistry
from services.transport.routes import ROUTES
from services.transport.roots import refusal
from services.core.errors import (
    HttpError, InternalError, InvalidRequest, KnowledgeError, MalformedJson, NotFound,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024


# --- the application ---
def build_app(service: ServedEngine, data_dir: str | Path, *, token: str | None = None,
              max_body: int = MAX_BODY_BYTES, warm: bool = True, mcp: bool = True, host: str = "127.0.0.1",
              allowed_roots: Sequence[str] = (), allowed_hosts: Sequence[str] = ()) -> FastAPI:
    """The HTTP app over `service` (a LocalEngine, held as what a server needs of it: ServedEngine). With
    `token`, every request needs it. `allowed_roots` (--allow-root) are folders whose subfolders may be registered, beside those the owner
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


def register_routes(router: APIRouter, written: Handlers) -> None:
    """Every route of ROUTES with its handler, in the table's order; a route without a handler, or a handler
    without a route, stops the server from being built."""
    if unmatched := sorted(written.keys() ^ ROUTES.keys()):
        raise RuntimeError(f"routes and handlers do not match: {', '.join(unmatched)}")
    for name, route in ROUTES.items():
        router.add_api_route(route.path, written[name], methods=[route.method], response_model=route.response,
                             status_code=route.status, summary=route.summary)


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
               ready=None, allowed_roots: Sequence[str] = (), allowed_hosts: Sequence[str] = ()) -> int:
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
