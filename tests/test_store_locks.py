"""Every store wait is bounded (issue 42): another process holding a read transaction on the vector store's
chroma.sqlite3 (not in WAL mode: a write waits for its readers) makes `index` say "busy … (held by pid N)" within
seconds, at opening the store and before each write, instead of waiting silently until it lets go. Real files, a
real store and index (the stand-in model), a real second process holding the lock."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from services.core.errors import IndexStoreError
from tests.conftest import copy_sample
from tests.helpers.engine_server import ROOT, cli, env

pytestmark = pytest.mark.stand_in_encoder  # the store's locks are tested, not the model

READER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
db.execute("SELECT count(*) FROM embeddings").fetchone()
print("holding", flush=True)
sys.stdin.read()  # until the test closes it
db.execute("COMMIT")
"""


@contextlib.contextmanager
def reading(database):
    """Another process in a read transaction on `database` until the block ends; yields its pid."""
    process = subprocess.Popen([sys.executable, "-c", READER, str(database)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "holding"
        yield process.pid
    finally:
        process.stdin.close()
        process.wait(timeout=60)


def chroma_file(data_dir):
    return next(data_dir.rglob("chroma.sqlite3"))


def test_index_says_busy_naming_the_reader_instead_of_waiting_for_it(tmp_path):
    workspace, data_dir = copy_sample(tmp_path / "workspace"), tmp_path / "data"

    def index() -> subprocess.CompletedProcess:
        return subprocess.run(cli("index", str(workspace), "--data-dir", str(data_dir)), cwd=ROOT, env=env(),
                              capture_output=True, text=True, timeout=300)

    assert index().returncode == 0
    (workspace / "notes" / "added.py").write_text("def added():\n    return 1\n")
    with reading(chroma_file(data_dir)) as pid:
        refused = index()
    assert refused.returncode != 0
    assert "busy: the vector store (chroma.sqlite3) is locked by another process (held by pid" in refused.stderr
    assert str(pid) in refused.stderr
    assert index().returncode == 0  # once it let go


async def test_a_run_whose_store_is_open_says_busy_before_a_write_waits(service, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")
    await service.index(workspace)  # the store is open: the next run writes through it
    (workspace / "notes" / "added.py").write_text("def added():\n    return 1\n")
    with reading(chroma_file(service.data_dir)) as pid:
        with pytest.raises(IndexStoreError) as stopped:
            await service.index(workspace)
    assert "busy: the vector store (chroma.sqlite3) is locked by another process (held by pid" in str(stopped.value)
    assert str(pid) in str(stopped.value)
    assert "nothing was changed" not in str(stopped.value)  # files were: step 1 committed them
    assert "Files indexed so far are kept" in str(stopped.value)
    assert (await service.goto_symbols("added", workspace)).hits  # step 1 (names, keywords) was kept
    report = await service.index(workspace)
    assert report.files_indexed == 0 and report.chunks_embedded == 1  # the next run makes the vector left
