"""Latency of file answers (find_files) per strategy: p50/p95 over a query set (issue #19's target:
p95 < 300 ms for non-neural strategies on a 36,000-chunk index).

    python benchmarks/file_latency.py WORKSPACE --queries QUERIES.jsonl [--data-dir DIR] [--strategies a,b]

Indexes WORKSPACE first if needed (incrementally), answers one query untimed per strategy (model load,
file index build), then times every query (each with its `before`, if any). Prints the index size too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.core.models import QueryOptions  # noqa: E402
from services.engine.service import KnowledgeService  # noqa: E402
from services.evaluation.metrics import load_queries, percentile  # noqa: E402

NON_NEURAL = "none,keyword-boost,metadata,hybrid,bug-report"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workspace", type=Path)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/ke-file-latency"))
    ap.add_argument("--strategies", default=NON_NEURAL)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    service = KnowledgeService(data_dir=args.data_dir)
    try:
        start = time.perf_counter()
        await service.index(args.workspace)
        health = await service.health(args.workspace)
        print(f"index: {health.files} files, {health.chunks} chunks ({time.perf_counter() - start:.0f} s to index)")
        queries = load_queries(args.queries)[:args.limit or None]
        for name in args.strategies.split(","):
            options = QueryOptions(workspace=str(args.workspace), strategy=name, use_cache=False)
            first = time.perf_counter()
            await service.find_files(queries[0].text, options, 10, queries[0].before)  # model load, file index
            warm = (time.perf_counter() - first) * 1000
            times = []
            for query in queries:
                t = time.perf_counter()
                await service.find_files(query.text, options, 10, query.before)
                times.append((time.perf_counter() - t) * 1000)
            print(f"{name:<14} p50 {percentile(times, 50):6.0f} ms  p95 {percentile(times, 95):6.0f} ms  "
                  f"({len(times)} queries; first call {warm:.0f} ms)")
    finally:
        service.close()


if __name__ == "__main__":
    asyncio.run(main())
