"""Finding models on this machine without touching the network (shared by embeddings and rerankers)."""

from __future__ import annotations


def cached_model_path(model_id: str) -> str | None:
    """The id's config.json in the local Hugging Face cache, or None. Never uses the network."""
    if model_id.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model_id, "config.json")
    except Exception:  # malformed id, unreadable cache
        return None
    return found if isinstance(found, str) else None
