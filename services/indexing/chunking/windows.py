"""Line-window chunking (the fallback for text, Markdown and languages without a grammar), and the
size bound every chunk obeys: at most `max_chars` characters, a longer line cut into pieces."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

from services.core.models import Chunk

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def split_lines(text: str) -> list[str]:
    """The file's lines as tree-sitter counts rows: split on "\\n" only. The text's line ends must be
    normalised first (see `normalise_newlines`)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def bounded_pieces(rows: Iterable[int], lines: list[str], max_chars: int) -> Iterator[tuple[int, int, str, bool]]:
    """Group rows into pieces of at most max_chars characters: (first row, last row, content, contiguous).
    A row longer than max_chars becomes several pieces of that one row, each not contiguous."""
    group: list[int] = []
    size = 0
    for row in rows:
        line = lines[row]
        if len(line) > max_chars:
            yield from _group_piece(group, lines)
            group, size = [], 0
            for start in range(0, len(line), max_chars):
                yield row, row, line[start:start + max_chars], False
            continue
        if group and size + len(line) > max_chars:  # size counts a newline after each row
            yield from _group_piece(group, lines)
            group, size = [], 0
        group.append(row)
        size += len(line) + 1
    yield from _group_piece(group, lines)


def _group_piece(group: list[int], lines: list[str]):
    if group:
        contiguous = group[-1] - group[0] + 1 == len(group)
        yield group[0], group[-1], "\n".join(lines[r] for r in group), contiguous


def window_spans(line_count: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """0-based [start, end) spans of `size` lines, each overlapping the previous one by `overlap`."""
    size = max(1, size)
    step = max(1, size - max(0, overlap))
    spans = []
    start = 0
    while start < line_count:
        end = min(line_count, start + size)
        spans.append((start, end))
        if end == line_count:
            break
        start += step
    return spans


def window_chunks(path: str, lines: list[str], language: str, file_hash: str, size: int, overlap: int,
                  max_chars: int) -> list[Chunk]:
    """Overlapping windows over the whole file; Markdown windows take the nearest heading as symbol."""
    headings = _headings(lines) if language == "markdown" else []
    chunks = []
    for start, end in window_spans(len(lines), size, overlap):
        symbol = _heading_for(headings, start, end)
        for first, last, content, contiguous in bounded_pieces(range(start, end), lines, max_chars):
            if not content.strip():
                continue
            chunks.append(Chunk(
                path=path, language=language, start_line=first + 1, end_line=last + 1, content=content,
                symbol=symbol, qualified_name=symbol, kind="text", contiguous=contiguous,
                content_hash=content_hash(content), file_hash=file_hash,
            ))
    return chunks


def _headings(lines: list[str]) -> list[tuple[int, str]]:
    found = []
    in_fence = False
    for number, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(line)
        if match:
            found.append((number, match.group(1)))
    return found


def _heading_for(headings: list[tuple[int, str]], start: int, end: int) -> str:
    """The first heading inside the window, else the last heading above it."""
    above = ""
    for number, title in headings:
        if number < start:
            above = title
        elif number < end:
            return title
        else:
            break
    return above
