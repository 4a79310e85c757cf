"""The engine's strategies and each workspace's reranker settings (cross-encoder-reranking.md "Configure
Re-ranker"): a workspace's configuration changes its own strategies only."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from services.core.errors import QueryError
from services.core.settings import Settings, SettingsError
from services.retrieval.strategies import create_strategy, strategy_names

log = logging.getLogger(__name__)


class Reranking:
    """Strategies made once per (name, workspace settings), and the settings each workspace configured."""

    def __init__(self, settings: Settings, lock: threading.RLock) -> None:
        self.settings = settings
        self._lock = lock
        self._strategies: dict = {}  # (name, a workspace's reranker changes) -> the strategy
        self.changes: dict[Path, dict] = {}  # per workspace: its reranker settings (configure)
        self.notes: dict[Path, str] = {}  # per workspace: why its stored settings were ignored

    def strategy(self, name: str, root: Path | None = None):
        """The strategy `name`, with the reranker settings of the workspace `root` (the server's own without
        one). QueryError for an unknown name."""
        with self._lock:
            if name not in strategy_names():
                raise QueryError(f"Unknown strategy {name!r}. Known: {', '.join(strategy_names())}.")
            changes = self.valid_changes(root)
            key = (name, tuple(sorted(changes.items())))
            if key not in self._strategies:
                self._strategies[key] = create_strategy(name, self.settings.with_changes(**changes))
            return self._strategies[key]

    def valid_changes(self, root: Path | None) -> dict:
        """The workspace's reranker settings, validated again as they are read: a bad value (however it was
        stored) is dropped, logged once and noted on the workspace's answers, never a failed query."""
        if root is None:
            return {}
        with self._lock:
            changes = self.changes.get(root, {})
            try:
                self.settings.with_changes(**changes)
            except SettingsError as error:
                note = f"This workspace's reranker settings were ignored (the defaults are used): {error}"
                log.warning("%s: %s", root, note)
                self.changes[root], self.notes[root] = {}, note
                return {}
            return changes

    def model_name(self, strategy: str, root: Path | None) -> str:
        """The model behind a strategy's scores (the embedding model for the non-neural ones)."""
        settings = self.settings.with_changes(**self.valid_changes(root)) if root is not None else self.settings
        return {"cross-encoder": settings.cross_encoder_model,
                "llm": settings.llm_model}.get(strategy) or settings.embedding_model

    def configure(self, root: Path, model_name: str | None, batch_size: int | None, max_input_length: int | None,
                  score_threshold: float | None) -> None:
        """Store one workspace's cross-encoder settings. QueryError, changing nothing, when the model cannot
        be used (a model given is checked first); SettingsError for a bad value."""
        from services.retrieval.strategies.cross_encoder import model_availability

        changes = {"cross_encoder_model": model_name, "cross_encoder_batch_size": batch_size,
                   "cross_encoder_max_length": max_input_length, "cross_encoder_score_threshold": score_threshold}
        changes = {k: v for k, v in changes.items() if v is not None}
        if model_name is not None:
            available = model_availability(model_name)
            if not available.available:
                raise QueryError(f"The reranker model cannot be used: {available.reason}.")
        self.settings.with_changes(**changes)  # SettingsError (400), storing nothing, for a bad value
        with self._lock:
            self.changes[root] = changes
            self.notes.pop(root, None)
