"""Informed: nothing yet; issue 44's open decision (an index <= 2x the code needs the vectors out of Chroma's HNSW).

The vectors of an indexed workspace as int8 rows (a scale per row) searched exactly with numpy, against Chroma's
HNSW, on questions made of the workspace's docstrings: bytes, recall@10 against an exact float32 search, and
search time. Read-only.

    python benchmarks/experiments/flat_int8.py WORKSPACE DATA_DIR
"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.lib import sample_queries
from services.core.settings import Settings
from services.encoders.embedder import query_embedder
from services.storage.vector_store import vector_id
from services.storage.workspace_index import WorkspaceIndex, workspace_root

K = 10


def quantised(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and each row's scale."""
    scale = np.abs(vectors).max(axis=1, keepdims=True) / 127
    return np.round(vectors / scale).astype(np.int8), scale.astype(np.float32)


def top(scores: np.ndarray, ids: list[str]) -> list[str]:
    best = np.argpartition(-scores, K)[:K]
    return [ids[i] for i in best[np.argsort(-scores[best])]]


def timed(search):
    started = time.perf_counter()
    found = search()
    return found, time.perf_counter() - started


def main() -> None:
    workspace, data_dir = Path(sys.argv[1]), Path(sys.argv[2])
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    stored = index.store().collection().get(include=["embeddings"])
    ids, vectors = stored["ids"], np.asarray(stored["embeddings"], dtype=np.float32)
    rows, scale = quantised(vectors)
    print(f"{len(ids)} vectors x {vectors.shape[1]}: float32 {vectors.nbytes / 1e6:.1f} MB, "
          f"int8 {(rows.nbytes + scale.nbytes) / 1e6:.1f} MB")
    encoder = query_embedder(Settings(embedding_backend="openvino-int8"))
    questions = index.project(encoder.encode(sample_queries(workspace, data_dir, 60)))
    searched = rows.astype(np.float32) * scale  # what a loader would keep in memory
    recall, seconds = {"HNSW": [], "int8 flat": []}, {"HNSW": [], "int8 flat": []}
    for question in questions:
        exact = set(top(vectors @ question, ids))
        hnsw, took = timed(lambda: [vector_id(i) for i, _ in index.store().search(question.tolist(), K)])
        flat, flat_took = timed(lambda: top(searched @ question, ids))
        for name, found, spent in (("HNSW", hnsw, took), ("int8 flat", flat, flat_took)):
            recall[name].append(len(exact & set(found)) / K)
            seconds[name].append(spent)
    for name in recall:
        print(f"{name}: recall@{K} against exact float32 {statistics.mean(recall[name]):.3f}, "
              f"search p50 {statistics.median(seconds[name]) * 1000:.1f} ms")
    index.close()


if __name__ == "__main__":
    main()
