"""Count, for each named chunk, how many other chunks mention its symbol."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from services.core.models import Chunk

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNCOUNTED_KINDS = frozenset({"module", "text"})
MIN_SYMBOL_LENGTH = 3
COMMON_SYMBOLS = frozenset({
    "init", "new", "main", "get", "set", "run", "add", "len", "str", "self", "this", "test",
    "call", "next", "iter", "data", "name", "value", "type", "item", "list", "dict", "map",
    "__init__", "__str__", "__repr__", "__eq__", "__hash__", "toString", "equals", "hashCode",
    "constructor", "default", "none", "true", "false", "null", "Dispose",
})


def _counts_references(chunk: Chunk) -> bool:
    symbol = chunk.symbol
    return (chunk.kind not in _UNCOUNTED_KINDS and len(symbol) >= MIN_SYMBOL_LENGTH
            and symbol not in COMMON_SYMBOLS)


def count_references(chunks: list[Chunk]) -> list[Chunk]:
    """Return the chunks with `references` = number of OTHER chunks whose text has the symbol as a word."""
    counts = reference_counts([chunks])
    return [chunk if chunk.references == counts.get(chunk.id, 0) else replace(chunk, references=counts.get(chunk.id, 0))
            for chunk in chunks]


def reference_counts(batches: Iterable[list[Chunk]]) -> dict[str, int]:
    """`count_references` over chunks read a batch at a time, as {chunk id: references} for the named chunks
    that count them: one pass, keeping the words' chunk counts and one small row per named chunk, never
    every chunk's text or words at once (at a million chunks those took gigabytes)."""
    mentions: Counter[str] = Counter()
    named: list[tuple[str, str, bool]] = []  # (chunk id, symbol, whether its own text has it)
    for chunks in batches:
        for chunk in chunks:
            tokens = set(_WORD.findall(chunk.content))
            mentions.update(tokens)
            if _counts_references(chunk):
                named.append((chunk.id, chunk.symbol, chunk.symbol in tokens))
    return {chunk_id: mentions[symbol] - own for chunk_id, symbol, own in named}
