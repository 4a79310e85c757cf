"""Path confinement: paths in requests (path globs, file reads) stay inside their workspace folder:
no absolute paths, no `..`, no symlink leading out; malformed paths (a NUL byte, too long, not encodable)
are refused as such."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from services.core.errors import PathEscape

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


def check_path_text(text: str) -> None:
    """PathEscape (400) for a path no file system could hold: a NUL byte, over 4096 characters, a name over
    255 bytes, or characters the file system cannot encode."""
    if "\x00" in text:
        raise PathEscape("The path contains a NUL byte.")
    if len(text) > MAX_PATH_CHARS:
        raise PathEscape(f"The path is longer than {MAX_PATH_CHARS} characters.")
    try:
        encoded = os.fsencode(text)
    except UnicodeError:
        raise PathEscape("The path has characters the file system cannot encode.") from None
    if any(len(name) > MAX_NAME_BYTES for name in encoded.replace(b"\\", b"/").split(b"/")):
        raise PathEscape(f"The path has a name longer than {MAX_NAME_BYTES} bytes.")


def check_glob(glob: str) -> None:
    """A path filter may only match inside the workspace: relative, no `..` segment."""
    check_path_text(glob)
    for pattern in (p.strip() for p in glob.split(",")):
        if pattern.startswith(("/", "\\", "~")) or ".." in PurePosixPath(pattern.replace("\\", "/")).parts \
                or (len(pattern) > 1 and pattern[1] == ":"):
            raise PathEscape(f"The path filter {pattern!r} points outside the workspace: use a relative "
                             "pattern such as 'src/*.py'.")


# what names a place outside the workspace though Posix reads it as relative: `~/x`, `file:///x`, `C:\\x`
ELSEWHERE = re.compile(r"~|[A-Za-z][A-Za-z0-9+.-]*://|[A-Za-z]:([/\\]|$)")


def check_relative_path(relative: str) -> PurePosixPath:
    """A workspace-relative path as text (a file to read, a labelled result): well formed (check_path_text),
    not empty, not absolute, no `..`, not a home (`~`), URL or drive path; PathEscape otherwise."""
    check_path_text(relative)
    parts = PurePosixPath(relative.replace("\\", "/"))
    if not relative or parts.is_absolute() or ".." in parts.parts or ELSEWHERE.match(relative):
        raise PathEscape(f"The path {relative!r} is not a relative path inside the workspace: give it as "
                         "the workspace shows it, e.g. 'src/app.py'.")
    return parts


def confined(root: Path, relative: str) -> Path:
    """`root / relative`, resolved (symlinks followed), or PathEscape when it leaves `root` or is malformed."""
    parts = check_relative_path(relative)
    try:
        target = (root / parts).resolve()
    except (OSError, RuntimeError):  # a symlink loop, or a path the OS refuses
        raise PathEscape(f"The path {relative!r} cannot be resolved inside the workspace.") from None
    if not target.is_relative_to(root.resolve()):
        raise PathEscape(f"The path {relative!r} leads outside the workspace.")
    return target
