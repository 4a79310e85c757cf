"""Path confinement: paths in requests (path globs, file reads) stay inside their workspace folder:
no absolute paths, no `..`, no symlink leading out."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from services.core.errors import PathEscape


def check_glob(glob: str) -> None:
    """A path filter may only match inside the workspace: relative, no `..` segment."""
    for pattern in (p.strip() for p in glob.split(",")):
        if pattern.startswith(("/", "\\", "~")) or ".." in PurePosixPath(pattern.replace("\\", "/")).parts \
                or (len(pattern) > 1 and pattern[1] == ":"):
            raise PathEscape(f"The path filter {pattern!r} points outside the workspace: use a relative "
                             "pattern such as 'src/*.py'.")


def confined(root: Path, relative: str) -> Path:
    """`root / relative`, resolved (symlinks followed), or PathEscape when it leaves `root`."""
    parts = PurePosixPath(relative.replace("\\", "/"))
    if not relative or parts.is_absolute() or ".." in parts.parts:
        raise PathEscape(f"The path {relative!r} is not a relative path inside the workspace.")
    target = (root / parts).resolve()
    if not target.is_relative_to(root.resolve()):
        raise PathEscape(f"The path {relative!r} leads outside the workspace.")
    return target
