"""Standalone reranking (POST /v1/rerank): score arbitrary documents for a query with any strategy.

Each document becomes a text Chunk; its cosine similarity to the query (both embedded with the
query model) is the original score and ranking, BM25 over the documents feeds the strategies that
use keywords, and the chosen strategy reranks them through the query flow's own rerank step.
Documents are encoded a slice at a time: a `cancel` event (the client left) stops the work between slices,
and the encoder is free for a moment after each.
"""

from __future__ import annotations

import hashlib
import threading
import time

import bm25s
import numpy as np

from services.retrieval import search_steps
from services.core.errors import Cancelled
from services.core.messages import DocumentRerankResponse, DocumentScore
from services.core.models import Candidate, Chunk
from services.core.text import code_tokens
from services.retrieval.strategies.base import RerankRequest, RerankStrategy


def document_chunks(documents: list[str]) -> list[Chunk]:
    return [Chunk(path=f"document-{i}", language="text", start_line=1,
                  end_line=max(1, text.count("\n") + 1), content=text,
                  content_hash=hashlib.sha1(f"{i}:{text}".encode()).hexdigest())
            for i, text in enumerate(documents)]


def keyword_hits(query: str, chunks: list[Chunk], by_id: dict[str, Candidate]) -> list[Candidate]:
    """BM25 ranking of the documents for the query (only documents sharing a term with it)."""
    tokens = [code_tokens(c.content) or [""] for c in chunks]
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    query_tokens = [t for t in dict.fromkeys(code_tokens(query)) if t in retriever.vocab_dict]
    if not query_tokens:
        return []
    scores = retriever.get_scores(query_tokens)
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > 0]
    out = []
    for rank, i in enumerate(order, 1):
        known = by_id[chunks[i].id]
        out.append(Candidate(chunks[i], float(scores[i]), known.original_score, known.original_rank,
                             float(scores[i]), rank))
    return out


SLICE = 8  # documents encoded at a time


def encode_in_slices(embedder, texts: list[str], cancel: threading.Event | None) -> np.ndarray:
    """`embedder.encode(texts)`, a slice at a time; Cancelled when `cancel` is set between slices."""
    parts = []
    for start in range(0, len(texts), SLICE):
        if cancel is not None and cancel.is_set():
            raise Cancelled("The rerank request was cancelled.")
        parts.append(embedder.encode(texts[start:start + SLICE]))
    return np.concatenate(parts)


def rerank_documents(strategy: RerankStrategy, embedder, query: str, documents: list[str], top_k: int | None,
                     model: str, cancel: threading.Event | None = None) -> DocumentRerankResponse:
    start = time.perf_counter()
    chunks = document_chunks(documents)
    vectors = encode_in_slices(embedder, [query] + documents, cancel)
    similarities = vectors[1:] @ vectors[0]
    if cancel is not None and cancel.is_set():
        raise Cancelled("The rerank request was cancelled.")
    order = np.argsort(-similarities, kind="stable")
    candidates = [Candidate(chunks[i], float(similarities[i]), float(similarities[i]), rank)
                  for rank, i in enumerate(order, 1)]
    embedded = time.perf_counter()
    by_id = {c.chunk.id: c for c in candidates}
    keywords = keyword_hits(query, chunks, by_id) if strategy.uses_keyword_index else []
    wanted = top_k or len(documents)
    ranked, reranked, fallback = search_steps.rerank(strategy, RerankRequest(query, candidates, keywords, wanted))
    index_of = {c.id: i for i, c in enumerate(chunks)}
    results = [DocumentScore(index_of[c.chunk.id], c.score, c.chunk.content, by_id[c.chunk.id].original_score,
                             by_id[c.chunk.id].original_rank)
               for c in ranked[:wanted] if c.chunk.id in by_id]
    done = time.perf_counter()
    return DocumentRerankResponse(results, strategy.name, model if reranked else "", reranked, fallback,
                                  round((embedded - start) * 1000, 2), round((done - embedded) * 1000, 2),
                                  round((done - start) * 1000, 2))
