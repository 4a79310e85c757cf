"""The encoder protocol and the backend registry.

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
from typing import Protocol

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
    name: str
    device: str

    @property
    def dimension(self) -> int: ...

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""


_REGISTRY: dict[str, type] = {}
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


def register(cls: type) -> type:
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
