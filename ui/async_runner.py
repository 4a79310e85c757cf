"""Run coroutines from Qt slots on the qasync loop, keep references, report failures."""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from services.core.errors import KnowledgeError

log = logging.getLogger(__name__)


def describe_error(exc: BaseException) -> str:
    """A one-line message a user can read: engine errors as they are, others with their type."""
    if isinstance(exc, KnowledgeError):
        return str(exc) or type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class AsyncRunner(QObject):
    """Starts tasks with asyncio.ensure_future and keeps them alive until done.

    A task started under a `key` cancels the previous task with the same key (a new query
    replaces the one still running). Exceptions are logged and emitted as `failed(context, message)`.
    """

    failed = Signal(str, str)  # context ("Query", "Indexing", ...), message
    busy_changed = Signal(str, bool)  # key, running

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._tasks: set[asyncio.Task] = set()
        self._keyed: dict[str, asyncio.Task] = {}

    def run(self, coro: Awaitable[Any], *, key: str | None = None, context: str = "",
            on_result: Callable[[Any], None] | None = None,
            on_error: Callable[[BaseException], None] | None = None) -> asyncio.Task:
        if key is not None:
            self.cancel(key)
        task = asyncio.ensure_future(self._handled(coro, context, on_result, on_error))
        self._tasks.add(task)
        if key is not None:
            self._keyed[key] = task
            self.busy_changed.emit(key, True)
        task.add_done_callback(lambda t: self._finished(t, key))
        task.add_done_callback(lambda t: t.cancelled() and hasattr(coro, "close") and coro.close())  # never started
        return task

    async def _handled(self, coro: Awaitable[Any], context: str,
                       on_result: Callable[[Any], None] | None,
                       on_error: Callable[[BaseException], None] | None) -> Any:
        """The coroutine, then its handlers, inside one task: whoever sees the task done (a caller,
        a test) also sees what the handlers did."""
        try:
            result = await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._report(exc, context, on_error)
            raise
        if on_result is not None:
            try:
                on_result(result)
            except Exception as handler_exc:  # a bug in a result handler must not kill the loop
                self._report(handler_exc, context, None)
        return result

    def cancel(self, key: str) -> bool:
        task = self._keyed.get(key)
        if task is not None and not task.done() and task is not asyncio.current_task():  # not from its own handler
            task.cancel()
            return True
        return False

    def is_running(self, key: str) -> bool:
        task = self._keyed.get(key)
        return task is not None and not task.done()

    def running_tasks(self) -> list[asyncio.Task]:
        return [t for t in self._tasks if not t.done()]

    def cancel_all(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def _finished(self, task: asyncio.Task, key: str | None) -> None:
        self._tasks.discard(task)
        if key is not None and self._keyed.get(key) is task:
            del self._keyed[key]
            self.busy_changed.emit(key, False)
        if not task.cancelled():
            task.exception()  # retrieved here: _handled has reported it

    def _report(self, exc: BaseException, context: str,
                on_error: Callable[[BaseException], None] | None) -> None:
        if isinstance(exc, KnowledgeError):
            log.warning("%s failed: %s", context or "Task", exc)
        else:
            log.error("%s failed:\n%s", context or "Task",
                      "".join(traceback.format_exception(exc)))
        if on_error is not None:
            try:
                on_error(exc)
            except Exception:
                log.exception("error handler failed")
        self.failed.emit(context, describe_error(exc))
