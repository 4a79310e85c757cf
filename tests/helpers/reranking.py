"""Hand-made chunks and candidates for strategy tests."""

from __future__ import annotations

import hashlib

from services.core.models import Candidate, Chunk
from services.retrieval.strategies import RerankRequest

LONG_BODY = "\n".join(f"    line_{i} = compute(value_{i})" for i in range(6))


def chunk(name: str, content: str | None = None, *, kind: str = "function", bases=(), docstring: str = "",
          references: int = 0, path: str | None = None, qualified_name: str = "") -> Chunk:
    body = content if content is not None else f"def {name}():\n{LONG_BODY}\n"
    return Chunk(path=path or f"src/{name}.py", language="python", start_line=1,
                 end_line=body.count("\n") + 1, content=body, symbol=name,
                 qualified_name=qualified_name or name, kind=kind, bases=tuple(bases),
                 docstring=docstring, references=references,
                 content_hash=hashlib.sha256(f"{name}\0{body}".encode()).hexdigest())


def ranked(chunks: list[Chunk], scores: list[float]) -> list[Candidate]:
    """Vector-search candidates in the given order (rank 1 first)."""
    return [Candidate(chunk=c, score=s, original_score=s, original_rank=i)
            for i, (c, s) in enumerate(zip(chunks, scores), start=1)]


def keyword_hits(chunks: list[Chunk], scores: list[float], semantic: list[Candidate] = ()) -> list[Candidate]:
    """BM25 hits; chunks also in `semantic` carry its original score and rank."""
    known = {c.chunk.id: c for c in semantic}
    hits = []
    for rank, (c, s) in enumerate(zip(chunks, scores), start=1):
        base = known.get(c.id)
        hits.append(Candidate(chunk=c, score=s,
                              original_score=base.original_score if base else None,
                              original_rank=base.original_rank if base else None,
                              keyword_score=s, keyword_rank=rank))
    return hits


def request(query: str, candidates: list[Candidate], hits: list[Candidate] = (), top_k: int = 10) -> RerankRequest:
    """A request without a workspace (no StrategyContext): what the pool-only strategies need."""
    return RerankRequest(query=query, candidates=list(candidates), keyword_hits=list(hits), top_k=top_k)


def names(candidates: list[Candidate]) -> list[str]:
    return [c.chunk.symbol for c in candidates]


def by_name(candidates: list[Candidate]) -> dict[str, Candidate]:
    return {c.chunk.symbol: c for c in candidates}
