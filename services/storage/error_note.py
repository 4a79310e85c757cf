"""The last run's error, kept where it can be written even on a full disk.

A run that stops because the disk is full cannot record why in the catalogue (SQLite needs new pages),
and a one-shot CLI process exits with its in-memory copy. So every run first reserves a small file
beside the catalogue (`last-error.txt`, SIZE bytes of spaces); an error is written over it in place,
which needs no new space. Health reads it; the next successful run clears it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

SIZE = 4096
NAME = "last-error.txt"

log = logging.getLogger(__name__)


class ErrorNote:
    def __init__(self, folder: Path) -> None:
        self.path = folder / NAME

    def reserve(self) -> None:
        """Make sure the file holds SIZE bytes, keeping any message in it (best effort)."""
        try:
            if self.path.exists() and self.path.stat().st_size >= SIZE:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(b" " * SIZE)
        except OSError:
            log.warning("could not reserve %s", self.path, exc_info=True)

    def write(self, message: str) -> bool:
        """Write `message` over the reserved bytes (no new space needed); False when it could not."""
        data = message.encode("utf-8", "replace")[:SIZE - 1] + b"\n"
        return self._overwrite(data.ljust(SIZE, b" "))

    def clear(self) -> None:
        if self.path.exists():
            self._overwrite(b" " * SIZE)

    def read(self) -> str:
        try:
            return self.path.read_bytes()[:SIZE].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def _overwrite(self, data: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:  # the folder was wiped since (a full rebuild): write it anew if there is room
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_bytes(data)
                return True
            except OSError:
                return False
        except OSError:
            return False
        try:
            os.pwrite(fd, data, 0)
            os.fsync(fd)
            return True
        except OSError:
            log.warning("could not write %s", self.path, exc_info=True)
            return False
        finally:
            os.close(fd)
