"""Reading a workspace file: only a regular file is ever opened for reading.

Every read is bounded: a whole file at most `limit` bytes (FileTooLarge past it, never read whole), a line
shown at most MAX_LINE_CHARS characters. A named pipe, socket or device in a workspace (made by a tool, or
swapped in for an indexed file) would
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


MIB = 1024 * 1024
MAX_FILE_BYTES = MIB  # the index's limit (IndexingSettings.max_file_bytes' default): no read goes past it
MAX_LINE_CHARS = 4000  # a line shown (context, an opened range) is cut here: a minified line is not read text


class FileTooLarge(OSError):
    """The file is over the read's limit: never read whole ("`d.py` is 20.0 MiB now, over the 1.0 MiB limit:
    reindex to drop it")."""

    def __init__(self, path: str | Path, size: int, limit: int):
        self.size, self.limit = size, limit
        self.reason = f"{path} is {format_size(size)} now, over the {format_size(limit)} limit"
        super().__init__(f"{self.reason}: reindex to drop it")


def format_size(size: int) -> str:
    if size >= MIB:
        return f"{size / MIB:.1f} MiB"
    if size >= 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size} bytes"


def _open(path: str | Path) -> int:
    """A read-only descriptor of a regular file (NotRegularFile for anything else, checked on the handle)."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFile(path)  # a device is never even opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFile(path)
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The whole file, at most `limit` bytes: FileTooLarge when it is larger (by its size, or because it grew
    while it was read), NotRegularFile for anything but a regular file, OSError when it cannot be read."""
    fd = _open(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileTooLarge(path, size, limit)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise FileTooLarge(path, max(len(data), os.fstat(fd).st_size), limit)
        return data
    finally:
        os.close(fd)


def read_head(path: str | Path, size: int) -> bytes:
    """The file's first `size` bytes (to sniff it); see read_bytes."""
    fd = _open(path)
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(size)
    finally:
        os.close(fd)


def read_text(path: str | Path, encoding: str = "utf-8", errors: str = "strict", limit: int = MAX_FILE_BYTES) -> str:
    """The file's text (universal newlines, as Path.read_text), at most `limit` bytes; see read_bytes."""
    data = read_bytes(path, limit)
    return data.decode(encoding, errors).replace("\r\n", "\n").replace("\r", "\n")


def cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """A line as shown: cut at `limit` characters with a note of what was left out (its line end kept)."""
    if len(line) <= limit:
        return line
    body = line.rstrip("\r\n")
    if len(body) <= limit:
        return line
    return f"{body[:limit]} … [{len(body) - limit:,} more characters]{line[len(body):]}"


TEST_DIRS = frozenset(("test", "tests", "testing"))


def is_test_file(path: str) -> bool:
    """A test's file: under `test/`, `tests/`, `testing/`, or named `test_*`, `*_test`, `conftest.py`."""
    parts = path.lower().split("/")
    name = parts[-1]
    return bool(TEST_DIRS & set(parts[:-1])) or name.startswith("test_") or name == "conftest.py" or \
        name.rsplit(".", 1)[0].endswith("_test")
