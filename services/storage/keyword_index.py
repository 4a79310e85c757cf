"""BM25 keyword index (bm25s) over the same chunks as the vector index, persisted beside it.

Saved small: scores as float16 and document numbers as uint16 when they fit, compressed, and the
vocabulary and chunk ids compressed (on sympy 16.8 MB became 6.7 MB); loaded back at bm25s's own types."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import zlib
from pathlib import Path

import bm25s
import numpy as np

from services.core.errors import IndexStoreError
from services.core.models import Chunk
from services.core.text import code_tokens

IDS_FILE = "chunk_ids.json.z"
VOCAB_FILE = "vocab.json.z"
SCORES_FILE = "scores.npz"
logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG on import


def chunk_tokens(chunk: Chunk) -> list[str]:
    return code_tokens(f"{chunk.qualified_name} {chunk.docstring} {chunk.content}")


class KeywordIndex:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._retriever: bm25s.BM25 | None = None
        self._ids: list[str] = []
        self._lock = threading.Lock()

    def build(self, chunks: list[Chunk], persist: bool = True) -> None:
        """Rebuild from all chunks and save atomically (write aside, then swap folders).
        persist=False only replaces the one in memory (a provisional index while a run embeds)."""
        ids = [c.id for c in chunks]
        with self._lock:
            current, current_ids = self._retriever, self._ids
        if persist and current is not None and len(current_ids) == len(ids) and set(current_ids) == set(ids):
            retriever, ids = current, current_ids  # the one in memory holds these very chunks (an id names its text)
        else:
            retriever = bm25s.BM25()
            if chunks:
                retriever.index([chunk_tokens(c) or [""] for c in chunks], show_progress=False)
        if not persist:
            with self._lock:
                self._retriever, self._ids = (retriever if chunks else None), ids
            return
        staging = self.folder.with_name(self.folder.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        if chunks:
            retriever.save(str(staging), show_progress=False)
            _shrink(staging, len(chunks))
        _write_packed(staging / IDS_FILE, json.dumps(ids))
        shutil.rmtree(self.folder, ignore_errors=True)
        staging.rename(self.folder)
        with self._lock:
            self._retriever, self._ids = (retriever if chunks else None), ids

    def forget(self) -> None:
        """Drop the index in memory; the next search loads the saved one."""
        with self._lock:
            self._retriever, self._ids = None, []

    def _position(self, ids: list[str]) -> dict[str, int]:
        """Each id's row, built once per loaded index (a filter then costs its own size, not the index's)."""
        if getattr(self, "_positions_of", None) is not ids:
            self._positions, self._positions_of = {i: n for n, i in enumerate(ids)}, ids
        return self._positions

    def exists(self) -> bool:
        return (self.folder / IDS_FILE).exists()

    def _load(self) -> None:
        if self._retriever is not None or not self.exists():
            return
        try:
            ids = json.loads(_read_packed(self.folder / IDS_FILE))
            self._retriever, self._ids = (_load_retriever(self.folder) if ids else None), ids
        except Exception as error:  # garbled or truncated files
            raise IndexStoreError(f"the keyword index in {self.folder} cannot be read ({type(error).__name__}: "
                                  f"{' '.join(str(error).split())[:120]}). Run `knowledge-explorer index` "
                                  "to rebuild it.") from error

    def loaded_ids(self) -> list[str]:
        """The chunk ids of the saved index, loading it (raises IndexStoreError when it is unreadable)."""
        with self._lock:
            self._load()
            return list(self._ids)

    def search(self, query: str, k: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """Top-k (id, BM25 score) with score > 0; `allowed` restricts to those ids (filters inside)."""
        with self._lock:
            self._load()
            retriever, ids = self._retriever, self._ids
        tokens = [t for t in dict.fromkeys(code_tokens(query)) if t in getattr(retriever, "vocab_dict", {})]
        if retriever is None or not tokens or k <= 0:
            return []
        scores = retriever.get_scores(tokens)
        if allowed is not None:
            mask = np.zeros(len(ids), dtype=bool)
            mask[[n for n in map(self._position(ids).get, allowed) if n is not None]] = True
            scores = np.where(mask, scores, 0.0)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(ids[i], float(scores[i])) for i in top if scores[i] > 0]

    def search_weighted(self, weights: dict[str, float], k: int) -> list[tuple[str, float]]:
        """Top-k (id, score) where score = sum over tokens of weight x that token's BM25 score.

        For long questions: the caller picks the tokens and weighs them (identifiers over prose).
        """
        with self._lock:
            self._load()
            retriever, ids = self._retriever, self._ids
        vocab = getattr(retriever, "vocab_dict", {})
        tokens = {t: w for t, w in weights.items() if t in vocab and w > 0}
        if retriever is None or not tokens or k <= 0:
            return []
        scores = sum(w * retriever.get_scores([t]) for t, w in tokens.items())
        top = np.argsort(-scores, kind="stable")[:k]
        return [(ids[i], float(scores[i])) for i in top if scores[i] > 0]


def _write_packed(path: Path, text: str) -> None:
    path.write_bytes(zlib.compress(text.encode("utf-8"), 6))


def _read_packed(path: Path) -> str:
    return zlib.decompress(path.read_bytes()).decode("utf-8")


def _shrink(folder: Path, documents: int) -> None:
    """Rewrite what bm25s saved: the postings in smaller types, compressed into one file; the
    vocabulary compressed."""
    arrays = {name: np.load(folder / f"{name}.csc.index.npy") for name in ("data", "indices", "indptr")}
    small = np.uint16 if documents <= np.iinfo(np.uint16).max + 1 else np.int32
    np.savez_compressed(folder / SCORES_FILE, data=arrays["data"].astype(np.float16),
                        indices=arrays["indices"].astype(small), indptr=arrays["indptr"])
    for name in arrays:
        (folder / f"{name}.csc.index.npy").unlink()
    vocab = folder / "vocab.index.json"
    _write_packed(folder / VOCAB_FILE, vocab.read_text(encoding="utf-8"))
    vocab.unlink()


def _load_retriever(folder: Path) -> bm25s.BM25:
    """What bm25s.BM25.load does for our (lucene) method, from the files _shrink wrote."""
    params = json.loads((folder / "params.index.json").read_text())
    version, documents = params.pop("version", None), params.pop("num_docs", None)
    retriever = bm25s.BM25(**params)
    retriever._original_version = version
    retriever.vocab_dict = json.loads(_read_packed(folder / VOCAB_FILE))
    retriever.unique_token_ids_set = set(retriever.vocab_dict.values())
    with np.load(folder / SCORES_FILE) as arrays:
        retriever.scores = {"data": arrays["data"].astype(np.float32), "indices": arrays["indices"].astype(np.int32),
                            "indptr": arrays["indptr"], "num_docs": documents}
    retriever.nonoccurrence_array = None
    return retriever
