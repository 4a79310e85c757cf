"""The index's one state machine, through the engine: an interrupted first index reopened and resumed,
a folder renamed away, edited and renamed back, a catch-up run cancelled, an empty folder.

Real LocalEngine (real model, Chroma, watchdog) on copies of tests/sample_workspace; the runs are
stopped with their real cancel events, the service closed and opened again as a reopened app would."""

from __future__ import annotations

import pytest

import asyncio
import threading

from app.render import health_text
from services.core.models import state_label
from services.engine.service import LocalEngine
from services.indexing.watcher import FOLDER_MISSING, PROGRESS, REINDEX_FINISHED, REINDEX_STARTED
from tests.helpers.stand_in_encoder import stand_in_settings
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier



async def interrupted_first_index(workspace, data_dir) -> tuple[int, int]:
    """Index `workspace` for the first time and stop the run once a first window of vectors is stored
    (the cancel event, as Ctrl+. or quitting the app sets it). (chunks with vectors, chunks in the index)."""
    service = LocalEngine(stand_in_settings(), data_dir=data_dir, kind="gui")
    cancel = threading.Event()
    planned = []

    def progress(event):
        if event.phase == "embedding" and event.chunks_total:
            planned.append(event.chunks_total)
        if event.phase == "embedding" and event.files_done:
            cancel.set()

    try:
        report = await service.index(workspace, progress=progress, cancel=cancel)
    finally:
        service.close()
    # every file is committed (step 1), only some of the vectors made (step 2)
    assert report.cancelled and report.chunks_total == planned[0] and 0 < report.chunks_embedded < planned[0]
    return report.chunks_embedded, planned[0]


async def test_an_interrupted_first_index_reopened_says_so_and_resumes(workspace, data_dir):
    done, planned = await interrupted_first_index(workspace, data_dir)
    service = LocalEngine(stand_in_settings(), data_dir=data_dir, kind="gui")  # the app opened again
    try:
        health = await service.health(workspace)
        assert health.state == "interrupted" and not health.needs_reindex
        assert (health.run_chunks_done, health.run_chunks_total) == (done, planned)
        assert f"{done:,} of {planned:,} chunks done" in health.message
        assert "model" not in health.message and "model" not in health_text(health).split("\n")[0]
        first_updated = health.updated_at

        seen, events = [], []  # the health while the resumed run embeds, and its progress
        def progress(event):
            events.append(event)
            if event.phase == "embedding" and not seen:
                seen.append(asyncio.ensure_future(service.health(workspace)))
        report = await service.index(workspace, progress=progress)
        during = await seen[0]
        # progress is of the whole index, not of the remainder: it starts where the first run stopped
        embedding = [e for e in events if e.phase == "embedding" and e.chunks_total]
        assert (embedding[0].index_done, embedding[0].index_total) == (done, planned)
        assert (embedding[-1].index_done, embedding[-1].index_total) == (planned, planned)
        assert report.files_indexed == 0  # step 1 is kept: no file is chunked or committed again
        assert during.state == "resuming" and during.message.startswith("resuming: ")
        assert "chunks done" in during.message and f"of {planned:,}" in during.message
        assert not report.rebuilt_reason and report.chunks_embedded == planned - done  # only what was left

        after = await service.health(workspace)
        assert after.state == "ready" and state_label(after) == "up to date"
        assert after.chunks == planned and after.run_chunks_total == 0
        assert after.updated_at >= first_updated and not after.stale_files
        assert service.owner().pid == __import__("os").getpid()
    finally:
        service.close()


