"""Reading a workspace file: only a regular file is ever opened for reading.

A named pipe, socket or device in a workspace (made by a tool, or swapped in for an indexed file) would
block a plain `open` forever (a FIFO waits for a writer) or read without end (`/dev/zero`). The file is
opened without blocking and checked with `fstat` on the open handle, so a swap between a look and the
open changes nothing.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

NOT_REGULAR = "not a regular file"


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or folder: never read."""

    def __init__(self, path: str | Path):
        super().__init__(f"{NOT_REGULAR}: {path}")
        self.reason = NOT_REGULAR


def is_regular(path: str | Path) -> bool:
    """Whether the path (its link followed) is a regular file; False when it cannot be looked at."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def read_bytes(path: str | Path, limit: int = -1) -> bytes:
    """The file's bytes (its first `limit` when given); NotRegularFile for anything but a regular file,
    OSError when it cannot be read."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFile(path)  # a device is never even opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    finally:
        os.close(fd)


def read_text(path: str | Path, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The file's text (universal newlines, as Path.read_text); see read_bytes."""
    data = read_bytes(path)
    return data.decode(encoding, errors).replace("\r\n", "\n").replace("\r", "\n")


TEST_DIRS = frozenset(("test", "tests", "testing"))


def is_test_file(path: str) -> bool:
    """A test's file: under `test/`, `tests/`, `testing/`, or named `test_*`, `*_test`, `conftest.py`."""
    parts = path.lower().split("/")
    name = parts[-1]
    return bool(TEST_DIRS & set(parts[:-1])) or name.startswith("test_") or name == "conftest.py" or \
        name.rsplit(".", 1)[0].endswith("_test")
