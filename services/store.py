"""ChromaDB vector store: embedded PersistentClient by default, HttpClient for a `chroma run` server.

Embeddings are always passed in; the collection has no embedding function, so Chroma's default
(which would download a model) never runs. Telemetry is off.

Lean: Chroma holds ids, vectors and the metadata the filters need (path, language); no documents.
A chunk's text lives once, in the catalogue, which serves chunks by id.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import chromadb
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.config import Settings as ChromaSettings

from services.errors import KnowledgeError
from services.models import Chunk



def chroma_settings() -> ChromaSettings:
    """A fresh settings object for each client: chromadb's clients modify the one they are given
    (an HttpClient would turn a later PersistentClient into a server client)."""
    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)
# Chroma's native calls hold the GIL, and two threads inside Chroma at once (a query beside an
# indexing write) were seen to hold it for over a second. One lock, taken before entering Chroma
# (waiting on it releases the GIL), keeps every stall down to a single call's own length.
CHROMA_CALL = threading.RLock()
WRITE_SLICE = 16  # small writes keep the GUI thread's waits for the GIL short


def make_client(path: Path | None, url: str | None):
    if url:
        parsed = urlparse(url)
        if not parsed.hostname:
            raise KnowledgeError(f"--chroma-url {url!r} is not a URL like http://127.0.0.1:8000")
        return chromadb.HttpClient(host=parsed.hostname, port=parsed.port or 8000,
                                   ssl=parsed.scheme == "https", settings=chroma_settings())
    path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=chroma_settings())


def forget_client(path: Path) -> None:
    """Drop Chroma's cached system for a folder (after the folder was deleted under us)."""
    SharedSystemClient._identifier_to_system.pop(str(path), None)


class VectorStore:
    """One Chroma collection per workspace."""

    def __init__(self, client, collection_name: str) -> None:
        self.client = client
        self.name = collection_name
        self._collection = None
        self._lock = threading.Lock()

    def collection(self):
        with self._lock, CHROMA_CALL:
            if self._collection is None:
                self._collection = self.client.get_or_create_collection(
                    self.name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                )
            return self._collection

    def drop(self) -> None:
        with self._lock, CHROMA_CALL:
            self._collection = None
            try:
                self.client.delete_collection(self.name)
            except Exception:  # it did not exist
                pass

    def upsert(self, chunks: list[Chunk], embeddings) -> None:
        for start in range(0, len(chunks), WRITE_SLICE):
            part = chunks[start:start + WRITE_SLICE]
            with CHROMA_CALL:
                self.collection().upsert(
                    ids=[c.id for c in part],
                    embeddings=embeddings[start:start + WRITE_SLICE],
                    metadatas=[{"path": c.path, "language": c.language} for c in part],
                )
            time.sleep(0)  # Chroma holds the GIL while it writes: let the GUI thread run between slices

    def delete(self, ids: list[str]) -> None:
        for start in range(0, len(ids), WRITE_SLICE):
            with CHROMA_CALL:
                self.collection().delete(ids=ids[start:start + WRITE_SLICE])
            time.sleep(0)

    def embeddings(self, ids: list[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        with CHROMA_CALL:
            got = self.collection().get(ids=ids, include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"]))

    def all_ids(self) -> set[str]:
        with CHROMA_CALL:
            return set(self.collection().get(include=[])["ids"])

    def count(self) -> int:
        with CHROMA_CALL:
            return self.collection().count()

    def search(self, embedding, n: int, paths: list[str] | None = None,
               languages: list[str] | None = None) -> list[tuple[str, float]]:
        """Nearest chunks as (id, cosine similarity), filters applied inside the search."""
        if n <= 0 or paths == []:
            return []
        with CHROMA_CALL:
            result = self.collection().query(
                query_embeddings=[embedding], n_results=n, where=_where(paths, languages), include=["distances"],
            )
        return [(i, 1.0 - d) for i, d in zip(result["ids"][0], result["distances"][0])]


def _where(paths: list[str] | None, languages: list[str] | None) -> dict | None:
    clauses = []
    if paths is not None:
        clauses.append({"path": {"$in": paths}})
    if languages:
        clauses.append({"language": {"$in": list(languages)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
