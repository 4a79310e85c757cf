"""Workspaces registered on a server, persisted in its data dir.

Requests name a workspace by id (services.storage.workspace_index.workspace_key of its folder); paths inside
requests must stay inside that folder (services.transport.paths).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from services.core.errors import UnknownWorkspace
from services.core.errors import WorkspaceError
from services.storage.workspace_index import workspace_key, workspace_root

REGISTRY_FILE = "server-workspaces.json"


class WorkspaceRegistry:
    def __init__(self, data_dir: Path) -> None:
        self.file = Path(data_dir) / REGISTRY_FILE
        self._lock = threading.Lock()
        self._folders: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def register(self, path: str) -> tuple[str, Path]:
        """Register a folder (idempotent); raises WorkspaceError when it is not a folder."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("Give the workspace folder's path.")
        root = workspace_root(path)
        key = workspace_key(root)
        with self._lock:
            if self._folders.get(key) != str(root):
                self._folders[key] = str(root)
                self.file.parent.mkdir(parents=True, exist_ok=True)
                staging = self.file.with_suffix(".tmp")
                staging.write_text(json.dumps(self._folders, indent=1))
                staging.replace(self.file)
        return key, root

    def get(self, key: str) -> Path:
        with self._lock:
            folder = self._folders.get(key)
        if folder is None:
            raise UnknownWorkspace(f"No workspace {key!r} is registered on this server. "
                                   "Register its folder with POST /v1/workspaces first.")
        return Path(folder)

    def find(self, path_or_id: str) -> tuple[str, Path]:
        """A registered workspace by id or by folder path."""
        with self._lock:
            if path_or_id in self._folders:
                return path_or_id, Path(self._folders[path_or_id])
        try:
            key = workspace_key(workspace_root(path_or_id))
        except WorkspaceError:
            key = None
        if key is not None and key in self.all():
            return key, self.get(key)
        raise UnknownWorkspace(f"No workspace {path_or_id!r} is registered on this server.")

    def all(self) -> dict[str, str]:
        with self._lock:
            return dict(self._folders)
