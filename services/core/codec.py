"""One JSON codec for the engine's dataclasses, used by the HTTP server and its clients.

pydantic's TypeAdapter validates and builds (nested, frozen) dataclasses from JSON and dumps them
back, so server and client share one definition of every message: services.core.models.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

__all__ = ["decode", "encode", "schema", "ValidationError"]


@lru_cache(maxsize=None)
def _adapter(kind: Any) -> TypeAdapter:
    return TypeAdapter(kind)


def encode(value: Any, kind: Any = None, include: Any = None) -> Any:
    """A JSON-ready value (dicts, lists, str, numbers) for `value`, of type `kind` (default its class);
    `include` keeps only those fields (pydantic's include: {"field": True, "items": {"__all__": {...}}})."""
    return _adapter(kind if kind is not None else type(value)).dump_python(value, mode="json", include=include)


def schema(kind: Any) -> dict:
    """The JSON schema of what `encode` gives for a `kind`."""
    return _adapter(kind).json_schema(mode="serialization")


def decode(kind: Any, data: Any) -> Any:
    """Build a `kind` (a dataclass, list[...], ...) from JSON-ready data; raises ValidationError."""
    return _adapter(kind).validate_python(data)
