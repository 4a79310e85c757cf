"""Indexing throughput per CPU encoder backend, in one run: for each backend, a full index of WORKSPACE into a
fresh data dir (its step 2, the vectors, timed apart: from its first event to the run's finalizing) (the model loaded and exported beforehand: that is not indexing) and the bare encoder on the
same chunks, then a no-change reindex; the backends take turns, round after round, so load on the machine
falls on each alike. With --cosqa, each backend's quality: the bare encoder's MRR@10 on CoSQA dev (500
questions against 6,267 functions, exact cosine search, no reranking) and its vectors' cosine to fp32 ONNX's.

    python benchmarks/index_throughput.py [WORKSPACE] [--backends onnx-int8,openvino,openvino-int8] [--rounds 2] [--cosqa]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, record, shared  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.encoders.embedder import Embedder, chunk_text  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import load_corpus, load_qrels  # noqa: E402
from services.storage.workspace_index import WorkspaceIndex, workspace_root  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


async def index_once(workspace: Path, backend: str) -> dict:
    with tempfile.TemporaryDirectory() as data_dir:
        service = LocalEngine(Settings(embedding_backend=backend), data_dir=data_dir)
        await asyncio.to_thread(service.index_embedder.load)  # model load and export are not indexing
        step_2: list[float] = []  # when the first vector-making event came, and the first event after them

        def progress(event) -> None:
            if (event.phase == "embedding") != (len(step_2) == 1):  # step 2 begins, or the first event after it
                step_2.append(time.perf_counter())

        started = time.perf_counter()
        report = await service.index(workspace, full=True, progress=progress)
        total = time.perf_counter() - started
        step_2_seconds = (step_2 + [started + total])[1] - step_2[0] if step_2 else total
        texts = chunk_texts(workspace, Path(data_dir))
        encode_started = time.perf_counter()
        service.index_embedder.encode(texts)
        encode_seconds = time.perf_counter() - encode_started
        again = time.perf_counter()
        second = await service.index(workspace)
        no_change = time.perf_counter() - again
        used = service.index_embedder.backend_used
        service.close()
    return {"backend": used, "files": report.files_indexed, "chunks": report.chunks_embedded,
            "pipeline s": round(total, 1), "pipeline chunks/s": round(report.chunks_embedded / total, 1),
            "step 2 chunks/s": round(report.chunks_embedded / step_2_seconds, 1),
            "bare model chunks/s": round(len(texts) / encode_seconds, 1),
            "no-change reindex ms": round(no_change * 1000), "unchanged": second.files_unchanged}


def chunk_texts(workspace: Path, data_dir: Path) -> list[str]:
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    texts = [chunk_text(c) for c in index.catalog().chunks()]
    index.close()
    return texts


def cosqa_quality(backends: list[str], encoders: Path) -> dict[str, dict]:
    """MRR@10 of the bare encoder on CoSQA dev, and the cosine of its function vectors to fp32 ONNX's."""
    corpus = load_corpus(shared("cosqa", "corpus.jsonl"))
    queries = load_queries(shared("cosqa", "queries_dev.jsonl"))
    relevant = {query: {doc for doc, grade in docs.items() if grade > 0}
                for query, docs in load_qrels(shared("cosqa", "qrels_dev.tsv")).items()}
    ids = [d.id for d in corpus]
    reference = None
    out = {}
    for backend in ["onnx"] + backends:
        embedder = Embedder("all-MiniLM-L6-v2", backend=backend, role=f"cosqa-{backend}", cache_dir=encoders)
        docs = embedder.encode([d.code for d in corpus])
        questions = embedder.encode([q.text for q in queries])
        reference = docs if reference is None else reference
        top = np.argsort(-(questions @ docs.T), axis=1)[:, :10]
        ranks = [next((r for r, i in enumerate(row, 1) if ids[i] in relevant.get(q.id, ())), None)
                 for q, row in zip(queries, top)]
        cosine = (docs * reference).sum(axis=1)
        out[backend] = {"CoSQA MRR@10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 4),
                        "cosine to fp32 min": round(float(cosine.min()), 4),
                        "cosine to fp32 mean": round(float(cosine.mean()), 5)}
    return out


async def measure(args) -> None:
    backends = args.backends.split(",")
    # every backend exported anew (unless --encoders names a folder of earlier exports), shared by the rounds
    encoders = args.encoders or Path(tempfile.mkdtemp(prefix="ke-encoders-"))
    os.environ["KE_ENCODER_CACHE_DIR"] = str(encoders)
    runs: dict[str, list[dict]] = {b: [] for b in backends}
    for round_number in range(1, args.rounds + 1):
        for backend in backends:
            run = await index_once(args.workspace, backend)
            runs[backend].append(run)
            print(f"round {round_number} {backend}: {run}", flush=True)
    quality = cosqa_quality(backends, encoders) if args.cosqa else {}
    first = backends[0]
    table = []
    for backend in backends:
        pipeline = round(statistics.median(r["pipeline chunks/s"] for r in runs[backend]), 1)
        bare = round(statistics.median(r["bare model chunks/s"] for r in runs[backend]), 1)
        step_2 = round(statistics.median(r["step 2 chunks/s"] for r in runs[backend]), 1)
        # each round's own ratio (its step 2 and its bare encoder minutes apart), then their median
        step_2_rounds = [r["step 2 chunks/s"] / r["bare model chunks/s"] for r in runs[backend]]
        row = {"backend": backend, "runs as": runs[backend][0]["backend"], "files": runs[backend][0]["files"],
               "chunks": runs[backend][0]["chunks"], "pipeline chunks/s": pipeline, "bare model chunks/s": bare,
               f"pipeline × {first}": round(pipeline / statistics.median(r["pipeline chunks/s"] for r in runs[first]), 2),
               "pipeline / model": round(statistics.median(r["pipeline chunks/s"] / r["bare model chunks/s"]
                                                           for r in runs[backend]), 2),
               "step 2 chunks/s": step_2, "step 2 / model": round(statistics.median(step_2_rounds), 3),
               "step 2 / model by round": ", ".join(f"{x:.3f}" for x in step_2_rounds),
               "no-change reindex ms": statistics.median(r["no-change reindex ms"] for r in runs[backend])}
        table.append(row | quality.get(backend, {}))
        print(table[-1])
    record(args.record, table, settings={"workspace": str(args.workspace), "rounds": args.rounds,
                                                "backends": backends, "engine": engine_settings()},
           uses_percentiles=False,
           note=(f"per backend, the median of {args.rounds} rounds (a ratio: the median of each round's own), the "
                 "backends taking turns; a round: one full "
                 "index into a fresh data dir (model loaded and exported beforehand), then the bare encoder on the "
                 "same chunks, then a no-change reindex" + ("; CoSQA: bare encoder, exact cosine top 10 of 6,267 "
                 "functions, fp32 ONNX as the cosine reference" if args.cosqa else "")))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workspace", nargs="?", type=Path, default=REPO)
    parser.add_argument("--backends", default="onnx-int8,openvino,openvino-int8")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cosqa", action="store_true")
    parser.add_argument("--encoders", type=Path, default=None, help="reuse the exported encoders in this folder")
    parser.add_argument("--record", default="index_throughput", help="the results' name (encoder_limit: step 2 "
                        "against the bare encoder, issue 51)")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
