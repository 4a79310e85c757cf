"""A remote engine hears what the server's engine says, as an in-process one does: watch events (stale files,
automatic runs, paused/resumed) and index progress, streamed from a real `knowledge-explorer serve` process
(the contract suite's) while real files change."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core.models import (
    PAUSED, REINDEX_FINISHED, REINDEX_STARTED, RESUMED, STALE, WATCHING, ProgressEvent, WatchEvent,
)
from services.transport.remote import RemoteEngine
from tests.conftest import copy_sample
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.slow

EDITED = "notes/store.py"


def edit(workspace: Path, line: str) -> None:
    path = workspace / EDITED
    path.write_text(path.read_text() + f"\n\ndef {line}():\n    return '{line}'\n")


def spied(engine: RemoteEngine) -> tuple[list, list]:
    """(requests, streams): what the engine's real transport sends, recorded as it goes (a spy, no stand-in)."""
    requests: list[tuple[str, str]] = []
    streams: list[str] = []
    send, open_stream = engine._http.send, engine._http.open_stream

    def recorded_send(method, path, body=None):
        requests.append((method, path))
        return send(method, path, body)

    def recorded_stream(path):
        streams.append(path)
        return open_stream(path)

    engine._http.send, engine._http.open_stream = recorded_send, recorded_stream
    return requests, streams


@pytest.fixture
def remote_workspace(contract_server, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")  # under the server's --allow-root
    engine = RemoteEngine(contract_server["url"], data_dir=tmp_path / "local")
    try:
        yield engine, workspace
    finally:
        engine.close()


async def test_index_progress_arrives_streamed_not_polled(remote_workspace):
    engine, workspace = remote_workspace
    requests, streams = spied(engine)
    progress: list[ProgressEvent] = []
    report = await engine.index(workspace, full=True, progress=progress.append)
    assert report.files_indexed > 0 and not report.cancelled
    phases = [event.phase for event in progress]
    assert phases[-1] == "done" and "embedding" in phases  # every phase, as in process
    assert [e.chunks_done for e in progress if e.phase == "embedding"][-1] == report.chunks_embedded
    # one streaming request followed the run: no status polls
    assert [path for path in streams if path.endswith("/index/events")] == [streams[0]] and len(streams) == 1
    assert not [r for r in requests if r[0] == "GET" and r[1].endswith("/index")]


async def test_an_edit_in_a_watched_workspace_reaches_a_remote_engines_on_event(remote_workspace):
    engine, workspace = remote_workspace
    await engine.index(workspace)
    events: list[WatchEvent] = []
    await engine.watch(workspace, auto_reindex=False, on_event=events.append)
    try:
        await wait_for(lambda: any(e.kind == WATCHING for e in events), what="the server to say it is watching")
        edit(workspace, "stale_here")
        stale = await wait_for(lambda: [e for e in events if e.kind == STALE
                                        and any(f.path == EDITED for f in e.stale_files)],
                               timeout=120, what="the edit to be reported stale")
        assert stale[0].workspace == str(workspace.resolve())

        events.clear()  # now kept fresh: the edit is indexed by an automatic run on the server
        await engine.watch(workspace, auto_reindex=True, on_event=events.append)
        finished = await wait_for(lambda: [e for e in events if e.kind == REINDEX_FINISHED
                                           and e.report is not None and e.report.files_indexed],
                                  timeout=120, what="the automatic run to index the edit")
        assert any(e.kind == REINDEX_STARTED for e in events) and finished[0].report.files_indexed == 1
        assert not (await engine.health(workspace)).stale_files

        await engine.pause_watch(workspace)
        await wait_for(lambda: any(e.kind == PAUSED for e in events), what="the server to say it paused")
        await engine.index(workspace)  # a user's run resumes automatic indexing
        await wait_for(lambda: any(e.kind == RESUMED for e in events), what="the server to say it resumed")
    finally:
        await engine.unwatch(workspace)
