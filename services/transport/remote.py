"""A LocalEngine on a server (`knowledge-explorer serve`), behind the Engine protocol
(services.engine.protocol), as EngineProcess.

Workspaces are folders on the server's machine: each is registered on first use. Calls run a
blocking stdlib HTTP client (one keep-alive connection per thread) in worker threads, so they work
on any asyncio loop, qasync's too, and importing this module stays cheap (httpx alone costs 0.3 s). What the
server's engine says arrives as its server-sent events, each stream read in a thread of its own: an index run's
every progress event (…/index/events) and a watched folder's WatchEvents (…/watch/events), delivered on the
caller's loop as in-process; cancel as in-process. Light imports only (no torch, no chromadb, no watchdog):
the CLI's warm path starts in a fraction of a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from services.retrieval.multi import check_workspaces
from services.core import codec
from services.core.messages import DocumentRerankResponse, IndexStatus, Labels
from services.core.errors import (  # noqa: F401 (EngineUnreachable re-exported)
    EngineUnreachable, IndexRunning, KnowledgeError, Unauthorized, WorkspaceError, error_from,
)
from services.core.models import (
    WATCH_ERROR, FileAnswer, GotoAnswer, GraphAnswer, IndexHealth, IndexReport, MultiQueryResult, QueryOptions, QueryResult,
    StrategyInfo, WatchEvent,
)
from services.engine.protocol import ProgressCallback, WatchCallback
from services.transport.roots import record_owner_folder
from services.transport.routes import ROUTES, url

CANCEL_CHECK_SECONDS = 0.1  # how often a followed run looks at its (local) cancel event

class RemoteEngine:
    def __init__(self, url: str, *, token: str | None = None, data_dir: str | Path | None = None,
                 timeout: float = 120.0, settings=None) -> None:
        from services.core.settings import default_data_dir

        self.url = url.rstrip("/")
        self.settings = settings
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()  # local: labels live here
        self._http = Transport(self.url, token, timeout)
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="ke-remote")
        self._ids: dict[str, str] = {}
        self._watches: dict[str, EventStream] = {}  # workspace id -> its watch events, followed

    # --- plumbing ---
    def request(self, route: str, body=None, kind=None, query: dict | None = None, **path: str):
        """One blocking call of `route` (a name of services.transport.routes' table, `path` its path parameters,
        `query` its query string); returns the decoded `kind` (or the JSON); raises KnowledgeError subclasses."""
        try:
            status, data = self._http.send(ROUTES[route].method, url(route, query, **path), body)
        except (OSError, http.client.HTTPException) as error:
            raise EngineUnreachable(f"Cannot reach the engine at {self.url}: {error}") from None
        if status >= 400:
            raise _error(status, data)
        return codec.decode(kind, data) if kind is not None else data

    async def _call(self, route: str, body=None, kind=None, query: dict | None = None, **path: str):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: self.request(route, body, kind, query, **path))

    def workspace_id(self, workspace, opening: bool = False) -> str:
        """The server's id for a folder, registering it on first use (blocking). Only `opening` (an index run
        asked by the owner's own CLI, window or stdio MCP, through the server that owns its data dir) adds
        the folder to what the server may serve; a read (health, query, goto) registers only a folder the
        server already may serve (services.transport.registry), so it never widens the allow-list."""
        path = str(workspace)
        if path not in self._ids or opening:
            local = Path(path).expanduser()
            sent = str(local.resolve()) if local.exists() else path
            if opening and local.exists() and self._owns_data_dir():
                record_owner_folder(self.data_dir, sent)  # the owner's own index run: the server may serve it
            self._ids[path] = self.request("register", {"path": sent})["id"]
        return self._ids[path]

    def _owns_data_dir(self) -> bool:
        """Whether the server is the one that owns this client's data dir (the owner's own server)."""
        from services.storage.ownership import read_owner  # here, not at the top: only on a first registration

        owner = read_owner(self.data_dir)
        return owner is not None and (owner.url or "").rstrip("/") == self.url

    async def _workspace(self, workspace, opening: bool = False) -> str:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.workspace_id, workspace, opening)

    # --- the Engine protocol ---
    async def index(self, workspace: str | Path, *, full: bool = False,
                    progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> IndexReport:
        key = await self._workspace(workspace, opening=True)
        try:
            await self._call("start_index", {"full": full}, IndexStatus, workspace_id=key)
        except IndexRunning:  # follow the run already going on
            pass
        return await self._follow(key, progress, cancel)

    async def _follow(self, key: str, progress: ProgressCallback | None,
                      cancel: threading.Event | None) -> IndexReport:
        """Follow the run on …/index/events: every progress event reaches `progress` on this loop."""
        loop = asyncio.get_running_loop()
        statuses: list[IndexStatus] = []

        def seen(data: object) -> None:
            status = codec.decode(IndexStatus, data)
            if progress is not None and status.progress is not None and (
                    not statuses or status.progress != statuses[-1].progress):
                loop.call_soon_threadsafe(progress, status.progress)
            statuses.append(status)

        stream = EventStream(self._http, url("index_events", workspace_id=key), seen)
        ended = loop.run_in_executor(None, stream.read_all)
        cancelled = False
        while not ended.done():
            await asyncio.wait({ended}, timeout=CANCEL_CHECK_SECONDS)
            if cancel is not None and cancel.is_set() and not cancelled and not ended.done():
                cancelled = True
                await self._call("cancel_index", workspace_id=key)
        await ended  # raises EngineUnreachable when the stream broke; the progress calls ran before
        status = statuses[-1] if statuses else IndexStatus(key, "idle")
        if status.state == "running":
            raise EngineUnreachable(f"The engine at {self.url} stopped sending the index run's progress.")
        if status.state == "failed" or status.report is None:
            raise KnowledgeError(status.error or f"The index run ended as {status.state}.")
        return status.report

    async def health(self, workspace: str | Path) -> IndexHealth:
        """A folder the server cannot use is reported in `last_error`, not raised (as in-process)."""
        try:
            key = await self._workspace(workspace)
        except WorkspaceError as error:
            return IndexHealth(workspace=str(workspace), indexed=False, last_error=str(error))
        return await self._call("health", kind=IndexHealth, workspace_id=key)

    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        key = await self._workspace(options.workspace)
        body = codec.encode(options)
        body.pop("workspace")
        body["question"] = question
        return await self._call("query", body, QueryResult, workspace_id=key)

    async def query_many(self, question: str, workspaces: list[str], options: QueryOptions) -> MultiQueryResult:
        """Each folder is registered (as for query), then the server asks them all and merges."""
        keys = [await self._workspace(w) for w in check_workspaces(workspaces)]
        body = codec.encode(options)
        body.pop("workspace")
        body.update(question=question, workspaces=keys)
        return await self._call("query_many", body, MultiQueryResult)

    async def find_files(self, question: str, options: QueryOptions, max_files: int = 10,
                         before: int | None = None) -> FileAnswer:
        key = await self._workspace(options.workspace)
        body = codec.encode(options)
        body.pop("workspace")
        body.update(question=question, max_files=max_files, before=before)
        return await self._call("files", body, FileAnswer, workspace_id=key)

    async def symbol_names(self, workspace: str | Path) -> list[str]:
        key = await self._workspace(workspace)
        return await self._call("symbols", workspace_id=key)

    async def goto_symbols(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        return await self._goto("goto_symbols", query, workspace, limit)

    async def goto_files(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        return await self._goto("goto_files", query, workspace, limit)

    async def _goto(self, route: str, query: str, workspace, limit: int) -> GotoAnswer:
        key = await self._workspace(workspace)
        return await self._call(route, kind=GotoAnswer, query={"q": query, "limit": limit}, workspace_id=key)

    async def references(self, name_or_chunk: str, workspace: str | Path) -> GraphAnswer:
        return await self._graph("graph_references", name_or_chunk, workspace)

    async def uses(self, chunk: str, workspace: str | Path) -> GraphAnswer:
        return await self._graph("graph_uses", chunk, workspace)

    async def _graph(self, route: str, query: str, workspace) -> GraphAnswer:
        key = await self._workspace(workspace)
        return await self._call(route, kind=GraphAnswer, query={"q": query}, workspace_id=key)

    async def watch(self, workspace: str | Path, *, auto_reindex: bool = True,
                    on_event: WatchCallback | None = None) -> None:
        """The server watches the folder (on its machine) and keeps the index fresh; its WatchEvents reach
        `on_event` on this loop, from its …/watch/events stream (followed before the watch starts, so
        none is missed), until unwatch()."""
        key = await self._workspace(workspace)
        self._stop_following(key)
        if on_event is not None:
            self._watches[key] = await self._follow_watch(key, str(workspace), on_event)
        try:
            await self._call("watch", {"auto_reindex": auto_reindex}, workspace_id=key)
        except BaseException:
            self._stop_following(key)
            raise

    async def _follow_watch(self, key: str, workspace: str, on_event: WatchCallback) -> EventStream:
        loop = asyncio.get_running_loop()

        def deliver(event: WatchEvent) -> None:
            loop.call_soon_threadsafe(on_event, event)

        stream = EventStream(self._http, url("watch_events", workspace_id=key),
                             lambda data: deliver(codec.decode(WatchEvent, data)))
        await loop.run_in_executor(self._pool, stream.open)  # once open, the server is following for us

        def read() -> None:
            try:
                stream.read_all()
            except EngineUnreachable as error:
                if not stream.closed:
                    deliver(WatchEvent(WATCH_ERROR, workspace, message=f"{error} Its watch events no longer arrive."))
        threading.Thread(target=read, daemon=True, name=f"ke-remote-watch-{key}").start()
        return stream

    def _stop_following(self, key: str) -> None:
        stream = self._watches.pop(key, None)
        if stream is not None:
            stream.close()

    async def unwatch(self, workspace: str | Path) -> None:
        key = await self._workspace(workspace)
        self._stop_following(key)
        await self._call("unwatch", workspace_id=key)

    async def pause_watch(self, workspace: str | Path) -> None:
        key = await self._workspace(workspace)
        await self._call("pause_watch", workspace_id=key)

    async def rerank_documents(self, query: str, documents: list[str], strategy: str = "cross-encoder",
                               top_k: int | None = None) -> DocumentRerankResponse:
        body = {"query": query, "documents": list(documents), "strategy": strategy, "top_k": top_k}
        return await self._call("rerank", body, DocumentRerankResponse)

    async def strategies(self) -> list[StrategyInfo]:
        return await self._call("strategies", kind=list[StrategyInfo])

    async def warm_up(self) -> None:
        """The server loaded its models when it started: only check that it answers."""
        await self._call("server_health")

    async def record_label(self, workspace: str | Path, question: str, path: str, symbol: str,
                           relevant: bool) -> None:
        """Saved on the server, in its data dir, where its `tuned` strategy and evaluation read labels."""
        key = await self._workspace(workspace)
        body = {"question": question, "path": path, "symbol": symbol, "relevant": relevant}
        await self._call("record_label", body, workspace_id=key)

    async def labels_for(self, workspace: str | Path, question: str) -> dict[tuple[str, str], int]:
        key = await self._workspace(workspace)
        found = await self._call("labels_for", kind=Labels, query={"question": question}, workspace_id=key)
        return {(label.path, label.symbol): label.grade for label in found.labels}

    def ping(self, timeout: float = 1.0) -> bool:
        """Whether a server answers now (used to decide between warm and in-process); a 401 counts,
        so a missing token is reported as such instead of falling back to the owned data dir."""
        try:
            return Transport(self.url, None, timeout).send(ROUTES["server_health"].method, url("server_health"))[0] in (200, 401)
        except (OSError, http.client.HTTPException):
            return False

    def close(self) -> None:
        for key in list(self._watches):
            self._stop_following(key)
        self._pool.shutdown(wait=False, cancel_futures=True)


class Transport:
    """JSON over HTTP/1.1 with the stdlib: one keep-alive connection per thread, reconnect once."""

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise KnowledgeError(f"The engine URL {url!r} is not an http(s):// URL.")
        self.url = url
        self.https, self.host, self.port = parts.scheme == "https", parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        if getattr(self._local, "connection", None) is None:
            kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            self._local.connection = kind(self.host, self.port, timeout=self.timeout)
        return self._local.connection

    def send(self, method: str, path: str, body=None) -> tuple[int, object]:
        payload = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            connection = self._connection()
            try:
                connection.request(method, self.prefix + path, payload, self.headers)
                response = connection.getresponse()
                raw = response.read()
                break
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                connection.close()
                self._local.connection = None  # a stale keep-alive connection: reconnect once
                if attempt == 2:
                    raise
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, None

    def open_stream(self, path: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """A GET of a server-sent events stream on a connection of its own (no read timeout: the server
        sends a comment every 15 s); raises the engine's error for an error status."""
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        connection = kind(self.host, self.port, timeout=self.timeout)
        try:
            connection.request("GET", self.prefix + path, None, {**self.headers, "Accept": "text/event-stream"})
            response = connection.getresponse()
            if response.status >= 400:
                raw = response.read()
                raise _error(response.status, _json_or_none(raw))
            if connection.sock is not None:
                connection.sock.settimeout(None)
        except BaseException:
            connection.close()
            raise
        return connection, response


