"""Relevant files, LLM context strings and query suggestions, built from query results."""

from __future__ import annotations

import difflib

from services.core.models import RelevantFile, ResultChunk

CHARS_PER_TOKEN = 4  # a conservative estimate for code


def relevant_files(results: list[ResultChunk], max_files: int) -> list[RelevantFile]:
    """Group by file: best score, match count, summary, lines; by relevance then count."""
    groups: dict[str, list[ResultChunk]] = {}
    for r in results:
        groups.setdefault(r.chunk.path, []).append(r)
    files = [_file(path, items) for path, items in groups.items()]
    files.sort(key=lambda f: (-f.best_score, -f.match_count, f.path))
    return files[:max_files]


def _file(path: str, items: list[ResultChunk]) -> RelevantFile:
    best = max(items, key=lambda r: r.score)
    summary = best.chunk.docstring or best.chunk.content.strip()
    summary = summary if len(summary) <= 100 else summary[:100] + "..."
    lines = tuple(sorted({r.chunk.start_line for r in items}))
    return RelevantFile(path, best.chunk.language, best.score, len(items), summary, lines)


def build_context(results: list[ResultChunk], token_budget: int) -> str:
    """`path:start-end` headed blocks, overlapping chunks of a file merged, within the budget."""
    budget = token_budget * CHARS_PER_TOKEN
    parts, used = [], 0
    for path, start, end, text in _merged(results):
        block = f"### {path}:{start}-{end}\n{text.rstrip()}\n"
        if used + len(block) > budget:
            break
        parts.append(block)
        used += len(block)
    return "\n".join(parts)


def _merged(results: list[ResultChunk]) -> list[tuple[str, int, int, str]]:
    """Merge chunks of one file whose line spans overlap or touch; keep the best-ranked order."""
    spans: dict[str, list[list]] = {}
    order: list[tuple[str, int]] = []
    for r in results:
        c = r.chunk
        lines = c.content.splitlines()
        for span in spans.setdefault(c.path, []):
            if c.start_line <= span[1] + 1 and c.end_line >= span[0] - 1:
                _merge_into(span, c.start_line, lines)
                break
        else:
            spans[c.path].append([c.start_line, c.end_line, dict(enumerate(lines, c.start_line))])
            order.append((c.path, len(spans[c.path]) - 1))
    out = []
    for path, position in order:
        start, end, by_line = spans[path][position]
        out.append((path, start, end, "\n".join(by_line.get(n, "") for n in range(start, end + 1))))
    return out


def _merge_into(span: list, start: int, lines: list[str]) -> None:
    for number, line in enumerate(lines, start):
        span[2].setdefault(number, line)
    span[0] = min(span[0], start)
    span[1] = max(span[1], start + len(lines) - 1)


def suggestions(prefix: str, symbols: list[str], limit: int) -> list[str]:
    """Symbols starting with the prefix (case-insensitive) first, then fuzzy matches."""
    needle = prefix.strip().lower()
    if not needle:
        return []
    starts = [s for s in symbols if s.lower().startswith(needle)]
    contains = [s for s in symbols if needle in s.lower() and s not in starts]
    fuzzy = difflib.get_close_matches(prefix.strip(), symbols, n=limit, cutoff=0.6)
    return list(dict.fromkeys(starts + contains + fuzzy))[:limit]
