"""Latency of file answers (find_files) per strategy: p50/p95 over a query set (issue #19's target:
p95 < 300 ms for non-neural strategies on a 36,000-chunk index).

    python benchmarks/file_latency.py WORKSPACE --queries QUERIES.jsonl [--data-dir DIR] [--strategies a,b]

Indexes WORKSPACE first if needed (incrementally), answers one query untimed per strategy (model load,
file index build), then times every query (each with its `before`, if any): wall time, and the engine
process's CPU time per answer (every thread; on a machine shared with other work, what the answer costs
rather than how long it waited). Prints the index size too.

--stand-in indexes and asks with hash vectors instead of the model (benchmarks/corpus.StandInEmbedder:
every other part of indexing and answering is the app's; the vector search costs the same per query, but its
ranking means nothing); use it when the machine cannot embed 36,000 chunks in the time there is.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import record  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.engine.service import KnowledgeService  # noqa: E402
from services.evaluation.metrics import load_queries, percentile  # noqa: E402

NON_NEURAL = "none,keyword-boost,heuristic,metadata,rrf,hybrid,bug-report"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/ke-file-latency"))
    ap.add_argument("--strategies", default=NON_NEURAL)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--stand-in", action="store_true", help="hash vectors instead of the model (see above)")
    args = ap.parse_args()
    service = KnowledgeService(data_dir=args.data_dir)
    if args.stand_in:
        from benchmarks.lib import StandInEmbedder
        service.embedder = service.index_embedder = StandInEmbedder()
    rows = []
    try:
        start = time.perf_counter()
        await service.index(args.workspace)
        health = await service.health(args.workspace)
        seconds = time.perf_counter() - start
        print(f"index: {health.files} files, {health.chunks} chunks ({seconds:.0f} s to index)")
        queries = load_queries(args.queries)[:args.limit or None]
        for name in args.strategies.split(","):
            options = QueryOptions(workspace=str(args.workspace), strategy=name, use_cache=False)
            first = time.perf_counter()
            await service.find_files(queries[0].text, options, 10, queries[0].before)  # model load, file index
            warm = (time.perf_counter() - first) * 1000
            times, cpu = [], []
            for query in queries:
                t, c = time.perf_counter(), time.process_time()
                await service.find_files(query.text, options, 10, query.before)
                times.append((time.perf_counter() - t) * 1000)
                cpu.append((time.process_time() - c) * 1000)  # every thread of the engine: load-independent
            print(f"{name:<14} p50 {percentile(times, 50):6.0f} ms  p95 {percentile(times, 95):6.0f} ms  "
                  f"CPU p95 {percentile(cpu, 95):6.0f} ms ({len(times)} queries; first call {warm:.0f} ms)")
            rows.append({"strategy": name, "chunks": health.chunks, "queries": len(times),
                         "p50 ms": round(percentile(times, 50)), "p95 ms": round(percentile(times, 95)),
                         "CPU p50 ms": round(percentile(cpu, 50)), "CPU p95 ms": round(percentile(cpu, 95)),
                         "first call ms": round(warm)})
    finally:
        service.close()
    record("file_latency", rows, settings={"workspace": str(args.workspace), "queries": str(args.queries),
                                           "stand-in encoder": args.stand_in, "files": health.files},
           note=("hash vectors stand in for the model (index and questions)" if args.stand_in else "the model")
           + "; find_files at 10 files, query cache off, each query's `before`")


if __name__ == "__main__":
    asyncio.run(main())
