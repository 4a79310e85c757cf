"""Indexing never falls over: a file that fails any stage is listed with its reason and the run goes
on; a store-level failure stops the run with one clear message and a consistent index (issue #14)."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

import services.indexing.preparing as preparing
from app.cli import main as cli_main
from services.encoders.embedder import Embedder
from services.core.errors import IndexStoreError
from services.engine.service import LocalEngine
from tests.helpers.stand_in_encoder import stand_in_settings
from services.core.settings import Settings
from services.storage.vector_store import VectorStore
from services.storage.workspace_index import WorkspaceIndex, workspace_root

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]  # faults, not the model, are tested

GOOD = {"good.py": "def add(a, b):\n    return a + b\n", "notes.md": "# Notes\n\nHow to add numbers.\n",
        "query.graphql": "type Query {\n  notes: [String]\n}\n"}
BAD = {"bad_read.py": "could not be read", "bad_chunk.py": "could not be chunked",
       "bad_embed.py": "could not be embedded", "bad_store.py": "could not be stored"}


@pytest.fixture
def small_workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    for name, text in GOOD.items():
        (root / name).write_text(text)
    for name in BAD:
        (root / name).write_text(f"def {name[:-3]}():\n    return '{name}'\n")
    return root


def failing_for(monkeypatch, owner, name: str, bad_path: str, paths_of) -> None:
    """Make `owner.name` raise for one file. Fault injection: no real read, parser, model or Chroma
    fault can be produced on demand here (the tests run as root, so even chmod 000 is readable)."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if bad_path in paths_of(*args, **kwargs):
            raise RuntimeError(f"injected failure for {bad_path}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)


def inject_every_stage(monkeypatch) -> None:
    failing_for(monkeypatch, preparing, "read_source", "bad_read.py", lambda source, *a: {source.path})
    failing_for(monkeypatch, preparing, "chunk_file", "bad_chunk.py", lambda path, *a: {path})
    failing_for(monkeypatch, Embedder, "encode_chunks", "bad_embed.py",
                lambda self, chunks: {c.path for c in chunks})
    failing_for(monkeypatch, VectorStore, "upsert", "bad_store.py",
                lambda self, chunks, vectors: {c.path for c in chunks})


def indexed_paths(service, root) -> tuple[set[str], set[str], set[str]]:
    """(files in the catalogue, ids of the chunks not awaiting vectors, vector ids)."""
    index = WorkspaceIndex(workspace_root(root), service.data_dir)
    catalog = index.catalog()
    state = set(catalog.files()), catalog.chunk_ids() - catalog.awaiting.awaiting_ids(), index.store().all_ids()
    index.close()
    return state


def awaiting_paths(service, root) -> set[str]:
    """The files whose chunks are committed and await their vectors."""
    index = WorkspaceIndex(workspace_root(root), service.data_dir)
    paths = set(index.catalog().awaiting.awaiting_paths())
    index.close()
    return paths


async def test_a_file_failing_each_stage_is_listed_and_the_rest_indexed(service, small_workspace, monkeypatch):
    inject_every_stage(monkeypatch)
    report = await service.index(small_workspace)
    reasons = {s.path: s.reason for s in report.skipped}
    for path, reason in BAD.items():
        assert reasons[path].startswith(reason + ": injected failure"), reasons
    assert report.failed == {reason: 1 for reason in BAD.values()}
    files, chunk_ids, vector_ids = indexed_paths(service, small_workspace)
    # those whose vectors failed are taken out of the index again (skipped, as the report says): none awaits
    assert files == set(GOOD) and report.files_indexed == len(GOOD)
    assert chunk_ids <= vector_ids and awaiting_paths(service, small_workspace) == set()
    health = await service.health(small_workspace)
    assert {s.path for s in health.skipped} == set(BAD) and health.state == "ready"
    assert health.skipped_by_reason == {reason: 1 for reason in BAD.values()}

    monkeypatch.undo()  # the faults are gone: the next run retries those files
    again = await service.index(small_workspace)
    assert again.files_indexed == len(BAD) and again.failed == {} and again.skipped == ()
    assert indexed_paths(service, small_workspace)[0] == set(GOOD) | set(BAD)
    assert awaiting_paths(service, small_workspace) == set()


async def test_store_failure_stops_cleanly_and_the_index_stays_consistent(service, small_workspace, monkeypatch):
    await service.index(small_workspace)
    (small_workspace / "good.py").write_text("def add(a, b, c):\n    return a + b + c\n")
    (small_workspace / "later.py").write_text("def later():\n    return 1\n")
    before = indexed_paths(service, small_workspace)

    def disk_full(self, chunks, vectors):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(VectorStore, "upsert", disk_full)  # fault injection: no real full disk here
    with pytest.raises(IndexStoreError, match="the vector store failed .*No space left on device"):
        await service.index(small_workspace)
    files, chunk_ids, vector_ids = indexed_paths(service, small_workspace)
    # step 1 committed both files; no vector could be stored, so their chunks await them
    assert files == before[0] | {"later.py"} and chunk_ids <= before[1] and chunk_ids <= vector_ids
    assert awaiting_paths(service, small_workspace) == {"good.py", "later.py"}
    assert "No space left" in (await service.health(small_workspace)).last_error

    monkeypatch.undo()
    resumed = await service.index(small_workspace)
    assert resumed.files_indexed == 0 and resumed.chunks_embedded == 2  # only the vectors were left to make
    assert awaiting_paths(service, small_workspace) == set()


def test_cli_prints_one_line_and_no_traceback_when_the_store_fails(small_workspace, data_dir, monkeypatch, capsys):
    def chroma_down(self, chunks, vectors):
        raise ConnectionError("Could not connect to tenant default_tenant")

    monkeypatch.setattr(VectorStore, "upsert", chroma_down)  # fault injection: stands for a Chroma outage
    status = cli_main(["index", str(small_workspace), "--data-dir", str(data_dir)])
    err = capsys.readouterr().err
    assert status == 1
    assert err.strip().splitlines() == [
        "error: indexing stopped: the vector store failed (Could not connect to tenant default_tenant). "
        "Files indexed so far are kept; run it again once this is fixed."]
    logged = (data_dir / "logs" / "knowledge-explorer.log").read_text()  # the details went to the log file
    assert "Traceback" in logged and "ConnectionError: Could not connect to tenant default_tenant" in logged


async def test_one_line_minified_file_indexes_without_duplicate_ids(data_dir, tmp_path):
    """The Sphinx crash: a class and its method on one line made two chunks with one id."""
    root = tmp_path / "ws"
    root.mkdir()
    line = "class Stemmer{stem(w){return w.toLowerCase()}}class Other{stem(w){return w}};" * 40
    (root / "stemmer.js").write_text(line)
    (root / "app.py").write_text("def run():\n    return 1\n")
    service = LocalEngine(stand_in_settings(skip_machine_made=False), data_dir=data_dir)
    try:
        report = await service.index(root)
        assert report.skipped == () and report.files_indexed == 2
        index = WorkspaceIndex(workspace_root(root), data_dir)
        chunks = index.catalog().chunks(path="stemmer.js")
        index.close()
        assert len(chunks) >= 4 and len({c.id for c in chunks}) == len(chunks)
    finally:
        service.close()
    default = LocalEngine(stand_in_settings(), data_dir=tmp_path / "other")
    try:
        report = await default.index(root)
        assert [(s.path, s.reason) for s in report.skipped] == [("stemmer.js", "minified/generated")]
    finally:
        default.close()


async def test_empty_or_all_binary_workspace_says_nothing_to_index(service, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (root / "blob").write_bytes(bytes(range(256)))
    report = await service.index(root)
    assert report.files_indexed == 0 and report.message == "nothing to index (2 files skipped)"
    health = await service.health(root)
    assert health.state == "empty" and health.message == "nothing to index (2 files skipped)"
    assert health.skipped_by_reason == {"binary file": 2}


async def test_chroma_server_dying_mid_run_stops_with_one_message(workspace, tmp_path):
    """A real `chroma run` server killed while the indexer writes: the run stops with IndexStoreError,
    and every file in the catalogue is complete (committed before the server died)."""
    import subprocess
    import sys
    from pathlib import Path

    from tests.test_chroma_server import free_port, wait_for

    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(tmp_path / "server"),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    service = LocalEngine(stand_in_settings(), data_dir=tmp_path / "data", chroma_url=f"http://127.0.0.1:{port}")
    try:
        wait_for(f"http://127.0.0.1:{port}/api/v2/heartbeat")

        def kill_after_first_write(event):
            if event.phase == "embedding" and event.files_done > 0 and server.poll() is None:
                server.kill()

        with pytest.raises(IndexStoreError, match="indexing stopped"):
            await service.index(workspace, progress=kill_after_first_write)
        index = WorkspaceIndex(workspace_root(workspace), service.data_dir)
        files = index.catalog().files()
        for path, record in files.items():
            assert all(c.file_hash == record.file_hash for c in index.catalog().chunks(path=path))
        awaiting, chunks = index.catalog().awaiting.awaiting_count(), index.catalog().counts()[1]
        index.close()
        assert len(files) == 24 and 0 < awaiting < chunks  # every file committed, some vectors stored
        assert "indexing stopped" in (await service.health(workspace)).last_error
    finally:
        service.close()
        server.kill()
        server.wait(timeout=10)


# --- issue 20: real faults, real processes, real signals ---

REPO = Path(__file__).resolve().parent.parent


def many_files(root: Path, files: int = 300) -> Path:
    """A workspace big enough that indexing takes several batches (8 functions a file)."""
    root.mkdir()
    for i in range(files):
        (root / f"m{i}.py").write_text("".join(
            f"def f{i}_{j}(x):\n    '''Compute thing {i} {j} for the caller.'''\n    return x * {j} + {i}\n\n\n"
            for j in range(8)))
    return root


def cli_process(*argv, preexec_fn=None, **kwargs) -> subprocess.Popen:
    """`knowledge-explorer ARGV` in a real child process that imports this checkout."""
    return subprocess.Popen([sys.executable, "-m", "app.cli", *argv], cwd=REPO, preexec_fn=preexec_fn,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def without_root_read_override() -> None:
    """In the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so the
    command it executes (run as root, as these tests are) obeys file permissions like a user would."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def catalogued(data_dir: Path, root: Path) -> set[str]:
    index = WorkspaceIndex(workspace_root(root), data_dir)
    try:
        return set(index.catalog().files())
    finally:
        index.close()


def test_an_unreadable_root_or_folder_removes_nothing_from_the_index(small_workspace, data_dir):
    """Only "the root is readable and the file does not exist" deletes a file's chunks."""
    (small_workspace / "sub").mkdir()
    (small_workspace / "sub" / "inner.py").write_text("def inner():\n    return 2\n")
    assert cli_main(["index", str(small_workspace), "--data-dir", str(data_dir)]) == 0
    before = catalogued(data_dir, small_workspace)
    assert "sub/inner.py" in before
    try:
        small_workspace.chmod(0)
        process = cli_process("index", str(small_workspace), "--data-dir", str(data_dir),
                              preexec_fn=without_root_read_override)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 1, err
        assert err.strip().splitlines() == [
            f"error: the workspace folder {small_workspace} cannot be read (permission denied); "
            "its index is left as it is."]
        small_workspace.chmod(0o755)
        assert catalogued(data_dir, small_workspace) == before

        (small_workspace / "sub").chmod(0)
        process = cli_process("index", str(small_workspace), "--data-dir", str(data_dir),
                              preexec_fn=without_root_read_override)
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert "sub: unreadable: permission denied" in out and "0 removed" in out
        assert catalogued(data_dir, small_workspace) == before
    finally:
        small_workspace.chmod(0o755)
        (small_workspace / "sub").chmod(0o755)


def test_ctrl_c_stops_index_within_a_batch_and_leaves_a_consistent_index(tmp_path):
    root, data = many_files(tmp_path / "ws"), tmp_path / "data"
    process = cli_process("index", str(root), "--data-dir", str(data))
    try:
        while not vectored_chunks(data):  # wait until the run is storing vectors (step 2)
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)  # a hang guard: the stop time is not asserted
    finally:                                          # (a loaded machine makes it vary)
        process.kill()
    assert process.returncode == 130
    lines = err.strip().splitlines()
    assert lines[0] == "Stopping after the current batch..." and lines[1].startswith("Stopped: ")
    assert "it is consistent, run the command again to go on." in lines[1] and len(lines) == 2

    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        health = asyncio.run(service.health(root))
        # stopped: every file committed (step 1), the vectors left to make, nothing damaged
        assert health.state == "interrupted" and health.files == 300 and health.chunks == 2400
        assert 0 < health.chunks_embedded < health.chunks
        report = asyncio.run(service.index(root))
        assert report.files_unchanged == 300 and report.chunks_total == 2400
        assert report.chunks_embedded == 2400 - health.chunks_embedded
    finally:
        service.close()


def vectored_chunks(data: Path) -> int:
    """Chunks whose vectors a run stored and marked."""
    for manifest in data.glob("workspaces/*/manifest.sqlite"):
        try:
            with closing(sqlite3.connect(f"file:{manifest}?mode=ro", uri=True)) as db:
                return db.execute("SELECT (SELECT COUNT(*) FROM chunks) - (SELECT COUNT(*) FROM awaiting)").fetchone()[0]
        except sqlite3.Error:  # not created yet
            return 0
    return 0


@pytest.fixture
def small_disk(tmp_path):
    """A real 3 MiB tmpfs as the data dir (these tests run as root); grown with `grow()`."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode:
        pytest.fail(f"cannot mount a tmpfs here ({made.stderr.strip()}): this test needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_stops_the_run_at_the_first_failure_and_is_never_ready(small_disk, tmp_path):
    root = many_files(tmp_path / "ws")
    service = LocalEngine(stand_in_settings(), data_dir=small_disk)
    try:
        with pytest.raises(IndexStoreError, match="indexing stopped: .*(disk is full|No space left)") as stopped:
            asyncio.run(service.index(root))
        assert "could not be stored" not in str(stopped.value)
        health = asyncio.run(service.health(root))
        assert health.state != "ready" and "disk is full" in health.last_error + health.message
    finally:
        service.close()
    service = LocalEngine(stand_in_settings(), data_dir=small_disk)  # the next process, the disk still full: it knows why
    try:
        health = asyncio.run(service.health(root))
        assert health.state != "ready" and "disk is full" in health.last_error

        subprocess.run(["mount", "-o", "remount,size=200m", str(small_disk)], check=True)  # space freed
        report = asyncio.run(service.index(root))
        assert report.chunks_total == 2400 and report.failed == {}
        health = asyncio.run(service.health(root))
        assert health.state == "ready" and health.chunks_embedded == health.chunks == 2400
        assert health.last_error == ""
    finally:
        service.close()


def test_a_non_utf8_question_is_one_line(small_workspace, data_dir):
    process = subprocess.run([sys.executable, "-m", "app.cli", "query", str(small_workspace), b"\xff\xfe add",
                              "--data-dir", str(data_dir)], cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                             capture_output=True)
    assert process.returncode == 2
    assert process.stderr.decode().strip().splitlines() == [
        "error: the argument '\ufffd\ufffd add' is not valid UTF-8 text (check the terminal's encoding)"]


def test_query_while_the_chroma_server_is_down_is_one_line(small_workspace, tmp_path, capsys):
    from tests.test_chroma_server import free_port, wait_for

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(Path(sys.executable).parent / "chroma"), "run", "--path", str(tmp_path / "server"),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(f"{url}/api/v2/heartbeat")
        assert cli_main(["index", str(small_workspace), "--data-dir", str(tmp_path / "data"), "--chroma-url", url]) == 0
    finally:
        server.kill()
        server.wait(timeout=10)
    capsys.readouterr()
    status = cli_main(["query", str(small_workspace), "add numbers", "--data-dir", str(tmp_path / "data"),
                       "--chroma-url", url])
    err = capsys.readouterr().err
    assert status == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: the Chroma server at {url} does not answer")


def test_the_reserved_error_note_takes_an_error_on_a_full_disk(small_disk):
    """The note is reserved while there is room; filled up, the disk still takes the error over it."""
    from services.storage.error_note import ErrorNote

    note = ErrorNote(small_disk / "workspace")
    note.reserve()
    with pytest.raises(OSError):
        with open(small_disk / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
    assert note.write("indexing stopped: the disk is full")
    assert ErrorNote(small_disk / "workspace").read() == "indexing stopped: the disk is full"
    note.clear()
    assert ErrorNote(small_disk / "workspace").read() == ""
