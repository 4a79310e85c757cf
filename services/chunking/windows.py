"""Line-window chunking: the fallback for text, Markdown and languages without a grammar."""

from __future__ import annotations

import hashlib
import re

from services.models import Chunk

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


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


def window_chunks(path: str, text: str, language: str, file_hash: str, size: int, overlap: int) -> list[Chunk]:
    """Overlapping windows over the whole file; Markdown windows take the nearest heading as symbol."""
    lines = text.splitlines()
    headings = _headings(lines) if language == "markdown" else []
    chunks = []
    for start, end in window_spans(len(lines), size, overlap):
        content = "\n".join(lines[start:end])
        if not content.strip():
            continue
        symbol = _heading_for(headings, start, end)
        chunks.append(Chunk(
            path=path, language=language, start_line=start + 1, end_line=end, content=content,
            symbol=symbol, qualified_name=symbol, kind="text",
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
