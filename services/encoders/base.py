"""The encoder protocol, the backend registry and what the runtimes share to batch and pool.

A backend is one module in this package with a class decorated `@register`: it turns texts into
unit-length float32 vectors. `create_encoder` builds one from an `EncoderSpec`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np


@dataclass(frozen=True)
class EncoderSpec:
    source: str  # a local model folder or a cached Hugging Face id
    max_seq_length: int = 256
    batch_size: int = 32
    device: str = "cpu"  # cpu, cuda, mps (already chosen, see device.choose_device)
    cache_dir: Path | None = None  # where backends keep what they derive (exported models)
    threads: int = 0  # intra-op threads; 0 = one per core


class Encoder(Protocol):
    """Everything the embedder (services/encoders/embedder.py) reads of an encoder."""

    name: str  # the backend: torch, onnx, onnx-int8, openvino, openvino-int8
    device: str  # where it runs: cpu, cuda, mps
    note: str  # what the user should know about it ("" when nothing); the embedder adds its own
    calls_at_once: int  # encode() calls that may run at once, each from its own thread (1: one after another)

    def __init__(self, spec: EncoderSpec) -> None: ...

    @property
    def identity(self) -> str:
        """What, besides the model's files, decides its vectors (services/storage/vector_cache.py)."""

    @property
    def dimension(self) -> int: ...

    @property
    def call_size(self) -> int:
        """Texts per encode() call that give each of its parallel lanes a whole batch (the indexer's slice)."""

    def describe(self) -> str:
        """What runs, for progress lines: "torch on cuda, fp16, batch 512", "onnx-int8 on cpu"."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""


_REGISTRY: dict[str, type[Encoder]] = {}
E = TypeVar("E", bound=type[Encoder])
_DIGESTS: dict[str, str] = {}  # files' stamps (path, size, mtime) -> the hash of their names and content


def content_digest(root: Path, files: list[Path]) -> str:
    """BLAKE2b-128 of the files' names (relative to `root`) and content; computed once per process for
    each set of file stamps, so an unchanged model costs a few stats (its identity, for the vector cache)."""
    stamp = json.dumps([str(root.resolve())] + [(str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                                                for p in files])
    if stamp not in _DIGESTS:
        digest = hashlib.blake2b(digest_size=16)
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            with open(path, "rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
        _DIGESTS[stamp] = digest.hexdigest()
    return _DIGESTS[stamp]


def length_sorted(texts: list[str], size: int) -> list[list[int]]:
    """The positions of `texts` in batches of `size`, longest first: texts of similar length pad less."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start:start + size] for start in range(0, len(order), size)]


def model_inputs(batch: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The tokenizer's arrays the model takes (`names`), as the int64 its export expects."""
    return {name: batch[name].astype(np.int64) for name in names}


def pooled(hidden: np.ndarray, attention_mask: np.ndarray, pooling: str = "mean") -> np.ndarray:
    """Token embeddings to unit-length float32 vectors, as sentence-transformers' Pooling + Normalize do:
    the mean over the real tokens, or the first token's ("cls")."""
    if pooling == "cls":
        vectors = hidden[:, 0]
    else:
        mask = attention_mask[..., None].astype(np.float32)
        vectors = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    return (vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)


def gathered(count: int, parts: list[list[int]], vectors: list[np.ndarray]) -> np.ndarray:
    """One row per text: each batch's vectors put back at its texts' positions."""
    out = np.zeros((count, vectors[0].shape[1] if vectors else 1), dtype=np.float32)
    for part, rows in zip(parts, vectors):
        out[part] = rows
    return out


def register(cls: E) -> E:
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    package = Path(__file__).parent
    for module in pkgutil.iter_modules([str(package)]):
        if module.name not in ("base", "device"):
            importlib.import_module(f"services.encoders.{module.name}")


def backend_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def create_encoder(backend: str, spec: EncoderSpec) -> Encoder:
    """Raises KeyError for an unknown backend; a backend raises what its loading raises."""
    _load_all()
    return _REGISTRY[backend](spec)
