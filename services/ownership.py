"""Who owns a data dir: one process at a time holds its lock and says so in an owner JSON.

MINIMAL STAND-IN written by the service-API branch (w10) against the contract of issue #9's
services/ownership.py ({pid, since, kind, url}); the full module from branch w9 replaces it.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock, Timeout

from services.errors import KnowledgeError

LOCK_FILE = "owner.lock"
OWNER_FILE = "owner.json"


class DataDirBusy(KnowledgeError):
    """Another process owns the data dir."""


class Ownership:
    """Held while this process owns the data dir; release() (or exiting the `with`) gives it up."""

    def __init__(self, data_dir: Path, lock: FileLock, kind: str) -> None:
        self.data_dir, self._lock = data_dir, lock
        self.info = {"pid": os.getpid(), "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "kind": kind, "url": None}
        self._write()

    def set_url(self, url: str) -> None:
        self.info["url"] = url
        self._write()

    def _write(self) -> None:
        path = self.data_dir / OWNER_FILE
        staging = path.with_suffix(".tmp")
        staging.write_text(json.dumps(self.info))
        staging.replace(path)

    def release(self) -> None:
        if self._lock.is_locked:
            (self.data_dir / OWNER_FILE).unlink(missing_ok=True)
            self._lock.release()

    def __enter__(self) -> "Ownership":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def acquire(data_dir: str | Path, kind: str) -> Ownership:
    """Own the data dir or raise DataDirBusy naming the owner."""
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / LOCK_FILE))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        owner = read_owner(folder) or {}
        raise DataDirBusy(f"The data dir {folder} is in use by {owner.get('kind', 'another process')} "
                          f"(pid {owner.get('pid', '?')}{', ' + owner['url'] if owner.get('url') else ''}).") from None
    return Ownership(folder, lock, kind)


def read_owner(data_dir: str | Path) -> dict | None:
    """The owner JSON of a live owner, else None."""
    try:
        owner = json.loads((Path(data_dir) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None
    pid = owner.get("pid")
    if not isinstance(pid, int) or not _alive(pid):
        return None
    return owner


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
