"""Count, for each named chunk, how many other chunks mention its symbol."""

from __future__ import annotations

import re
from collections import Counter
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
    token_sets = [frozenset(_WORD.findall(chunk.content)) for chunk in chunks]
    mentions: Counter[str] = Counter()
    for tokens in token_sets:
        mentions.update(tokens)
    result = []
    for chunk, tokens in zip(chunks, token_sets):
        if not _counts_references(chunk):
            result.append(chunk if chunk.references == 0 else replace(chunk, references=0))
            continue
        count = mentions[chunk.symbol] - (1 if chunk.symbol in tokens else 0)
        result.append(replace(chunk, references=count))
    return result
