"""One owner per data dir: an inter-process lock (filelock) plus a JSON naming the owner.

ChromaDB's persistent client is not safe for two processes, so only the process holding
`owner.lock` may open the indexes of a data dir. `owner.json` beside it says who holds it
({pid, since, kind, url}), so a second instance can tell the user whom it is waiting for. The OS
drops the lock when its process dies; a JSON left by a dead pid, or garbled, is ignored and overwritten.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock, Timeout

from services.core.errors import IndexBusyError, KnowledgeError

LOCK_FILE = "owner.lock"
OWNER_FILE = "owner.json"
KINDS = ("gui", "server", "cli")


@dataclass(frozen=True)
class Owner:
    pid: int
    since: str  # ISO 8601 UTC
    kind: str  # "gui", "server" or "cli"
    url: str | None = None  # loopback URL of a server fronting the owner's engine

    def describe(self) -> str:
        text = f"a {self.kind} process (pid {self.pid}) since {self.since}"
        return text + (f", serving {self.url}" if self.url else "")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def read_owner(data_dir: str | Path) -> Owner | None:
    """The live owner of `data_dir`, or None (no owner file, unreadable, or its process is gone)."""
    try:
        data = json.loads((Path(data_dir) / OWNER_FILE).read_text())
        owner = Owner(int(data["pid"]), str(data["since"]), str(data["kind"]), data.get("url") or None)
    except (OSError, ValueError, KeyError, TypeError, OverflowError):  # garbled: no owner named
        return None
    return owner if 0 < owner.pid < 2**31 and pid_alive(owner.pid) else None


class OwnerLock:
    """Held from acquire() to release(); not re-entrant across instances, even in one process."""

    def __init__(self, data_dir: str | Path, kind: str = "cli") -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        self.data_dir = Path(data_dir)
        self.kind = kind
        self.owner: Owner | None = None
        self._lock = FileLock(self.data_dir / LOCK_FILE, timeout=0, thread_local=False)

    @property
    def held(self) -> bool:
        return self._lock.is_locked

    def acquire(self) -> bool:
        """Take the lock if free and write the owner file; False if another process holds it."""
        if self.held:
            return True
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except Timeout:
            return False
        except OSError as error:
            raise KnowledgeError(f"Cannot use the data dir {self.data_dir}: {error.strerror or error}.") from error
        since = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
        self.owner = Owner(os.getpid(), since, self.kind)
        try:
            self._write()
        except OSError as error:  # a full disk: the lock is held all the same, only its name tag is missing
            (self.data_dir / OWNER_FILE).with_suffix(".json.new").unlink(missing_ok=True)
            logging.getLogger(__name__).warning("could not write the owner file in %s: %s", self.data_dir, error)
        return True

    def require(self) -> None:
        """Raise IndexBusyError naming the owner unless this process owns the data dir (tries once more)."""
        if self.acquire():
            return
        owner = read_owner(self.data_dir)
        who = owner.describe() if owner else "another process"
        raise IndexBusyError(f"The index data in {self.data_dir} is in use by {who}. Close it first, "
                             f"or use another --data-dir.", owner)

    def set_url(self, url: str | None) -> None:
        """Record the loopback URL of a server fronting this engine (only while owning)."""
        if not self.held or self.owner is None:
            raise IndexBusyError(f"This process does not own {self.data_dir}.")
        self.owner = Owner(self.owner.pid, self.owner.since, self.owner.kind, url or None)
        self._write()

    def release(self) -> None:
        if not self.held:
            return
        try:
            if (read_owner(self.data_dir) or Owner(0, "", "")).pid == os.getpid():
                (self.data_dir / OWNER_FILE).unlink(missing_ok=True)
        finally:
            self._lock.release(force=True)
            self.owner = None

    def _write(self) -> None:
        path = self.data_dir / OWNER_FILE
        staging = path.with_suffix(".json.new")
        staging.write_text(json.dumps(asdict(self.owner)))
        os.replace(staging, path)
