"""The engine's open workspaces: each one's index (opened once), the kept index of a folder that is gone,
each one's go-to thread and the error its last run left."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from services.core.errors import KnowledgeError, WorkspaceError
from services.storage.error_note import ErrorNote
from services.storage.ownership import OwnerLock
from services.storage.workspace_index import CATALOG_FILE, WorkspaceIndex, expanded, workspace_root

log = logging.getLogger(__name__)


class Workspaces:
    """Every workspace index this engine opened, by root."""

    def __init__(self, data_dir: Path, chroma_url: str | None, owner_lock: OwnerLock, lock: threading.RLock) -> None:
        self.data_dir, self.chroma_url, self.owner_lock = data_dir, chroma_url, owner_lock
        self._lock = lock
        self.indexes: dict[Path, WorkspaceIndex] = {}
        # go to / references: a thread per workspace, so keystrokes never wait on a query nor on another workspace
        self._goto_pools: dict[Path, ThreadPoolExecutor] = {}
        self.errors: dict[Path, str] = {}  # the last run's error, per workspace

    def index(self, workspace: str | Path) -> WorkspaceIndex:
        """The workspace's index (opened once); WorkspaceError for a folder that is not there."""
        root = workspace_root(workspace)
        self.owner_lock.require()
        with self._lock:
            if root not in self.indexes:
                self.indexes[root] = WorkspaceIndex(root, self.data_dir, self.chroma_url)
            return self.indexes[root]

    def readable(self, workspace: str | Path) -> WorkspaceIndex:
        """The workspace's index, or the kept index of a folder that is gone; WorkspaceError when neither."""
        try:
            return self.index(workspace)
        except WorkspaceError:
            index = self.known(workspace)
            if index is None:
                raise
            return index

    def known(self, workspace: str | Path) -> WorkspaceIndex | None:
        """The index of a workspace folder that is gone (moved, renamed, unmounted), if it has one: kept
        as it is, and shown as such, until the folder is back."""
        root = expanded(workspace).absolute().resolve()
        if root.exists():
            return None
        self.owner_lock.require()
        with self._lock:
            index = self.indexes.get(root) or WorkspaceIndex(root, self.data_dir, self.chroma_url)
            if not index.exists():
                return None
            self.indexes[root] = index
            return index

    def goto_pool(self, index: WorkspaceIndex) -> ThreadPoolExecutor:
        """The workspace's own go-to / references thread."""
        with self._lock:
            if index.root not in self._goto_pools:
                self._goto_pools[index.root] = ThreadPoolExecutor(1, thread_name_prefix="ke-goto")
            return self._goto_pools[index.root]

    def record_error(self, index: WorkspaceIndex, error: Exception, note: ErrorNote) -> str:
        """Keep a run's error in memory, in the reserved note (which a full disk can still take: the next
        process reads it there) and in the catalogue when it can be written; its message."""
        message = str(error) if isinstance(error, KnowledgeError) else f"{type(error).__name__}: {error}"
        self.errors[index.root] = message
        index.integrity = None  # a store error: check the index again on the next look
        note.write(message)
        try:
            if (index.folder / CATALOG_FILE).exists():
                index.catalog().set_meta(last_error=message)
        except Exception:
            log.warning("could not record the error of %s in its catalogue", index.root, exc_info=True)
        return message

    def clear_error(self, root: Path) -> None:
        self.errors.pop(root, None)

    def close(self) -> None:
        for pool in self._goto_pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        for index in self.indexes.values():
            index.close()
