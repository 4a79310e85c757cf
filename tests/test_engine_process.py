"""The engine in a child process (what the desktop app uses): same answers, progress, cancel, errors."""

from __future__ import annotations

import threading

import pytest

from services.engine_process import EngineProcess, EngineStopped
from services.errors import QueryError, WorkspaceError
from services.models import QueryOptions


@pytest.fixture
def engine(data_dir):
    process = EngineProcess(data_dir=data_dir)
    yield process
    process.close()


async def test_index_query_and_health_through_the_engine_process(engine, workspace):
    events = []
    report = await engine.index(workspace, progress=events.append)
    assert report.chunks_total > 50 and any(e.phase == "embedding" and e.chunks_done for e in events)
    result = await engine.query("what implements ChunkStore",
                                QueryOptions(workspace=str(workspace), strategy="metadata", top_k=3))
    assert result.reranked and result.results[0].chunk.symbol in {"MemoryChunkStore", "DiskChunkStore"}
    health = await engine.health(workspace)
    assert health.indexed and health.chunks == report.chunks_total
    assert "ChunkStore" in await engine.symbol_names(workspace)
    names = {s.name: s for s in engine.strategies()}
    assert names["hybrid"].available and not names["cross-encoder"].available


async def test_cancel_reaches_the_engine_and_the_index_stays_usable(engine, workspace):
    cancel = threading.Event()

    def on_progress(event):
        if event.phase == "embedding" and event.chunks_done:
            cancel.set()

    partial = await engine.index(workspace, progress=on_progress, cancel=cancel)
    assert partial.cancelled
    finished = await engine.index(workspace)
    assert not finished.cancelled and finished.files_unchanged >= partial.files_indexed


async def test_engine_errors_arrive_as_the_engines_own_types(engine, tmp_path):
    with pytest.raises(WorkspaceError, match="does not exist"):
        await engine.index(tmp_path / "missing")
    with pytest.raises(QueryError, match="empty"):
        await engine.query(" ", QueryOptions(workspace=str(tmp_path)))


async def test_a_crashed_engine_is_reported_and_restarted(engine, workspace):
    def crash(event):
        if event.phase == "embedding":
            engine._process.kill()

    with pytest.raises(EngineStopped, match="stopped unexpectedly"):
        await engine.index(workspace, progress=crash)
    report = await engine.index(workspace)  # a fresh engine resumes the interrupted index
    assert report.chunks_total > 50 and not report.cancelled
