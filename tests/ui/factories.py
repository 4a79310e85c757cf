"""Real QueryResult / IndexHealth objects built by hand for view tests that need data, not the engine."""

from __future__ import annotations

import hashlib

from services.core.models import Chunk, IndexHealth, QueryResult, ResultChunk, SkippedFile, StaleFile


def chunk(path: str, start: int, end: int, symbol: str, kind: str = "function",
          language: str = "python") -> Chunk:
    content = "\n".join(f"line {n}" for n in range(start, end + 1))
    digest = hashlib.sha256(f"{path}{start}{content}".encode()).hexdigest()
    return Chunk(path=path, language=language, start_line=start, end_line=end, content=content,
                 symbol=symbol.rsplit(".", 1)[-1], qualified_name=symbol, kind=kind,
                 content_hash=digest)


SOURCE = '''import json


class Store:
    """Keeps notes on disk."""

    def save(self, note):
        data = json.dumps(note)
        with open(self.path, "w") as f:
            f.write(data)

    def load(self):
        return json.load(open(self.path))
'''


def sample_result() -> QueryResult:
    """Vector order A, B, C, D; reranked order C, A, E (new), B; D dropped."""
    a = chunk("notes/store.py", 7, 10, "Store.save", "method")
    b = chunk("notes/store.py", 12, 13, "Store.load", "method")
    c = chunk("notes/index.py", 20, 31, "Index.add", "method")
    d = chunk("README.md", 1, 12, "", "text", "markdown")
    e = chunk("notes/sync.go", 5, 18, "SyncNotes", "function", "go")
    context_a = "\n".join(SOURCE.splitlines()[1:13])  # lines 2..13
    original = [
        ResultChunk(a, 1, 0.71, 1, 0.71, context_a, 2),
        ResultChunk(b, 2, 0.66, 2, 0.66, "", 0),
        ResultChunk(c, 3, 0.61, 3, 0.61, "", 0),
        ResultChunk(d, 4, 0.55, 4, 0.55, "", 0),
    ]
    results = [
        ResultChunk(c, 1, 0.93, 3, 0.61, "", 0),
        ResultChunk(a, 2, 0.88, 1, 0.71, context_a, 2),
        ResultChunk(e, 3, 0.52, None, None, "", 0),
        ResultChunk(b, 4, 0.41, 2, 0.66, "", 0),
    ]
    return QueryResult(question="save notes", strategy="hybrid", results=results, original=original,
                       relevant_files=["notes/store.py"], total_chunks_searched=120,
                       chunks_above_threshold=9, reranked=True, fallback_reason=None, cache_hit=False,
                       timings_ms={"embed": 12.0, "search": 3.5, "rerank": 1.2, "expand": 0.8,
                                   "total": 18.0})


def sample_health(**changes) -> IndexHealth:
    base = dict(workspace="/tmp/ws", indexed=True, files=12, chunks=80,
                languages={"python": 50, "go": 30}, model="all-MiniLM-L6-v2", dimension=384,
                created_at="2026-01-01T10:00:00+00:00", updated_at="2026-01-02T10:00:00+00:00",
                size_bytes=2_400_000)
    base.update(changes)
    base.setdefault("state", "missing" if not base["indexed"] else "stale" if base.get("stale_files") else "ready")
    return IndexHealth(**base)


STALE = (StaleFile("notes/new.py", "new"), StaleFile("notes/old.py", "modified"))
SKIPPED = (SkippedFile("assets/logo.png", "binary"), SkippedFile("dump.sql", "too large (2.3 MiB > 1 MiB)"))
