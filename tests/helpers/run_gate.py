"""A run that cannot end before a cancel lands: step 2 takes one file a window, and once it has said it committed
files, the next window waits (before it is read) until the test releases it. A small workspace is a few encoder
calls, and a click or a request could otherwise come after the last one; step 2 reads a window ahead of the calls
running, so only windows of one file leave many unread when the first is committed."""

from __future__ import annotations

import threading

from services.indexing import vector_step
from services.indexing.run_progress import RunProgress
from services.storage.catalog import Catalog


def hold_after_first_commit(monkeypatch, timeout: float = 600) -> threading.Event:
    """Patch the run so that, after an event with files committed, the next window waits; set the Event returned
    (after the cancel) to let it go on: it then sees the cancel and stops."""
    made, release = threading.Event(), threading.Event()
    emit, awaiting = RunProgress.emit, Catalog.awaiting_chunks

    def emitted(self, phase, files_done, *args, **kwargs):
        emit(self, phase, files_done, *args, **kwargs)
        if phase == "embedding" and files_done:
            made.set()

    def held(self, path):
        if made.is_set():
            release.wait(timeout)
        return awaiting(self, path)

    monkeypatch.setattr(vector_step, "FIRST_WINDOW_CHUNKS", 1)
    monkeypatch.setattr(vector_step, "WINDOW_CHUNKS", 1)
    monkeypatch.setattr(RunProgress, "emit", emitted)
    monkeypatch.setattr(Catalog, "awaiting_chunks", held)
    return release
