"""Server-sent event streams of `knowledge-explorer serve`: index runs started over the API (one per workspace
at a time, followed with GET …/index or …/index/events, cancelled with DELETE) and a watched folder's events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path


from app.render import to_json
from services.engine.protocol import Engine
from services.core.messages import (
    IndexStatus,
)
from services.core.errors import (
    IndexRunning, KnowledgeError,
)
from services.core.models import (
    WatchEvent,
)


log = logging.getLogger(__name__)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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

    def __init__(self, service: Engine) -> None:
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