class EventStream:
    """One server-sent events stream: each `data:` line's JSON goes to `on_data`, in the reading thread."""

    def __init__(self, transport: Transport, path: str, on_data: Callable[[object], None]) -> None:
        self.transport, self.path, self.on_data = transport, path, on_data
        self.closed = False
        self._connection: http.client.HTTPConnection | None = None
        self._response: http.client.HTTPResponse | None = None

    def open(self) -> None:
        """Connect and read up to the first event or comment: the server follows the workspace by then."""
        try:
            self._connection, self._response = self.transport.open_stream(self.path)
        except (OSError, http.client.HTTPException) as error:
            raise EngineUnreachable(f"Cannot reach the engine at {self.transport.url}: {error}") from None
        self._read(first_only=True)

    def read_all(self) -> None:
        """Read until the server ends the stream (or close()); EngineUnreachable if the connection broke."""
        if self._response is None:
            self.open()
        try:
            self._read(first_only=False)
        finally:
            if self._connection is not None:
                self._connection.close()

    def _read(self, first_only: bool) -> None:
        response = self._response
        assert response is not None
        try:
            while not self.closed:
                line = response.readline()
                if not line:
                    return
                if line.startswith(b"data:"):
                    self.on_data(json.loads(line[5:]))
                if first_only and line.strip():
                    return
        except (OSError, ValueError, http.client.HTTPException) as error:
            if not self.closed:
                raise EngineUnreachable(f"Lost the engine's events at {self.transport.url}: {error}") from None

    def close(self) -> None:
        """Stop reading, from any thread: the reader sees the socket shut and closes the connection; the
        server notices and stops following."""
        self.closed = True
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)


def _json_or_none(raw: bytes) -> object:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _error(status: int, data) -> KnowledgeError:
    try:
        code, message = data["error"]["code"], data["error"]["message"]
    except (KeyError, TypeError):
        code, message = "http_error", f"The engine answered HTTP {status}."
    if status == 401:
        return Unauthorized("The engine refused the request: a valid token is required (--token-file).")
    return error_from(code, message)


def token_from(token_file: str | None) -> str | None:
    """The bearer token in `token_file` (or KE_TOKEN), if any."""
    if token_file:
        try:
            return Path(token_file).read_text().strip() or None
        except OSError as error:
            raise KnowledgeError(f"Cannot read the token file {token_file}: {error.strerror}.") from None
    return os.environ.get("KE_TOKEN") or None
