"""LocalEngine in a child process, behind the same async API.

ChromaDB's native calls and parts of model loading hold Python's GIL for up to a second, and in
one process that freezes a GUI no matter how the work is threaded. The desktop app therefore
talks to an engine process: `EngineProcess` implements the Engine protocol (services.engine.protocol)
by sending each call down a pipe to a LocalEngine, and awaits the answer; progress events and errors come back the same way.
Its methods are made from the protocol (forwarder), so they cannot drift from it; index and watching,
which send progress, cancels and events across the pipe, are written out.
Waiting on the pipe releases the GIL, so the GUI process stays responsive.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import multiprocessing
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.core.errors import EngineStopped, KnowledgeError
from services.core.settings import default_data_dir
from services.core.models import IndexReport
from services.engine.protocol import Engine, ProgressCallback, WatchCallback, engine_methods

CLOSE, CANCEL = "__close__", "__cancel__"
CANCEL_POLL_SECONDS = 0.1


class EngineProcess:
    """A LocalEngine running in a child process (spawned, so no state is shared)."""

    def __init__(self, settings=None, *, data_dir: str | Path | None = None,
                 chroma_url: str | None = None, kind: str = "gui") -> None:
        self.settings = settings
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        self.chroma_url = chroma_url
        self.kind = kind  # recorded as the data dir's owner (services.storage.ownership)
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple] = {}  # id -> (loop, future, progress callback)
        self._watchers: dict[str, tuple] = {}  # workspace as passed to watch() -> (loop, callback)
        self._lock = threading.Lock()
        self._process = None
        self._conn = None

    # --- the child's life ---
    def _ensure_started(self) -> None:
        with self._lock:
            if self._process is not None and self._process.is_alive() and self._conn is not None:
                return
            if self._process is not None:  # dead, or its pipe broke: make sure it is gone
                self._process.kill()
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            kwargs = {"settings": self.settings, "data_dir": self.data_dir, "chroma_url": self.chroma_url,
                      "kind": self.kind}
            self._process = context.Process(target=serve, args=(child, kwargs), daemon=True,
                                            name="knowledge-engine")
            self._process.start()
            child.close()
            self._conn = parent
            threading.Thread(target=self._read, args=(parent,), daemon=True, name="engine-reader").start()

    def _read(self, conn) -> None:
        while True:
            try:
                call_id, kind, payload = conn.recv()
            except (EOFError, OSError):
                with self._lock:
                    if self._conn is conn:
                        self._conn = None  # the next call starts a new engine
                self._fail_all(EngineStopped("The engine process stopped unexpectedly; it restarts on the "
                                             "next request."))
                return
            self._deliver(call_id, kind, payload)

    def _deliver(self, call_id: int, kind: str, payload) -> None:
        if kind == "event":  # from a watched workspace: (workspace, WatchEvent)
            with self._lock:
                loop, callback = self._watchers.get(payload[0], (None, None))
            if callback is not None:
                loop.call_soon_threadsafe(callback, payload[1])
            return
        with self._lock:
            entry = self._pending.get(call_id) if kind == "progress" else self._pending.pop(call_id, None)
        if entry is None:
            return
        loop, future, progress = entry
        if kind == "progress":
            if progress is not None:
                loop.call_soon_threadsafe(progress, payload)
        elif kind == "ok":
            loop.call_soon_threadsafe(_settle, future, payload, None)
        else:
            loop.call_soon_threadsafe(_settle, future, None, payload)

    def _fail_all(self, error: Exception) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
        for loop, future, _ in pending.values():
            loop.call_soon_threadsafe(_settle, future, None, error)

    def _send(self, message) -> None:
        with self._lock:
            self._conn.send(message)

    async def _call(self, method: str, *args, progress=None, cancel: threading.Event | None = None, **kwargs):
        self._ensure_started()
        loop = asyncio.get_running_loop()
        call_id, future = next(self._ids), loop.create_future()
        with self._lock:
            self._pending[call_id] = (loop, future, progress)
        try:
            self._send((call_id, method, args, kwargs))
        except (OSError, AttributeError):  # the engine died before the reader noticed: start anew
            with self._lock:
                self._conn = None
            self._ensure_started()
            self._send((call_id, method, args, kwargs))
        try:
            if cancel is None:
                return await future
            return await self._await_cancellable(call_id, future, cancel)
        finally:
            with self._lock:
                self._pending.pop(call_id, None)

    async def _await_cancellable(self, call_id: int, future, cancel: threading.Event):
        sent = False
        while True:
            done, _ = await asyncio.wait({future}, timeout=CANCEL_POLL_SECONDS)
            if done:
                return future.result()
            if cancel.is_set() and not sent:
                self._send((call_id, CANCEL, (), {}))
                sent = True

    # --- the Engine protocol: index and watching below, every other method forwarded (forwarder) ---
    if TYPE_CHECKING:  # the forwarders are set on the class from the protocol, after it
        def __getattr__(self, name: str) -> Callable[..., Coroutine[Any, Any, Any]]: ...

    async def index(self, workspace: str | Path, *, full: bool = False,
                    progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> IndexReport:
        return await self._call("index", str(workspace), full=full, progress=progress,
                                cancel=cancel or threading.Event())

    async def watch(self, workspace: str | Path, *, auto_reindex: bool = True,
                    on_event: WatchCallback | None = None) -> None:
        """Events of the watched workspace come back over the pipe and are delivered on this loop."""
        with self._lock:
            self._watchers[str(workspace)] = (asyncio.get_running_loop(), on_event)
        try:
            await self._call("watch", str(workspace), auto_reindex=auto_reindex)
        except BaseException:
            with self._lock:
                self._watchers.pop(str(workspace), None)
            raise

    async def unwatch(self, workspace: str | Path) -> None:
        with self._lock:
            self._watchers.pop(str(workspace), None)
        await self._call("unwatch", str(workspace))

    def close(self) -> None:
        with self._lock:
            process, conn = self._process, self._conn
            self._process = None
        if process is None:
            return
        try:
            conn.send((0, CLOSE, (), {}))
        except (OSError, AttributeError):  # already gone
            pass
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()
            process.join(timeout=5)
        if conn is not None:
            conn.close()


def forwarder(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """EngineProcess's method `name` of the Engine protocol: the arguments bound to the protocol's signature
    (its defaults filled in), workspaces and documents as plain values for the pipe, sent to the child."""
    signature = inspect.signature(getattr(Engine, name))

    async def forward(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for parameter, plain in PLAIN.items():
            if parameter in bound.arguments:
                bound.arguments[parameter] = plain(bound.arguments[parameter])
        return await self._call(name, *bound.args[1:], **bound.kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = getattr(Engine, name).__doc__
    forward.__signature__ = signature  # type: ignore[attr-defined]  # what inspect and tests/contract read
    return forward


def _folders(workspaces):
    """Workspaces as strings for the pipe; anything else goes as is, for the engine to refuse."""
    if isinstance(workspaces, (list, tuple)):
        return [str(w) for w in workspaces]
    return workspaces


def _settle(future, result, error) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


PLAIN = {"workspace": str, "workspaces": _folders, "documents": list}  # arguments as the pipe sends them
WRITTEN = {"index", "watch", "unwatch"}  # EngineProcess's own: progress and cancel, watch events
FORWARDED = {name for name, method in engine_methods().items() if inspect.iscoroutinefunction(method)}  # the child runs these
for _name, _method in engine_methods().items():
    if inspect.iscoroutinefunction(_method) and _name not in WRITTEN:
        setattr(EngineProcess, _name, forwarder(_name))


# --- the child process ---
def serve(conn, kwargs: dict) -> None:
    """Entry point of the engine process: run requests until CLOSE or the pipe closes."""
    asyncio.run(_serve(conn, kwargs))


async def _serve(conn, kwargs: dict) -> None:
    from services.engine.service import LocalEngine

    service = LocalEngine(**kwargs)
    loop = asyncio.get_running_loop()
    send_lock = threading.Lock()
    cancels: dict[int, threading.Event] = {}
    tasks: set = set()

    def send(message) -> None:
        with send_lock:
            conn.send(message)

    try:
        while True:
            try:
                call_id, method, args, call_kwargs = await loop.run_in_executor(None, conn.recv)
            except (EOFError, OSError):
                break
            if method == CLOSE:
                break
            if method == CANCEL:
                cancels.get(call_id, threading.Event()).set()
                continue
            task = asyncio.ensure_future(_run(service, call_id, method, args, call_kwargs, send, cancels))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        for event in cancels.values():
            event.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        service.close()
        conn.close()


async def _run(service, call_id, method, args, kwargs, send, cancels) -> None:
    try:
        if method == "index":
            cancels[call_id] = threading.Event()
            result = await service.index(*args, progress=lambda e: send((call_id, "progress", e)),
                                         cancel=cancels[call_id], **kwargs)
        elif method == "watch":
            workspace = args[0]
            result = await service.watch(workspace, on_event=lambda e: send((0, "event", (workspace, e))),
                                         **kwargs)
        elif method in FORWARDED:
            result = await getattr(service, method)(*args, **kwargs)
        else:
            raise KnowledgeError(f"{method!r} is no method of the Engine protocol.")
        send((call_id, "ok", result))
    except Exception as error:  # sent back and raised in the caller
        send((call_id, "error", _portable(error)))
    finally:
        cancels.pop(call_id, None)


def _portable(error: Exception) -> Exception:
    """The error itself when it survives pickling, else a KnowledgeError with its text."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return KnowledgeError(f"{type(error).__name__}: {error}")
