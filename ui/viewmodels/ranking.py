"""Texts for one ranked result: rank movement, symbol, location, score, and why it scores what it does.

Shared by the ranking tables (ui.ranking_model), the why view (ui.why_view) and the compare view.
"""

from __future__ import annotations

import re

from services.core.models import Chunk, ResultChunk, Signal

_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`*+#])\1{2,}\s*$")  # reStructuredText title underline


def movement(item: ResultChunk) -> tuple[str, int | None]:
    """Rank movement from the vector ranking to the reranked one: ("▲2", 2), ("▼1", -1), ("=", 0), ("new", None)."""
    if item.original_rank is None:
        return "new", None
    delta = item.original_rank - item.rank
    if delta > 0:
        return f"▲{delta}", delta
    if delta < 0:
        return f"▼{-delta}", delta
    return "=", 0


def heading_of(chunk: Chunk) -> str:
    """The first Markdown or reStructuredText heading inside a chunk's text, or ""."""
    lines = chunk.content.splitlines()
    for i, line in enumerate(lines):
        if match := _MARKDOWN_HEADING.match(line):
            return match.group(1)
        if line.strip() and i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]) \
                and len(lines[i + 1].strip()) >= len(line.strip()) and not _UNDERLINE.match(line):
            return line.strip()
    return ""


def symbol_text(item: ResultChunk) -> str:
    """The chunk's name; a nameless chunk (a text window, module code) by its heading or its lines,
    so five chunks of one file read differently."""
    chunk = item.chunk
    name = chunk.qualified_name or chunk.symbol
    if name:
        return name
    file = chunk.path.rsplit("/", 1)[-1]
    heading = heading_of(chunk) if chunk.kind == "text" else ""
    if heading:
        return f"§ {heading} · {file}"
    return f"{file} line {chunk.start_line}" if chunk.end_line <= chunk.start_line \
        else f"{file} lines {chunk.start_line}–{chunk.end_line}"


def fit_location(text: str, fits) -> str:
    """The longest of: the whole path, "…/" + file name and lines, file name and lines, file name and
    first line, file name, that `fits` (a width test); else the file name cut at its end. The file name
    is never lost to folders, nor the line number to the range's end."""
    path, _, rest = text.partition(":")
    name = path.rsplit("/", 1)[-1]
    suffix = f":{rest}" if rest else ""
    first = f"{name}:{rest.split('-')[0].split(' ')[0]}" if rest else None
    for candidate in (text, f"…/{name}{suffix}" if "/" in path else None, f"{name}{suffix}", first, name):
        if candidate and fits(candidate):
            return candidate
    return name


def elide_name(name: str, fits) -> str:
    """A qualified name that `fits` (a width test), cut in the middle so its first part (the class) stays
    and as much of its end (the member) as there is room for: "FixtureManager.…factories", never
    "…anager.parsefactories"; a name without dots, or whose first part leaves room for too little of the
    member (under TAIL_CHARS characters), is cut in its middle ("InMemoryNote…findById")."""
    if fits(name):
        return name
    head, dot, _ = name.partition(".")
    keep = f"{head}{dot}…" if dot else ""
    member = name.rsplit(".", 1)[-1]
    if keep and fits(keep + name[-min(TAIL_CHARS, len(member)):]):
        return keep + longest_tail(name[len(head) + 1:], lambda tail: fits(keep + tail))
    return middle(name, fits)


TAIL_CHARS = 5  # the least of a member's name worth keeping after its class


def longest_tail(text: str, fits) -> str:
    """The longest end of `text` that `fits` (by bisection on its length)."""
    low, high = 1, len(text)
    while low < high:
        size = (low + high + 1) // 2
        low, high = (size, high) if fits(text[-size:]) else (low, size - 1)
    return text[-low:]


def middle(text: str, fits) -> str:
    """`text` with its middle replaced by "…" until it `fits` (its first character and "…" at least)."""
    for cut in range(1, len(text)):
        left = (len(text) - cut + 1) // 2
        candidate = text[:left] + "…" + text[left + cut:]
        if fits(candidate):
            return candidate
    return text[:1] + "…"


def lines_text(start: int, end: int) -> str:
    """A chunk's lines as an editor writes them: "12-15", and "12" for one line (never "12-12")."""
    return str(start) if end <= start else f"{start}-{end}"


def location_text(item: ResultChunk) -> str:
    chunk = item.chunk
    stale = f" ({item.stale})" if item.stale else ""  # the file changed on disk since it was indexed
    return f"{chunk.path}:{lines_text(chunk.start_line, chunk.end_line)}{stale}"


def format_score(score: float | None) -> str:
    return "—" if score is None else f"{score:.3f}"


def steps(signals: tuple[Signal, ...]) -> list[tuple[Signal, float]]:
    """Each signal with how much it changed the running score (a 'set' counts from 0)."""
    out, score = [], 0.0
    for signal in signals:
        if signal.op == "set":
            after = signal.contribution
            change = after
        elif signal.op == "mul":
            after = score * signal.contribution
            change = after - score
        else:
            after = score + signal.contribution
            change = signal.contribution
        out.append((signal, change))
        score = after
    return out


def effect_text(signal: Signal) -> str:
    if signal.op == "set":
        return f"= {signal.contribution:.3f}"
    if signal.op == "mul":
        return f"× {signal.contribution:.2f}"
    return f"{'+' if signal.contribution >= 0 else '−'}{abs(signal.contribution):.3f}"


def rank_text(item: ResultChunk) -> str:
    was = "not in the vector ranking (keyword match)" if item.original_rank is None \
        else f"vector rank #{item.original_rank}"
    return f"#{item.rank} after reranking, {was} ({movement(item)[0]})"


def why_summary(item: ResultChunk, limit: int = 4) -> str:
    """One line of the biggest reasons, for tooltips: 'exact name +2.000 · cosine similarity = 0.620'."""
    ranked = sorted(steps(item.signals), key=lambda s: -abs(s[1]))[:limit]
    return " · ".join(f"{signal.name} {effect_text(signal)}" for signal, _ in ranked)
