"""Where the index's lines are now. A location the index holds (a go-to hit, a definition a chunk uses, a
reference's target) names the line its file had when it was indexed. When the file changed since, it is
read again (bounded: services/core/files.py), each indexed line is found where its text is now, and the
location says `stale` ("modified" or "deleted"), as query results do. One stat per file that is unchanged.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from services.core import files
from services.core.models import GotoHit, GraphAnswer, GraphFile, GraphLink

Located = TypeVar("Located", GotoHit, GraphLink)


def changed(root: Path, path: str, record) -> str:
    """"" when the file still has the size and mtime it was indexed with (or was never indexed), else
    "modified", or "deleted" when it is gone."""
    try:
        info = os.stat(root / path)
    except FileNotFoundError:
        return "deleted"
    except OSError:
        return ""
    same = record is None or (info.st_size, info.st_mtime_ns) == (record.size, record.mtime_ns)
    return "" if same else "modified"


def moved_lines(catalog, root: Path, path: str, record, limit: int = files.MAX_FILE_BYTES) -> dict[int, int] | None:
    """{indexed line: its line now} for a file changed since it was indexed (lines whose text is gone are
    absent); None when it is unchanged, or cannot be read (gone, or over `limit` now)."""
    if record is None or changed(root, path, record) != "modified":
        return None
    try:
        data = files.read_bytes(root / path, limit)
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() == record.file_hash:
        return None  # touched, not changed
    now: dict[str, list[int]] = defaultdict(list)
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        now[line.strip()].append(number)
    then: dict[int, str] = {}
    for chunk in catalog.chunks(path=path):
        if chunk.contiguous:
            then.update((chunk.start_line + i, line.strip()) for i, line in enumerate(chunk.content.split("\n")))
    return {old: min(now[text], key=lambda new: abs(new - old)) for old, text in then.items() if now.get(text)}


def read_text(root: Path, path: str, limit: int = files.MAX_FILE_BYTES) -> str:
    """A workspace file's text as it is now ("" when it is gone, unreadable, over `limit`, or not inside the
    (resolved) root)."""
    try:
        file = (root / path).resolve()
        if not file.is_relative_to(root):
            return ""
        return files.read_text(file, errors="replace", limit=limit)
    except OSError:  # gone, unreadable, too large or not a regular file (a FIFO would block for ever)
        return ""


def located(catalog, root: Path, items: list[Located], limit: int = files.MAX_FILE_BYTES) -> list[Located]:
    """Each hit or link at the line its text is on now, with `stale` set when its file changed since it was
    indexed; a line whose text is gone stays where the index put it (and says stale)."""
    moves = _moves(catalog, root, {item.path for item in items}, limit)
    return [_moved(item, *moves[item.path]) for item in items]


def located_answer(catalog, root: Path, answer: GraphAnswer, limit: int = files.MAX_FILE_BYTES) -> GraphAnswer:
    """A references or uses answer with its targets where they are now; for uses, each definition used too,
    and the lines of the asked chunk that use it (in the target's file)."""
    targets = located(catalog, root, answer.targets, limit)
    if answer.direction != "uses":
        return replace(answer, targets=targets)
    homes = {target.path for target in answer.targets}
    home_lines = _moves(catalog, root, homes, limit)[homes.pop()][1] if len(homes) == 1 else None
    groups = []
    for group in answer.files:
        links = located(catalog, root, group.links, limit)
        if home_lines:
            links = [replace(link, lines=tuple(sorted({home_lines.get(n, n) for n in link.lines}))) for link in links]
        groups.append(GraphFile(group.path, links))
    return replace(answer, targets=targets, files=groups)


def _moves(catalog, root: Path, paths: set[str], limit: int) -> dict[str, tuple[str, dict[int, int] | None]]:
    """Per path: (its state, {indexed line: line now} when it was modified and can be read)."""
    records = catalog.files(sorted(paths))
    out: dict[str, tuple[str, dict[int, int] | None]] = {}
    for path in paths:
        state = changed(root, path, records.get(path))
        out[path] = (state, moved_lines(catalog, root, path, records.get(path), limit) if state == "modified" else None)
    return out


def _moved(item: Any, state: str, lines: dict[int, int] | None) -> Any:  # a GotoHit or a GraphLink
    if not state:
        return item
    if isinstance(item, GotoHit):
        delta = (lines or {}).get(item.start_line, item.start_line) - item.start_line
        return replace(item, start_line=item.start_line + delta, end_line=item.end_line + delta, stale=state)
    return replace(item, line=(lines or {}).get(item.line, item.line), stale=state)
