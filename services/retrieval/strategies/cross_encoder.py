"""`cross-encoder`: cross-encoder-reranking.md, a sentence-transformers CrossEncoder rescoring
each (question, chunk) pair.

* The model (settings.cross_encoder_model: a Hugging Face id or a local folder) is loaded once per
  id and shared (module cache guarded by a lock); `warm_up()` loads it ahead of the first query.
  Loading never touches the network (HF_HUB_OFFLINE=1 and local_files_only=True).
* `availability()` only looks at the disk (a folder with config.json, or the id's config.json in
  the local Hugging Face cache), so it answers in milliseconds.
* Scores: the model's raw logits (activation_fn=Identity, so a sigmoid stored in the model's
  config is not applied on top), then one sigmoid -> 0-1. Models with several labels: softmax,
  last label taken as "relevant".
* Candidates whose score is below settings.cross_encoder_score_threshold are placed after the
  others (still sorted by score), never dropped.
* Adaptive mode (settings.cross_encoder_adaptive): when the mean original score is at least
  cross_encoder_adaptive_threshold it raises RerankSkipped: the vector order is kept, and the reason shown.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

from services.core.errors import StrategyUnavailable
from services.encoders.hub import cached_model_path
from services.core.models import Availability, Candidate, Signal
from services.retrieval.strategies._ranking import explained, tie_key
from services.retrieval.strategies.base import PROBABILITY, BaseStrategy, RerankRequest, RerankSkipped, register

_MODELS: dict[tuple[str, int], object] = {}
_LOAD_LOCK = threading.Lock()
_CHARS_PER_TOKEN = 4  # text is cut to max_length x this many characters before tokenising


def is_local_folder(model: str) -> bool:
    return Path(model).expanduser().is_dir()


def model_availability(model: str) -> Availability:
    """Whether the model can be loaded here; a name the file system refuses or a folder this process may not
    read says so (never raises: one workspace's bad setting must not fail the strategy list)."""
    try:
        return _model_availability(model)
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        return Availability(False, f"cross-encoder model {shown_name(model)!r} cannot be read here ({reason})")


def shown_name(model: str, width: int = 120) -> str:
    """A model name as a message may quote it: control characters escaped, cut to `width`."""
    text = model.encode("unicode_escape").decode("ascii")
    return text if len(text) <= width else text[:width - 1] + "…"


def _model_availability(model: str) -> Availability:
    if not model:
        return Availability(False, "no cross-encoder model is set; set KE_CROSS_ENCODER_MODEL")
    if is_local_folder(model):
        if (Path(model).expanduser() / "config.json").is_file():
            return Availability(True, f"model folder {model}")
        return Availability(False, f"cross-encoder folder '{shown_name(model)}' has no config.json")
    if cached_model_path(model):
        return Availability(True, f"{model} (local cache)")
    return Availability(False, (
        f"cross-encoder model '{shown_name(model)}' is not on this machine; set KE_CROSS_ENCODER_MODEL "
        "to a local folder or a downloaded model id"))


def load_model(model: str, max_length: int):
    """The shared CrossEncoder for this id, loaded on first use. Raises StrategyUnavailable."""
    key = (model, max_length)
    with _LOAD_LOCK:
        if key in _MODELS:
            return _MODELS[key]
        available = model_availability(model)
        if not available.available:
            raise StrategyUnavailable(available.reason)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
            path = str(Path(model).expanduser()) if is_local_folder(model) else model
            loaded = CrossEncoder(path, max_length=max_length, local_files_only=True, device="cpu")
        except Exception as error:
            raise StrategyUnavailable(
                f"cross-encoder model '{model}' could not be loaded: {error}") from error
        _fit_max_length(loaded, max_length)
        _MODELS[key] = loaded
        return loaded


def _fit_max_length(model, wanted: int) -> None:
    """Never feed more tokens than the model has positions for (small models have 128 or 256)."""
    config = getattr(getattr(model, "model", None), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if positions and wanted > positions:
        model.max_seq_length = positions


def to_probabilities(raw) -> list[float]:
    """Logits -> 0-1: sigmoid for one label, softmax (last label) for several."""
    import numpy as np
    scores = np.asarray(raw, dtype=np.float64)
    if scores.ndim == 2 and scores.shape[1] > 1:
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        return (shifted[:, -1] / shifted.sum(axis=1)).tolist()
    return [1.0 / (1.0 + math.exp(-float(v))) for v in scores.reshape(-1)]


def pair_text(candidate: Candidate, max_chars: int) -> str:
    chunk = candidate.chunk
    name = chunk.qualified_name or chunk.symbol
    text = f"{name}\n{chunk.content}" if name else chunk.content
    return text[:max_chars]


@register
class CrossEncoderStrategy(BaseStrategy):
    name = "cross-encoder"
    label = "Cross-encoder"
    description = ("A cross-encoder model reads the question and each chunk together and scores "
                   "their relevance 0-1. Slower, usually the most precise.")
    scale = PROBABILITY
    order = 60
    loads_model = True

    def availability(self) -> Availability:
        return model_availability(self.settings.cross_encoder_model)

    def pool_size(self, top_k: int) -> int:
        return max(top_k, self.settings.cross_encoder_pool)

    @property
    def score_threshold(self) -> float:
        """Results scoring below this (on the model's 0-1 scale) are cut (search_steps.above_threshold)."""
        return self.settings.cross_encoder_score_threshold

    def warm_up(self) -> None:
        """Load the model now (the service calls this in a background thread)."""
        self._model()

    def _model(self):
        return load_model(self.settings.cross_encoder_model, self.settings.cross_encoder_max_length)

    def scores(self, query: str, candidates: list[Candidate]) -> list[float]:
        """0-1 relevance of each candidate to the question, in input order."""
        import torch
        s = self.settings
        max_chars = s.cross_encoder_max_length * _CHARS_PER_TOKEN
        pairs = [(query, pair_text(c, max_chars)) for c in candidates]
        try:
            raw = self._model().predict(pairs, batch_size=s.cross_encoder_batch_size,
                                        activation_fn=torch.nn.Identity(),
                                        show_progress_bar=False, convert_to_numpy=True)
        except StrategyUnavailable:
            raise
        except Exception as error:
            raise StrategyUnavailable(f"cross-encoder failed: {error}") from error
        return to_probabilities(raw)

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        candidates = list(request.candidates)
        if not candidates:
            return candidates
        self._skip_if_confident(candidates)
        scored = [explained(c, [Signal("cross-encoder relevance", p, p, "set", self.settings.cross_encoder_model)])
                  for c, p in zip(candidates, self.scores(request.query, candidates))]
        threshold = self.settings.cross_encoder_score_threshold
        return sorted(scored, key=lambda c: (c.score < threshold, -c.score, *tie_key(c)))

    def _skip_if_confident(self, candidates: list[Candidate]) -> None:
        """Adaptive mode: raise RerankSkipped when the vector ranking is confident enough."""
        s = self.settings
        if not s.cross_encoder_adaptive:
            return
        originals = [c.original_score if c.original_score is not None else c.score for c in candidates]
        mean = sum(originals) / len(originals)
        if mean >= s.cross_encoder_adaptive_threshold:
            raise RerankSkipped(f"skipped: mean similarity {mean:.2f} >= "
                                f"{s.cross_encoder_adaptive_threshold:.2f} (adaptive mode)")
