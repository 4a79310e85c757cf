"""The encoder's vectors of new chunks: from the data dir's shared vector cache where it holds them, else encoded.

Every cached row is checked against its checksum by the cache (services/storage/vector_cache.py); a rebuild
also embeds a sample of its first hits again and drops the cache for the rest of the run when they disagree.
The vectors are full (unprojected): the index projects them for its store.
"""

from __future__ import annotations

import logging

import numpy as np

from services.core.models import Chunk
from services.encoders.embedder import Embedder, chunk_text
from services.storage.vector_cache import VectorCache

CACHE_CHECK_SAMPLE = 8  # cached vectors a rebuild embeds again to check the shared cache
# the int8 backend's vector of a text moves with its batch mates (cosine 0.97-1.0, tests/test_vector_cache.py);
# a vector of another text is far below
CACHE_CHECK_COSINE = 0.9

log = logging.getLogger(__name__)


class VectorMaker:
    """Makes one run's vectors. `cache`: the shared vector cache; None encodes every chunk."""

    def __init__(self, embedder: Embedder, cache: VectorCache | None) -> None:
        self.embedder = embedder
        self.cache = cache
        self.space: int | None = None  # the encoder's vector space in the cache
        self.checked = False  # a rebuild checked a sample of the shared cache against the encoder
        self.distrusted = False  # ... and found it wrong: not used for the rest of the run
        self.dropped_before = cache.dropped if cache is not None else 0  # rows failing their check before the run

    def open(self) -> None:
        """Find the encoder's space in the cache; once the model is loaded."""
        if self.cache is not None:
            self.space = self.cache.space(self.embedder.vector_space(), self.embedder.dimension)

    def cached(self, chunks: list[Chunk], check: bool = False) -> dict[int, np.ndarray]:
        """The cache's vectors of `chunks`, by position; none without a cache (or once it was found wrong).
        `check` (a rebuild): the first hits of the run are checked against the encoder."""
        cache = self.cache
        if cache is None or not chunks or self.distrusted:
            return {}
        texts = [chunk_text(c) for c in chunks]
        found = cache.get(self.space, self.embedder.dimension, texts)
        if found and check and not self.checked:
            self.checked = True
            self._check(cache, found, texts)
        return {} if self.distrusted else found

    def encode(self, chunks: list[Chunk]) -> np.ndarray:
        """Encode, and commit the vectors to the cache at once, before any store sees them."""
        vectors = self.embedder.encode_chunks(chunks)
        if self.cache is not None:
            self.cache.put(self.space, [chunk_text(c) for c in chunks], vectors)
        return vectors

    def make(self, chunks: list[Chunk], check: bool = False) -> tuple[np.ndarray, set[int]]:
        """The vectors of `chunks`, from the cache where it has them, and the positions that came from it."""
        cached = self.cached(chunks, check)
        vectors = np.zeros((len(chunks), self.embedder.dimension), dtype=np.float32)
        misses = [i for i in range(len(chunks)) if i not in cached]
        for i, vector in cached.items():
            vectors[i] = vector
        if misses:
            vectors[misses] = self.encode([chunks[i] for i in misses])
        return vectors, set(cached)

    def repair_note(self) -> str:
        """What this run found wrong in the cache and did about it ("" when nothing)."""
        dropped = (self.cache.dropped - self.dropped_before) if self.cache is not None else 0
        return ((f"held {dropped} vectors that failed their check (dropped, embedded again)" if dropped else "")
                + (" and " if dropped and self.distrusted else "")
                + ("disagreed with the encoder (not used by this rebuild)" if self.distrusted else ""))

    def _check(self, cache: VectorCache, found: dict[int, np.ndarray], texts: list[str]) -> None:
        """Embed a sample of the hits again; any that disagrees drops those rows, and the cache is not used
        for the rest of the run."""
        sample = sorted(found)[:CACHE_CHECK_SAMPLE]
        fresh = self.embedder.encode([texts[i] for i in sample])
        wrong = [i for i, vector in zip(sample, fresh) if _cosine(found[i], vector) < CACHE_CHECK_COSINE]
        if wrong:
            log.warning("the shared vector cache disagrees with the encoder on %d of %d sampled vectors: "
                        "not used by this rebuild", len(wrong), len(sample))
            cache.forget(self.space, [texts[i] for i in wrong])
            self.distrusted = True


def _cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0
