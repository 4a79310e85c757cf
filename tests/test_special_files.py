"""A named pipe (or socket, or device) in a workspace never hangs anything (issue 42): only regular files are
opened for reading; find references, go to and indexing answer, listing the pipe as "not a regular file"; and
one workspace's slow go-to / references never holds up another's. Real files, a real engine and store."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from pathlib import Path

import pytest

from services.core import files
from services.indexing.scanning import scan_workspace
from tests.conftest import copy_sample

pytestmark = pytest.mark.stand_in_encoder  # reading files is tested, not the model

WAIT = 120  # seconds: an answer that has not come by then is a hang


def release(fifo: Path) -> None:
    """Unblock any reader stuck on the pipe (the old code): a writer opens it and closes it, the reader sees
    end of file."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def test_only_regular_files_are_read(tmp_path):
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(files.NotRegularFile, match="not a regular file"):
        files.read_text(fifo)
    with pytest.raises(files.NotRegularFile):
        files.read_bytes(tmp_path)
    (tmp_path / "plain.py").write_bytes(b"a = 1\r\nb = 2\n")
    assert files.read_text(tmp_path / "plain.py") == "a = 1\nb = 2\n"


def test_a_scan_lists_pipes_and_sockets_as_not_regular_files(workspace):
    os.mkfifo(workspace / "pipe.py")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(workspace / "sock.py"))
        scan = scan_workspace(workspace)
    reasons = {s.path: s.reason for s in scan.skipped}
    assert reasons["pipe.py"] == reasons["sock.py"] == "not a regular file"
    assert not {"pipe.py", "sock.py"} & {f.path for f in scan.files}


async def test_a_pipe_in_place_of_an_indexed_file_hangs_neither_references_nor_another_workspace(service, tmp_path):
    first, second = copy_sample(tmp_path / "first"), copy_sample(tmp_path / "second")
    await service.index(first)
    await service.index(second)
    fifo = first / "notes" / "__init__.py"  # its text mentions tokenize_query: references reads it
    to_fifo(fifo)
    try:
        refs = await asyncio.wait_for(service.references("tokenize_query", first), WAIT)
        assert "notes/search.py" in {f.path for f in refs.files}
        again = await asyncio.wait_for(service.goto_symbols("tokenize", first), WAIT)
        assert again.hits
        other = await asyncio.wait_for(service.references("tokenize_query", second), WAIT)
        assert "notes/__init__.py" in {f.path for f in other.files}
        report = await asyncio.wait_for(service.index(first), WAIT)
        assert ("notes/__init__.py", "not a regular file") in {(s.path, s.reason) for s in report.skipped}
    finally:
        release(fifo)


async def test_one_workspaces_stuck_go_to_never_blocks_another(service, tmp_path):
    """Each workspace has its own go-to / references thread: one held up (here on purpose) leaves the others'."""
    first, second = copy_sample(tmp_path / "first"), copy_sample(tmp_path / "second")
    await service.index(first)
    await service.index(second)
    free = threading.Event()
    stuck = asyncio.get_running_loop().run_in_executor(service.workspaces.goto_pool(service.workspace_index(first)), free.wait, WAIT)
    try:
        answer = await asyncio.wait_for(service.goto_symbols("SearchEngine", second), WAIT)
        assert answer.hits and not stuck.done()
    finally:
        free.set()
        await stuck
