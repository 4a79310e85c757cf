"""The engine in a child process (what the desktop app uses): cancel, crash and restart, ownership, watch
events across the pipe. Its answers and errors are checked against the other engines in tests/contract."""

from __future__ import annotations

import asyncio
import threading

import pytest

from services.transport.engine_process import EngineProcess, EngineStopped

pytestmark = pytest.mark.stand_in_encoder  # watching and indexing are tested, not the model


@pytest.fixture
def engine(data_dir):
    process = EngineProcess(data_dir=data_dir)
    yield process
    process.close()


async def test_cancel_reaches_the_engine_and_the_index_stays_usable(engine, workspace):
    cancel = threading.Event()

    def on_progress(event):
        if event.phase == "embedding" and event.chunks_done:
            cancel.set()

    partial = await engine.index(workspace, progress=on_progress, cancel=cancel)
    assert partial.cancelled
    finished = await engine.index(workspace)
    assert not finished.cancelled and finished.files_unchanged >= partial.files_indexed


async def test_a_crashed_engine_is_reported_and_restarted(engine, workspace):
    def crash(event):
        if event.phase == "embedding":
            engine._process.kill()

    with pytest.raises(EngineStopped, match="stopped unexpectedly"):
        await engine.index(workspace, progress=crash)
    report = await engine.index(workspace)  # a fresh engine resumes the interrupted index
    assert report.chunks_total > 50 and not report.cancelled


async def test_the_child_runs_only_the_engine_protocol_s_methods(engine, workspace):
    """The pipe carries method names: one outside the protocol (a LocalEngine's own, or no method at all) is
    refused by name in the child, and the engine answers on."""
    from services.core.errors import KnowledgeError

    for name in ("set_owner_url", "configure_reranking", "__class__"):
        with pytest.raises(KnowledgeError, match=f"'{name}' is no method of the Engine protocol"):
            await engine._call(name, "x")
    assert not (await engine.health(workspace)).indexed


async def test_the_engine_owns_the_data_dir_and_watch_events_cross_the_pipe(engine, workspace, data_dir):
    from services.storage.ownership import read_owner
    from services.indexing.watcher import REINDEX_FINISHED

    await engine.index(workspace)
    assert read_owner(data_dir).kind == "gui" and read_owner(data_dir).pid == engine._process.pid
    events = []
    await engine.watch(workspace, on_event=events.append)
    await _wait(lambda: any(e.kind == REINDEX_FINISHED for e in events))  # the catch-up run on open
    (workspace / "notes" / "store.py").write_text((workspace / "notes" / "store.py").read_text()
                                                  + "\n\ndef archive_every_note_forever():\n    pass\n")
    await _wait(lambda: any(e.kind == REINDEX_FINISHED and e.report.files_indexed for e in events))
    deadline = asyncio.get_running_loop().time() + 120
    while "archive_every_note_forever" not in await engine.symbol_names(workspace):
        # a run may have read the file mid-write; the watcher's next run follows
        assert asyncio.get_running_loop().time() < deadline, "the edit never became searchable"
        await asyncio.sleep(0.05)
    await engine.unwatch(workspace)


async def _wait(condition, timeout: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting for the engine"
        await asyncio.sleep(0.05)
