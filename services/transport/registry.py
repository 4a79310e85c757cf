"""Workspaces registered on a server, persisted in its data dir.

Requests name a workspace by id (services.storage.workspace_index.workspace_key of its folder); paths inside
requests must stay inside that folder (services.core.paths). Only folders the operator allows can be
registered (services.transport.roots): inside an `--allow-root`, or opened by the owner from its own CLI or
window (listed in the data dir, or indexed there); never a system folder, the home folder or `/`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from services.core.errors import ForbiddenWorkspace, KnowledgeError, UnknownWorkspace, WorkspaceError
from services.storage.workspace_index import workspace_key, workspace_root
from services.core.paths import check_path_text
from services.transport.roots import inside_any, owner_folders, refusal

REGISTRY_FILE = "server-workspaces.json"


class WorkspaceRegistry:
    def __init__(self, data_dir: Path, allowed_roots: Sequence[str | Path] = ()) -> None:
        self.data_dir = Path(data_dir)
        self.file = self.data_dir / REGISTRY_FILE
        self.allowed_roots = [Path(r).expanduser().resolve() for r in allowed_roots]
        self._lock = threading.Lock()
        self._folders: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        """The saved registrations that the current policy still allows."""
        try:
            data = json.loads(self.file.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): str(v) for k, v in data.items() if self._allowed(Path(str(v)))}

    def _allowed(self, root: Path) -> bool:
        try:
            self.check(root)
        except ForbiddenWorkspace:
            return False
        return True

    def check(self, root: Path) -> None:
        """ForbiddenWorkspace unless this server may serve the resolved folder `root`."""
        reason = refusal(root)
        if reason is not None:
            raise ForbiddenWorkspace(f"The folder {root} cannot be served: {reason}. Register a project folder.")
        if inside_any(root, self.allowed_roots) or str(root) in owner_folders(self.data_dir) \
                or (self.data_dir / "workspaces" / workspace_key(root)).is_dir():
            return
        raise ForbiddenWorkspace(f"The folder {root} is not open to this server: open it once on this machine "
                                 f"(knowledge-explorer index {root}), or start the server with --allow-root.")

    def register(self, path: str) -> tuple[str, Path]:
        """Register a folder (idempotent); raises WorkspaceError when it is not a folder, ForbiddenWorkspace
        when this server may not serve it."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("Give the workspace folder's path.")
        check_path_text(path)
        root = workspace_root(path)
        self.check(root)
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
            check_path_text(path_or_id)
            key = workspace_key(workspace_root(path_or_id))
        except (KnowledgeError, OSError):
            key = None
        if key is not None and key in self.all():
            return key, self.get(key)
        raise UnknownWorkspace(f"No workspace {path_or_id!r} is registered on this server.")

    def all(self) -> dict[str, str]:
        with self._lock:
            return dict(self._folders)
