"""Indexing throughput: the pipeline's chunks/s against the bare model's encode chunks/s on the
same chunks, and the time of a no-change reindex. Default workspace: this repository.

    python benchmarks/index_throughput.py [WORKSPACE]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.record import engine_settings, record  # noqa: E402
from services.encoders.embedder import chunk_text  # noqa: E402
from services.engine.service import KnowledgeService  # noqa: E402
from services.storage.workspace_index import WorkspaceIndex, workspace_root  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


async def measure(workspace: Path) -> None:
    with tempfile.TemporaryDirectory() as data_dir:
        service = KnowledgeService(data_dir=data_dir)
        await asyncio.to_thread(service.index_embedder.load)  # model load is not indexing
        embedding_started = {}

        def on_progress(event):
            if event.phase == "embedding" and "t" not in embedding_started:
                embedding_started["t"] = time.perf_counter()

        started = time.perf_counter()
        report = await service.index(workspace, full=True, progress=on_progress)
        total = time.perf_counter() - started
        texts = chunk_texts(workspace, Path(data_dir))
        encode_started = time.perf_counter()
        service.index_embedder.encode(texts)
        encode_seconds = time.perf_counter() - encode_started
        again = time.perf_counter()
        second = await service.index(workspace)
        no_change = time.perf_counter() - again
        service.close()
    print_report(workspace, report, total, len(texts), encode_seconds, no_change, second)


def chunk_texts(workspace: Path, data_dir: Path) -> list[str]:
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    texts = [chunk_text(c) for c in index.catalog().chunks()]
    index.close()
    return texts


def print_report(workspace, report, total, count, encode_seconds, no_change, second) -> None:
    pipeline_rate = report.chunks_embedded / total
    model_rate = count / encode_seconds
    print(f"workspace: {workspace}")
    print(f"files: {report.files_indexed}, chunks: {report.chunks_embedded}")
    print(f"pipeline (scan+chunk+embed+store+BM25): {total:.1f} s, {pipeline_rate:.1f} chunks/s")
    print(f"bare model encode, same chunks:        {encode_seconds:.1f} s, {model_rate:.1f} chunks/s")
    print(f"ratio pipeline/model: {pipeline_rate / model_rate:.2f}")
    print(f"no-change reindex: {no_change * 1000:.0f} ms ({second.files_unchanged} files unchanged, "
          f"{second.chunks_embedded} chunks embedded)")
    record("index_throughput", [{
        "files": report.files_indexed, "chunks": report.chunks_embedded, "pipeline s": round(total, 1),
        "pipeline chunks/s": round(pipeline_rate, 1), "bare model chunks/s": round(model_rate, 1),
        "pipeline / model": round(pipeline_rate / model_rate, 2), "no-change reindex ms": round(no_change * 1000),
    }], settings={"workspace": str(workspace), "engine": engine_settings()}, uses_percentiles=False,
        note="one full index into a fresh data dir (model loaded beforehand), then the bare model on the same chunks")


if __name__ == "__main__":
    asyncio.run(measure(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO))
