"""Which folders a server may serve: never a filesystem root, the home folder (or a folder holding it), its
hidden folders or a system folder; otherwise a folder inside an operator's `--allow-root`, or one the
owner opened from its own CLI or window (listed in the data dir's `owner-workspaces.json`).

Light imports only: the remote client records folders here on the CLI's warm path.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from filelock import FileLock

OWNER_FILE = "owner-workspaces.json"

# Never served, nor anything inside them (the temp folder excepted: on macOS it lies under /private/var).
POSIX_SYSTEM_FOLDERS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
                        "/run", "/sbin", "/snap", "/sys", "/usr", "/var", "/System", "/Library", "/private")

LOCK_WAIT = 10.0  # seconds a record waits for another writer (then it is skipped: best effort)


def system_folders() -> list[Path]:
    if sys.platform == "win32":
        names = [os.environ.get("SystemRoot", r"C:\Windows"), os.environ.get("ProgramFiles", r"C:\Program Files"),
                 os.environ.get("ProgramFiles(x86)", r"C:\Program Files (x86)"),
                 os.environ.get("ProgramData", r"C:\ProgramData")]
        return [Path(n) for n in names]
    return [Path(n) for n in POSIX_SYSTEM_FOLDERS]


def refusal(root: Path) -> str | None:
    """Why the resolved folder `root` may never be served, even when allowed; None when it may be."""
    home = Path.home().resolve()
    if root == Path(root.anchor):
        return "it is the root of a file system"
    if home.is_relative_to(root):
        return "it is the home folder or holds it"
    if root.is_relative_to(home) and root.relative_to(home).parts[0].startswith("."):
        return "it is a hidden folder of the home folder (settings and keys)"
    if root.is_relative_to(Path(tempfile.gettempdir()).resolve()):
        return None
    if any(root.is_relative_to(folder) for folder in system_folders()):
        return "it is a system folder"
    return None


def inside_any(root: Path, allowed: list[Path]) -> bool:
    return any(root.is_relative_to(folder) for folder in allowed)


def owner_folders(data_dir: Path) -> set[str]:
    """The folders the owner opened from its own CLI or window (resolved paths)."""
    try:
        data = json.loads((Path(data_dir) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return set()
    return {str(p) for p in data} if isinstance(data, list) else set()


def record_owner_folder(data_dir: Path, folder: str | Path) -> None:
    """Note that the owner opened `folder` itself (the CLI or window, through the server that owns the
    data dir): the server may then register it. Best effort: a data dir that cannot be written is skipped."""
    resolved = str(Path(folder).expanduser().resolve())
    if resolved in owner_folders(data_dir):
        return
    file = Path(data_dir) / OWNER_FILE
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        # CLIs record at once: read, add and replace under one lock (threads and processes), or one is lost
        with FileLock(f"{file}.lock", timeout=LOCK_WAIT, thread_local=False):
            known = owner_folders(data_dir)
            staging = file.with_name(f"{file.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            staging.write_text(json.dumps(sorted(known | {resolved}), indent=1))
            staging.replace(file)
    except OSError:  # (filelock's Timeout is one)
        pass
