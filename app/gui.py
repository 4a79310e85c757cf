"""GUI entry point: QApplication + qasync loop + the engine process + MainWindow (and --screenshot);
run_scenes starts the same window for the pictures in docs/.

The window talks to LocalEngine running in a child process (services.transport.engine_process), so
ChromaDB and model work never hold the GUI process's GIL.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication

if TYPE_CHECKING:
    from qasync import QEventLoop

log = logging.getLogger(__name__)


def default_workspace(path: str | None, settings) -> str:
    """PATH if given, else the last workspace (when it still exists), else the current folder."""
    if path:
        return path
    last = str(settings.value("lastWorkspace", "") or "")
    if last and Path(last).is_dir():
        return last
    return os.getcwd()


async def answered(window, question: str, timeout: float = 120.0) -> None:
    """Wait until the window shows the answer to `question` (whichever run produced it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while window.last_result is None or window.last_result.question != question:
        if loop.time() > deadline or not window.runner.is_running("query"):
            raise RuntimeError(f"no answer to “{question}” was shown")
        await asyncio.sleep(0.05)


async def take_screenshot(window, workspace: str, out: str, query: str | None,
                          strategy: str | None) -> int:
    """Open `workspace` (index it if needed), run `query`, select the first result, save the window."""
    status = 0
    try:
        health = await window.open_workspace(workspace)
        if not health.indexed or health.needs_reindex or health.stale_files:
            task = window.start_index(full=health.needs_reindex)
            if task is not None:
                await task
        await asyncio.wait([window.strategies_loaded])
        if strategy and not window.query_bar.select_strategy(strategy):
            log.warning("strategy %r is unknown or unavailable; using %s", strategy,
                        window.query_bar.strategy_name())
        if query:
            await window.service.warm_up()  # so the status bar shows query timings, not model loading
            task = window.run_query(query)
            if task is not None:
                await asyncio.wait([task])  # a refresh (e.g. after a reindex) may replace this run
                await answered(window, query)
                window.results.select_first()
    except Exception as exc:  # the window shows the error banner; the screenshot still records it
        log.error("screenshot run failed: %s", exc)
        status = 1
    await asyncio.sleep(0.3)  # let layouts and the highlighter settle
    QApplication.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(out):
        log.error("could not save the screenshot to %s", out)
        return 1
    print(f"screenshot saved to {out}")
    return status


GUI_SWITCH_INTERVAL = 0.001  # seconds; Python's default 5 ms lets a busy worker thread delay the GUI


def prefer_gui_thread() -> None:
    """Make Python hand the GIL over more often, so worker threads (indexing, queries) that run
    Python code between native calls delay the Qt event loop by at most about a millisecond."""
    sys.setswitchinterval(GUI_SWITCH_INTERVAL)


def make_engine(service_kwargs: dict | None, engine_url: str | None, token_file: str | None):
    """The engine the window talks to: a server (--engine-url) or a child process of this app."""
    if engine_url:
        from services.transport.remote import RemoteEngine, token_from

        return RemoteEngine(engine_url, token=token_from(token_file),
                            data_dir=(service_kwargs or {}).get("data_dir"))
    from services.transport.engine_process import EngineProcess

    return EngineProcess(**(service_kwargs or {}))


@functools.cache
def gui_thread_collector():
    """pyqtgraph's GarbageCollector, made once and kept: Python's GC runs in the GUI thread only (a
    collection in a worker thread that frees a Qt object deadlocks with the GUI thread, seen in tests)."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    return GarbageCollector()


def start_app() -> tuple[QApplication, QEventLoop]:
    """The QApplication and its qasync loop (asyncio's) as the desktop app starts them: its names and
    theme, the GIL handed over often, Python's GC in the GUI thread only."""
    import qasync

    from ui.main_window import APPLICATION, ORGANIZATION
    from ui.theme import apply_theme

    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QApplication.setDesktopFileName("knowledge-explorer")  # the menu entry (app/desktop_entry.py): Wayland's app id
    app = cast(QApplication, QApplication.instance()) or QApplication(sys.argv[:1])
    apply_theme(app)
    prefer_gui_thread()
    gui_thread_collector()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    return app, loop


def scratch_settings(folder: str) -> QSettings:
    """A settings file in `folder`: a reproducible layout that leaves the user's saved window state alone."""
    return QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)


def run_scenes(scenes, service, size: tuple[int, int] | None = None) -> int:
    """The pictures in docs/: the window started as the app starts it, on `service` with throwaway settings,
    shown at `size` (else its first size); runs `scenes(app, window)` to its end, then shuts the window and
    the engine down."""
    from ui.main_window import MainWindow

    app, loop = start_app()
    with tempfile.TemporaryDirectory(prefix="ke-docs-") as scratch:
        window = MainWindow(service, scratch_settings(scratch))
        if size:
            window.resize(*size)
        window.show()
        try:
            with loop:
                loop.run_until_complete(scenes(app, window))
        finally:
            window.shutdown()
            window.close()
            service.close()
    return 0


def run_gui(path: str | None, screenshot: str | None, query: str | None, strategy: str | None,
            service_kwargs: dict, engine_url: str | None = None, token_file: str | None = None,
            log_path: Path | None = None) -> int:
    """Start the desktop app on `path`; with `screenshot`, render the window to that PNG and exit.
    `log_path`: the log file; a fatal error's traceback and the last actions go beside it."""
    from app.crash_log import CrashLog
    from ui.main_window import MainWindow, app_settings

    app, loop = start_app()
    settings = app_settings()
    workspace = default_workspace(path, settings)
    if screenshot:
        scratch = tempfile.TemporaryDirectory(prefix="ke-screenshot-")
        settings = scratch_settings(scratch.name)
    crash_log = CrashLog(log_path.parent) if log_path is not None and not screenshot else None
    crashed = crash_log.start() if crash_log is not None else None
    service = make_engine(service_kwargs, engine_url, token_file)
    window = MainWindow(service, settings)
    if crashed is not None:
        window.report_last_crash(log_path, crashed)
    if strategy:
        window.strategies_loaded.add_done_callback(lambda _: window.query_bar.select_strategy(strategy))
    window.show()
    try:
        with loop:
            if screenshot:
                return loop.run_until_complete(
                    take_screenshot(window, workspace, screenshot, query, strategy))
            window.open_workspace(workspace)
            window.warm_up()
            if query:
                window.run_query(query)
            closed = asyncio.Event()
            app.aboutToQuit.connect(closed.set)
            app.lastWindowClosed.connect(closed.set)
            loop.run_until_complete(closed.wait())
            return 0
    finally:
        window.shutdown()
        window.close()
        service.close()
        if crash_log is not None:
            crash_log.stop()
