"""sentence-transformers on torch (CPU, CUDA or MPS), fp32."""

from __future__ import annotations

import numpy as np

from services.encoders.base import EncoderSpec, register


@register
class TorchEncoder:
    name = "torch"

    def __init__(self, spec: EncoderSpec) -> None:
        from sentence_transformers import SentenceTransformer

        self.spec = spec
        self.device = spec.device
        self.model = SentenceTransformer(spec.source, device=spec.device, local_files_only=True)
        self.model.max_seq_length = min(spec.max_seq_length, self.model.max_seq_length or spec.max_seq_length)

    @property
    def identity(self) -> str:
        """What, besides the model's files, decides its vectors (services/storage/vector_cache.py)."""
        import sentence_transformers
        import torch

        dtype = next(self.model.parameters()).dtype
        return f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}, {dtype}"

    @property
    def dimension(self) -> int:
        get_dim = (getattr(self.model, "get_embedding_dimension", None)
                   or self.model.get_sentence_embedding_dimension)
        return int(get_dim())

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(texts, batch_size=self.spec.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype(np.float32)
