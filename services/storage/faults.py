"""A store that cannot be read *now* is not a damaged store.

A full disk ("database or disk is full", "disk I/O error" on the write-ahead log's shared memory), too many
open files ("unable to open database file"), a permission, a lock another process holds, a timeout: each
passes, and the index is whole once it has. Only proof counts as damage: SQLite's own structure check
failing, a header that is not the format's, a structure check of the HNSW files (vector_store.hnsw_problem),
FTS5's integrity check. Nothing is deleted or rebuilt on anything less (services/indexing/integrity.py).
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from pathlib import Path

from services.core.errors import IndexStoreError, IndexUnavailable

SQLITE_HEADER = b"SQLite format 3\x00"
PROOF_TIMEOUT = 2.0  # seconds the structure check waits on a lock before it says "cannot tell"
LOCK_WAIT = 3.0  # seconds a store waits on another process's lock before it answers "busy"

TRANSIENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EMFILE, errno.ENFILE, errno.EACCES, errno.EPERM,
                    errno.EROFS, errno.EAGAIN, errno.EBUSY, errno.ETIMEDOUT, errno.ENOMEM, errno.EIO,
                    errno.EINTR, errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN}
TRANSIENT_TEXT = re.compile(
    r"no space left|disk is full|quota|read-only|readonly|disk i/o error|i/o error|too many open files|"
    r"unable to open database|permission denied|database is locked|table is locked|busy|timed? ?out|"
    r"could not connect|connection (refused|reset|error)|server disconnected|not enough memory|out of memory",
    re.IGNORECASE)
DAMAGE_TEXT = re.compile(r"file is not a database|malformed|not a database|corrupt", re.IGNORECASE)
BUSY_TEXT = re.compile(r"database is locked|table is locked|busy", re.IGNORECASE)


def _chain(error: BaseException | None):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def transient(error: BaseException) -> bool:
    """Whether an error says the store cannot be read or written now (and may well be whole)."""
    for link in _chain(error):
        if isinstance(link, OSError) and link.errno in TRANSIENT_ERRNOS:
            return True
        if isinstance(link, TimeoutError) or TRANSIENT_TEXT.search(f"{type(link).__name__} {link}"):
            return True
    return False


def busy(error: BaseException) -> bool:
    """Whether an error says another connection holds a lock."""
    return any(BUSY_TEXT.search(str(link)) for link in _chain(error))


def names_damage(error: BaseException) -> bool:
    """Whether an error is SQLite's own word that a file is corrupt (not a guess from a failed read)."""
    return any(DAMAGE_TEXT.search(str(link)) and not transient(link) for link in _chain(error))


def sqlite_problem(path: Path) -> str:
    """What is provably wrong with an SQLite file ("" when it holds together, or does not exist). Raises
    OSError or sqlite3.Error when it cannot be checked now (a full disk, no file handle, a lock)."""
    try:
        with open(path, "rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return ""
    if header and header != SQLITE_HEADER[:len(header)] or 0 < len(header) < len(SQLITE_HEADER):
        return f"{path.name} is not an SQLite database (its header is not SQLite's)"
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=PROOF_TIMEOUT)
    try:
        rows = db.execute("PRAGMA quick_check(3)").fetchall()
    except sqlite3.DatabaseError as error:
        if names_damage(error):
            return f"{path.name}: {error}"
        raise
    finally:
        db.close()
    found = [row[0] for row in rows if row[0] != "ok"]
    return f"{path.name} fails SQLite's structure check ({'; '.join(found)})" if found else ""


def proven_problem(paths: list[Path]) -> str | None:
    """The first SQLite file of `paths` that is provably corrupt, as a reason; "" when every one holds
    together; None when one could not be checked now (then nothing is proven)."""
    for path in paths:
        try:
            problem = sqlite_problem(path)
        except (OSError, sqlite3.Error):
            return None
        if problem:
            return problem
    return ""


class ProvenDamage(IndexStoreError):
    """A part of the index failed a structure check: damage, proven (a rebuild may move it aside)."""


def lock_holders(path: Path) -> list[int] | None:
    """The other processes holding a lock on an SQLite file or its -wal/-shm files (Linux's /proc/locks);
    None when that cannot be told here."""
    files = set()
    for candidate in (path, path.with_name(path.name + "-shm"), path.with_name(path.name + "-wal")):
        try:
            stat = os.stat(candidate)
        except OSError:
            continue
        files.add((os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino))
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    pids = []
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 6:  # a waiter, not a holder
            continue
        try:
            major, minor, inode = fields[5].split(":")
            key, pid = (int(major, 16), int(minor, 16), int(inode)), int(fields[4])
        except ValueError:
            continue
        if key in files and pid != os.getpid() and pid not in pids:
            pids.append(pid)
    return pids


def held_by(path: Path) -> str:
    """" (held by pid 4242)" when another process holds a lock on `path`; "" when none is known."""
    pids = lock_holders(path)
    return f" (held by pid {', '.join(map(str, pids))})" if pids else ""


def require_unlocked(path: Path, part: str, wait: float = LOCK_WAIT) -> None:
    """Raise IndexUnavailable ("busy: ... (held by pid N)") when another process keeps a lock on the SQLite
    file `path` for `wait` seconds that a write must wait out: a writer's, or a reader's open transaction on a
    file not in WAL mode (Chroma's). Its readers and writers would otherwise wait on it without end, silent.
    A lock this process holds (another of its threads writing) is not waited on here."""
    if not path.exists():
        return
    try:
        db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=wait, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")  # in WAL mode the same as IMMEDIATE: readers never block it there
            db.execute("ROLLBACK")
        finally:
            db.close()
    except sqlite3.Error as error:
        if not busy(error):
            return  # (a read-only or unreadable file: the read that follows says so)
        pids = lock_holders(path)
        if pids == []:  # the lock is this process's own
            return
        held = f" (held by pid {', '.join(map(str, pids))})" if pids else ""
        raise IndexUnavailable(f"busy: {part} is locked by another process{held}; nothing was changed: try "
                               "again once it lets go") from error
