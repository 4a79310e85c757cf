"""pytest-qt fixtures: one session-wide qasync loop on the QApplication, real services in temp dirs."""

from __future__ import annotations

import asyncio
import gc
import os
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import qasync  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from pyqtgraph.util.garbage_collector import GarbageCollector  # noqa: E402


@pytest.fixture(scope="session")
def qasync_loop(qapp):
    """ONE loop for the whole session. Never stopped between tests (stop() would quit the app).
    `qapp` has the app's theme and shipped fonts (tests/conftest.py)."""
    loop = qasync.QEventLoop(qapp, already_running=True)
    executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ui-tests-default")
    loop.set_default_executor(executor)  # instead of qasync's QThreadExecutor, so it can be shut down
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(None)  # marked running only while a UI test runs (see `loop`)
    # Python's GC only in this (the GUI) thread, as in app/gui.py: a collection that a watcher or engine
    # thread happens to run, freeing a closed window's widgets there, deadlocked with the GUI thread
    collector = GarbageCollector()
    yield loop
    executor.shutdown(wait=True, cancel_futures=True)
    collector.timer.stop()
    gc.enable()


@pytest.fixture
def loop(qasync_loop, qtbot):
    """The qasync loop, seen by asyncio as running during this test only (so pytest-asyncio tests
    elsewhere in the session still get a clean thread)."""
    asyncio.set_event_loop(qasync_loop)
    asyncio.events._set_running_loop(qasync_loop)
    yield qasync_loop
    pending = [t for t in asyncio.all_tasks(qasync_loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        qtbot.waitUntil(lambda: all(t.done() for t in pending), timeout=10_000)
    gc.collect()  # this test's closed windows go now, in the GUI thread
    asyncio.events._set_running_loop(None)


@pytest.fixture
def qsettings(tmp_path):
    """A private ini file, so tests never read or write the user's settings."""
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield settings
    settings.sync()


@pytest.fixture
def window(loop, qtbot, service, qsettings):
    """The real main window over the module's `service` (tests/conftest.py's fresh one unless the module has
    its own), its strategies loaded; shut down after the test."""
    from ui.main_window import MainWindow

    win = MainWindow(service, qsettings)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitUntil(win.strategies_loaded.done)
    yield win
    win.shutdown()
