"""Breadcrumbs above the code pane, Qt-free: where the caret is in its file ("fixtures.py › FixtureRequest ›
getfixturevalue"), from the chunks the index has for the file (classes, functions, methods, sections)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from services.core.models import ResultChunk

SEPARATOR = " › "


@dataclass(frozen=True)
class Crumb:
    """One step of the path: its text, and the chunk it opens (None: the file itself, whose outline it opens)."""

    text: str
    item: ResultChunk | None


def innermost(items: list[ResultChunk], line: int) -> ResultChunk | None:
    """The smallest named chunk whose lines hold `line` (a method before its class), None when none does."""
    holding = [i for i in items if i.chunk.start_line <= line <= i.chunk.end_line
               and (i.chunk.qualified_name or i.chunk.symbol)]
    if not holding:
        return None
    return min(holding, key=lambda i: (i.chunk.end_line - i.chunk.start_line, -i.chunk.start_line))


def crumbs(path: str, items: list[ResultChunk], line: int) -> list[Crumb]:
    """The file, then each enclosing name of the caret's line (`Class`, `Class.method`), each opening the chunk
    of that name when the file has one."""
    steps = [Crumb(PurePosixPath(path).name or path, None)]
    inner = innermost(items, line)
    if inner is None:
        return steps
    parts = (inner.chunk.qualified_name or inner.chunk.symbol).split(".")
    by_name = {i.chunk.qualified_name: i for i in items if i.chunk.qualified_name}
    for n in range(1, len(parts) + 1):
        name = ".".join(parts[:n])
        steps.append(Crumb(parts[n - 1], inner if n == len(parts) else by_name.get(name)))
    return steps