async def test_a_folder_renamed_away_edited_and_renamed_back_keeps_every_chunk(workspace, service, tmp_path):
    """Issue 21, problem 2: nothing is removed, the edit is indexed once the folder is back."""
    await service.index(workspace)
    before = await service.health(workspace)
    events = []
    await service.watch(workspace, on_event=events.append)
    await wait_for(lambda: any(e.kind == REINDEX_FINISHED for e in events), 60, "the catch-up run")

    moved = tmp_path / "renamed"
    workspace.rename(moved)
    await wait_for(lambda: any(e.kind == FOLDER_MISSING for e in events), 30, "the folder to be missed")
    gone = await service.health(workspace)
    assert gone.state == "folder-missing" and state_label(gone) == "folder missing"
    assert (gone.files, gone.chunks) == (before.files, before.chunks) and "kept" in gone.message
    kept = await service.query("note store", __import__("services.core.models", fromlist=["QueryOptions"])
                               .QueryOptions(workspace=str(workspace), strategy="none"))  # issue 32: answered from the kept index
    assert kept.results and all(r.stale == "" for r in kept.results)
    edited = moved / "notes" / "store.py" if (moved / "notes" / "store.py").exists() else sorted(moved.rglob("*.py"))[0]
    with edited.open("a") as handle:
        handle.write("\n# one more line\n")
    finished = len([e for e in events if e.kind == REINDEX_FINISHED])
    moved.rename(workspace)

    await wait_for(lambda: len([e for e in events if e.kind == REINDEX_FINISHED]) > finished, 120, "the catch-up")
    report = [e for e in events if e.kind == REINDEX_FINISHED][-1].report
    assert (report.files_indexed, report.files_removed) == (1, 0)
    after = await service.health(workspace)
    assert after.state == "ready" and after.files == before.files and not after.stale_files
    assert after.chunks >= before.chunks


async def test_cancelling_a_catch_up_run_stops_it_within_a_batch(workspace, data_dir):
    done, planned = await interrupted_first_index(workspace, data_dir)
    # small batches: the rest of the sample is several encoder calls, and a cancel lands between two of them
    service = LocalEngine(stand_in_settings(embed_batch_size=4), data_dir=data_dir, kind="gui")
    try:
        events = []
        await service.watch(workspace, on_event=events.append)  # opening catches up: the run resumes
        await wait_for(lambda: any(e.kind == PROGRESS and e.progress.phase == "embedding" for e in events),
                       120, "the catch-up run to embed")
        assert any(e.kind == REINDEX_STARTED for e in events)
        await service.unwatch(workspace)  # the window's Ctrl+. on an automatic run; returns once it stopped
        health = await service.health(workspace)
        assert health.state == "interrupted" and health.chunks == planned and health.chunks_embedded < planned
        assert health.run_chunks_total == planned
    finally:
        service.close()


async def test_an_empty_folder_is_empty_not_up_to_date(tmp_path, service):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    report = await service.index(empty)
    health = await service.health(empty)
    assert health.state == "empty" and state_label(health) == "empty"
    assert health.message == "nothing to index (1 files skipped)" and "nothing to index" in report.message
    assert health_text(health).startswith(f"{empty}: empty (nothing to index")


async def test_deletion_needs_the_folder_there_and_the_file_gone(workspace, service):
    from services.indexing.planning import Planner

    await service.index(workspace)
    index = service.workspace_index(workspace)
    planner = Planner(index, service.settings, everything=False, paths=None)
    known = sorted(index.catalog().files())
    assert planner.gone(known) == []  # all there
    (workspace / known[0]).unlink()
    assert planner.gone(known) == [known[0]]
    workspace.rename(workspace.with_name("away"))
    assert planner.gone(known) == []  # no folder, no evidence


async def test_a_catch_up_run_with_nothing_to_do_is_not_announced_as_indexing(workspace, service):
    """Opening an up-to-date workspace must not flash "indexing…": only a run that finds work says so."""
    await service.index(workspace)
    events = []
    await service.watch(workspace, on_event=events.append)
    await wait_for(lambda: any(e.kind == REINDEX_FINISHED for e in events), 60, "the catch-up run")
    assert not any(e.kind in (REINDEX_STARTED, PROGRESS) for e in events)
    assert [e for e in events if e.kind == REINDEX_FINISHED][0].report.files_indexed == 0

    edited = sorted(workspace.rglob("*.py"))[0]
    with edited.open("a") as handle:
        handle.write("\n\ndef tally_the_herd(herd):\n    return len(herd)\n")
    await wait_for(lambda: len([e for e in events if e.kind == REINDEX_FINISHED]) > 1, 120, "the edit's run")
    kinds = [e.kind for e in events]
    assert REINDEX_STARTED in kinds and kinds.index(REINDEX_STARTED) < len(kinds) - 1 - kinds[::-1].index(
        REINDEX_FINISHED)
    assert [e for e in events if e.kind == REINDEX_FINISHED][-1].report.files_indexed == 1
