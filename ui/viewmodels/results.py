"""Texts about a query's result: the status line, stage timings, and why nothing came back."""

from __future__ import annotations

from services.core.models import Chunk, QueryResult, ResultChunk

STAGES = ("embed", "search", "rerank", "expand")


def timings_text(result: QueryResult) -> str:
    parts = [f"{stage} {result.timings_ms[stage]:.0f} ms" for stage in STAGES if stage in result.timings_ms]
    parts += [f"{k} {v:.0f} ms" for k, v in result.timings_ms.items() if k not in STAGES and k != "total"]
    total = result.timings_ms.get("total")
    if total is not None:
        parts.append(f"total {total:.0f} ms")
    return " · ".join(parts)


def one_line(text: str, limit: int = 80) -> str:
    """A question as one line for a status bar: whitespace runs (newlines of a pasted traceback
    included) become one space, and a long one is cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def searched_text(result: QueryResult) -> str:
    """"7,206 chunks searched", or while a first index embeds, what the vector search really covered:
    "searched 360 of 7,206 chunks with vectors (5 %); keyword search covers all"."""
    total, with_vectors = result.total_chunks_searched, result.chunks_with_vectors
    if with_vectors is None or with_vectors >= total:
        return f"{total:,} chunks searched"
    share = min(99, round(100 * with_vectors / total)) if total else 0
    return f"searched {with_vectors:,} of {total:,} chunks with vectors ({share} %); keyword search covers all"


def summary_text(result: QueryResult, filters: str) -> str:
    """The status line: how many results, out of how many chunks, reranked or why not, filters."""
    count = len(result.results)
    summary = f"{count} result{'s' if count != 1 else ''} for “{one_line(result.question)}” · "
    if result.chunks_with_vectors is None or result.chunks_with_vectors >= result.total_chunks_searched:
        summary += f"{result.chunks_above_threshold} above threshold of {result.total_chunks_searched:,} chunks"
    else:
        summary += f"{result.chunks_above_threshold} above threshold · {searched_text(result)}"
    if result.warning:
        summary = f"Warning: {result.warning} · " + summary
    if result.fallback_reason:
        summary += f" · not reranked: {result.fallback_reason}"
    if filters:
        summary += f" · filtered: {filters}"
    return summary


def is_empty(result: QueryResult) -> bool:
    return not result.results and not result.original


def empty_result_text(result: QueryResult, filters: str) -> str:
    """Why a question got no results: what the threshold and each filter removed, the closest chunk."""
    removed = result.removed
    parts = []
    for key, words in (("languages", "the language filter"), ("path", "the path filter")):
        if removed.get(key):
            parts.append(f"{words} excluded {removed[key]} of the nearest chunks above the threshold")
    if removed.get("threshold"):
        parts.append(f"{removed['threshold']} candidates scored below the relevance threshold")
    text = "No results: " + ("; ".join(parts) if parts else "nothing in the index matched") + "."
    if result.warning:
        text = f"No results: {result.warning}."
    closest = result.below_threshold
    if closest is not None:
        name = closest.chunk.qualified_name or closest.chunk.path
        text += (f" Closest: {name} ({closest.chunk.path}:{closest.chunk.start_line}), "
                 f"similarity {closest.original_score:.2f}.")
    if filters:
        text += f" Filters on: {filters}."
    return text


def same_chunk_row(chunk: Chunk, rows: list[ResultChunk]) -> int | None:
    """The row of `chunk` in a refreshed ranking: the same id, else (an edit changed its lines or text) the
    same definition (path, qualified name, kind); None when it left the list."""
    for matches in (lambda c: c.id == chunk.id,
                    lambda c: (c.path, c.qualified_name or c.symbol, c.kind)
                    == (chunk.path, chunk.qualified_name or chunk.symbol, chunk.kind)):
        row = next((n for n, r in enumerate(rows) if matches(r.chunk)), None)
        if row is not None:
            return row
    return None
