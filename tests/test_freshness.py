"""An index that stays fresh by itself (watcher) and has one owner per data dir (real processes)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from services.core.errors import WorkspaceError
from services.engine.service import LocalEngine
from services.core.models import QueryOptions
from services.storage.ownership import IndexBusyError, read_owner
from services.indexing.watcher import REINDEX_FINISHED, STALE, WorkspaceWatcher
from services.storage.workspace_index import WorkspaceIndex, workspace_root
from tests.helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[1]
NEW_FUNCTION = '''

def quantum_teleport_widget(frobnicator):
    """Teleport a widget through the quantum frobnicator."""
    return frobnicator.teleport()
'''
QUESTION = "teleport a widget through the quantum frobnicator"
NOTE_FILE = "notes/store.py"

# A process that owns a data dir (as `knowledge-explorer serve` would) until its stdin closes.
OWNER_SCRIPT = """
import sys
from services.engine.service import LocalEngine
service = LocalEngine(data_dir=sys.argv[1], kind="server")
service.owner_lock.require()
print("owner", flush=True)
sys.stdin.read()
service.close()
"""


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def start_owner(data_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT, str(data_dir)], cwd=ROOT, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "owner"
    return process


async def paths_for(service, workspace, question=QUESTION, top_k=5) -> list[str]:
    options = QueryOptions(workspace=str(workspace), top_k=top_k, use_cache=False, strategy="none")
    return [r.chunk.path for r in (await service.query(question, options)).results]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_a_second_process_is_refused_with_the_owner_named_then_a_killed_owner_is_recovered(workspace, data_dir):
    owner = start_owner(data_dir)
    try:
        recorded = read_owner(data_dir)
        assert recorded.pid == owner.pid and recorded.kind == "server"
        for command in (["index", str(workspace)], ["query", str(workspace), "save a note"],
                        ["health", str(workspace)]):
            refused = run_cli(*command, "--data-dir", str(data_dir))
            assert refused.returncode == 1
            assert f"in use by a server process (pid {owner.pid}) since {recorded.since}" in refused.stderr
            assert "Traceback" not in refused.stderr
        assert not (data_dir / "workspaces").exists()  # the refused index wrote nothing
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
    assert read_owner(data_dir) is None  # the dead pid's owner file is ignored
    done = run_cli("index", str(workspace), "--data-dir", str(data_dir), "--json")
    assert done.returncode == 0, done.stderr
    chunks = json.loads(done.stdout)["chunks_total"]
    assert chunks > 50
    assert read_owner(data_dir) is None  # released on exit
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    try:  # nothing duplicated, nothing lost: the store holds exactly the catalogue's chunks
        assert index.catalog().counts()[1] == len(index.store().all_ids()) == chunks
    finally:
        index.close()


async def test_one_owner_in_one_process_too_and_the_lock_passes_on_close(workspace, data_dir):
    first = LocalEngine(data_dir=data_dir)
    second = LocalEngine(data_dir=data_dir)
    try:
        assert read_owner(data_dir).pid == os.getpid() and first.owner_lock.held
        with pytest.raises(IndexBusyError, match=f"pid {os.getpid()}"):
            await second.index(workspace)
        await first.set_owner_url("http://127.0.0.1:8765")
        assert read_owner(data_dir).url == "http://127.0.0.1:8765"
        first.close()
        assert await second.health(workspace)  # the next call takes over the free lock
        assert second.owner().pid == os.getpid() and second.owner().url is None
    finally:
        first.close()
        second.close()


@pytest.mark.slow
async def test_watcher_indexes_edits_additions_and_deletions(workspace, service):
    await watched_with_an_edit(service, workspace)

    added = workspace / "notes" / "teleport.py"
    added.write_text(NEW_FUNCTION.replace("quantum_teleport_widget", "teleport_widget_again"))
    await wait_for(lambda: _contains(service, workspace, "notes/teleport.py"), what="the new file")

    added.unlink()
    await wait_for(lambda: _contains(service, workspace, "notes/teleport.py", present=False),
                   what="the deleted file to leave the results")
    health = await service.health(workspace)
    assert not health.stale_files and health.last_error == ""
    await service.unwatch(workspace)
    assert service.watching() == []


@pytest.mark.slow
async def test_watcher_follows_a_folder_moved_and_a_folder_deleted(workspace, service):
    await watched_with_an_edit(service, workspace)

    (workspace / "notes").rename(workspace / "jottings")  # a folder moved: its files at their new paths
    await wait_for(lambda: _first_is(service, workspace, "jottings/store.py"), what="the moved folder's files")
    shutil.rmtree(workspace / "jottings")  # a folder deleted: its files leave the index
    await wait_for(lambda: _contains(service, workspace, "jottings/store.py", present=False),
                   what="the deleted folder's files to leave the results")
    health = await service.health(workspace)
    assert not any(p.startswith(("notes/", "jottings/")) for p in service.workspace_index(workspace).catalog().files())
    assert not health.stale_files and health.last_error == ""
    await service.unwatch(workspace)


@pytest.mark.slow
async def test_without_auto_reindex_changes_are_reported_and_results_flagged_stale(workspace, service):
    events = []
    await service.index(workspace)
    before = await service.query("save a note to disk", QueryOptions(workspace=str(workspace), top_k=10, strategy="none"))
    assert before.results and all(r.stale == "" for r in before.results)
    await service.watch(workspace, auto_reindex=False, on_event=events.append)

    edited, deleted = before.results[0].chunk.path, before.results[1].chunk.path
    assert edited != deleted
    (workspace / edited).write_text((workspace / edited).read_text() + "\n# edited\n")
    (workspace / deleted).unlink()
    stale = await wait_for(lambda: next((e.stale_files for e in reversed(events)
                                         if e.kind == STALE and len(e.stale_files) == 2), None),
                           what="two stale files")
    assert {(s.path, s.change) for s in stale} == {(edited, "modified"), (deleted, "deleted")}
    after = await service.query("save a note to disk", QueryOptions(workspace=str(workspace), top_k=10, strategy="none"))
    flags = {r.chunk.path: r.stale for r in after.results + after.original}
    assert flags[edited] == "modified" and flags[deleted] == "deleted"  # the cached answer is flagged too
    assert after.cache_hit and (await service.health(workspace)).chunks == before.total_chunks_searched


async def test_a_missing_folder_is_an_error_state_with_the_reason(tmp_path, service):
    health = await service.health(tmp_path / "no-such-folder")
    assert not health.indexed and "does not exist" in health.last_error
    with pytest.raises(WorkspaceError, match="does not exist"):
        await service.watch(tmp_path / "no-such-folder")


def test_the_watcher_reports_changed_paths_without_skipped_folders(tmp_path):
    reported = []
    watcher = WorkspaceWatcher(tmp_path, reported.extend)
    watcher.start()
    try:
        (tmp_path / "node_modules").mkdir()
        (tmp_path / "node_modules" / "x.js").write_text("ignored")
        for number in range(20):
            (tmp_path / f"file{number}.py").write_text(f"x = {number}\n")
        wanted = {f"file{n}.py" for n in range(20)}
        asyncio.run(wait_for(lambda: wanted <= set(reported), 60, "all 20 files to be reported"))
        assert not any(p.startswith("node_modules") for p in reported)
    finally:
        watcher.stop()


async def watched_with_an_edit(service, workspace) -> None:
    """Index and watch the workspace, then save NEW_FUNCTION into NOTE_FILE and wait until it is found."""
    events = []
    await service.index(workspace)
    await service.watch(workspace, on_event=events.append)
    await wait_for(lambda: any(e.kind == REINDEX_FINISHED for e in events), what="the catch-up run")
    (workspace / NOTE_FILE).write_text((workspace / NOTE_FILE).read_text() + NEW_FUNCTION)
    await wait_for(lambda: _first_is(service, workspace, NOTE_FILE), what="the edit to be searchable")


async def _first_is(service, workspace, path) -> bool:
    return (await paths_for(service, workspace))[:1] == [path]


async def _contains(service, workspace, path, present=True) -> bool:
    return (path in await paths_for(service, workspace, "teleport widget quantum frobnicator", 10)) == present
