"""Fewer dimensions for a big index: a projection onto the main directions of the workspace's own
vectors (a PCA without centring, so cosines keep their scale), fitted once when the index is built.

The HNSW graph stores every vector as float32: at 384 dimensions it alone is 2.4x sympy's source.
Measured (benchmarks/experiments/README.md, "Quality with the projection"): fitted on 1,000 random CoSQA chunks, 256
dimensions lose 0.001 MRR@10 on average over 15 draws (192: 0.003, 160: 0.009); through the whole
pipeline CoSQA's `none` loses 0.002 and Sphinx's bug reports 0.021. A projection belongs to its index:
questions are projected with it, and only a new index fits another.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class Projection:
    def __init__(self, matrix: np.ndarray, fitted_on: int) -> None:
        self.matrix = np.asarray(matrix, dtype=np.float32)  # (dimensions in, dimensions out)
        self.fitted_on = fitted_on

    @property
    def dimensions(self) -> tuple[int, int]:
        return self.matrix.shape[0], self.matrix.shape[1]

    def describe(self) -> str:
        before, after = self.dimensions
        return f"{after} of {before} dimensions (projection fitted on {self.fitted_on:,} chunks)"

    def apply(self, vectors) -> np.ndarray:
        """Project and scale back to unit length."""
        projected = np.asarray(vectors, dtype=np.float32) @ self.matrix
        norms = np.linalg.norm(projected, axis=1, keepdims=True)
        return projected / np.clip(norms, 1e-12, None)

    @classmethod
    def fit(cls, vectors: np.ndarray, dimensions: int) -> Projection:
        sample = np.asarray(vectors, dtype=np.float64)
        _, _, directions = np.linalg.svd(sample, full_matrices=False)
        return cls(directions[:dimensions].T, len(sample))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, np.vstack([self.matrix, np.full((1, self.matrix.shape[1]), self.fitted_on, np.float32)]))
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> Projection:
        stored = np.load(path)
        return cls(stored[:-1], int(stored[-1, 0]))


def sample_positions(total: int, size: int) -> list[int]:
    """`size` positions spread evenly over `total` (every folder of the workspace gets its share)."""
    if total <= size:
        return list(range(total))
    return sorted({int(i * total / size) for i in range(size)})
