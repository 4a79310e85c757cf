"""The encoder protocol and the backend registry.

A backend is one module in this package with a class decorated `@register`: it turns texts into
unit-length float32 vectors. `create_encoder` builds one from an `EncoderSpec`.
"""

from __future__ import annotations

import importlib
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
