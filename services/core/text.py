"""Code-aware text helpers shared by the keyword index and the keyword-based strategies."""

from __future__ import annotations

import re
from functools import lru_cache

# reranking-strategies.md, KeywordBoostStrategy.StopWords (a superset of the RRF list).
STOP_WORDS = frozenset("""
a an the is are was were be been being have has had do does did will would could should may might
must shall can need dare ought used to of in for on with at by from as into through during before
after above below between under again further then once where how what which who whom this that
these those am or and but if because until while about against each few more most other some such
no nor not only own same so than too very just also now here there when why all any both every
""".split())

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")
_QUERY_SPLIT = re.compile(r"[\s.,;:!?\-()\[\]{}\"']+")


def split_identifier(word: str) -> list[str]:
    """'parseHTTPResponse_v2' -> ['parse', 'http', 'response', 'v', '2'] (lower case)."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL_PARTS.findall(piece))
    return parts


def code_tokens(text: str) -> list[str]:
    """Tokens for BM25: each identifier whole (lower case) plus its camelCase/snake_case parts."""
    tokens: list[str] = []
    for word in _IDENTIFIER.findall(text):
        tokens.extend(_word_tokens(word))
    return tokens


@lru_cache(maxsize=1 << 17)
def _word_tokens(word: str) -> tuple[str, ...]:
    """One identifier's tokens (words repeat a lot: splitting each once makes tokenising ~3x faster)."""
    whole = word.lower().strip("_")
    if not whole:
        return ()
    parts = split_identifier(word)
    return (whole, *(p for p in parts if p != whole)) if len(parts) > 1 else (whole,)


def query_keywords(query: str) -> list[str]:
    """Keywords as in the spec's ExtractKeywords: words > 2 chars, no stop words, camelCase parts added."""
    words = [w for w in _QUERY_SPLIT.split(query) if w]
    keywords = [w.lower() for w in words if len(w) > 2 and w.lower() not in STOP_WORDS]
    for word in (w for w in words if len(w) > 3):
        keywords.extend(p for p in split_identifier(word) if len(p) > 2 and p not in STOP_WORDS)
    return list(dict.fromkeys(keywords))
