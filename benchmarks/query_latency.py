"""Query latency per stage and per strategy: p50/p95 over >= 100 queries on an index of >= 10,000
chunks (the sources of some of this project's dependencies).

    python benchmarks/query_latency.py [--queries 100] [--top-k 10] [--workspace PATH]

The corpus and its index are kept in the user cache dir, so a second run skips indexing. `--workspace`
measures another tree instead (e.g. tests/sample_workspace for a quick run; its index goes to a
temporary data dir).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import platformdirs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, percentile, record  # noqa: E402
from services.engine.service import KnowledgeService
from services.core.models import QueryOptions
from services.storage.workspace_index import WorkspaceIndex, workspace_root

PACKAGES = ("chromadb", "pyqtgraph", "sentence_transformers", "pygments")
STAGES = ("embed", "search", "rerank", "expand", "total")


def build_corpus(target: Path) -> Path:
    import importlib

    target.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        source = Path(importlib.import_module(name).__file__).parent
        if not (target / name).exists():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def sample_queries(workspace: Path, data_dir: Path, count: int) -> list[str]:
    """First sentences of docstrings: the kind of question a developer types."""
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    chunks = index.catalog().chunks()
    index.close()
    sentences = {c.docstring.split(".")[0].strip() for c in chunks if c.kind in ("function", "method", "class")}
    pool = sorted(s for s in sentences if 4 <= len(s.split()) <= 14)
    return random.Random(0).sample(pool, min(count, len(pool)))


async def main(args) -> None:
    if args.workspace:
        with tempfile.TemporaryDirectory() as data_dir:
            await measure(args, Path(args.workspace).resolve(), Path(data_dir))
    else:
        cache = Path(platformdirs.user_cache_dir("knowledge-explorer-bench"))
        await measure(args, build_corpus(cache / "corpus"), cache / "data")


async def measure(args, workspace: Path, data_dir: Path) -> None:
    service = KnowledgeService(data_dir=data_dir)
    started = time.perf_counter()
    report = await service.index(workspace)
    print(f"index: {report.chunks_total} chunks in {report.files_indexed + report.files_unchanged} files "
          f"({report.chunks_embedded} embedded now, {time.perf_counter() - started:.1f} s)")
    queries = sample_queries(workspace, data_dir, args.queries)
    await service.warm_up()
    print(f"{len(queries)} queries, top_k {args.top_k}, cache off; milliseconds p50 / p95")
    print(f"{'strategy':<14}" + "".join(f"{s:>16}" for s in STAGES))
    rows = []
    for info in await service.strategies():
        if info.available:
            rows.append(await run_strategy(service, workspace, queries, info.name, args.top_k))
        else:
            print(f"{info.name:<14} unavailable: {info.reason}")
    service.close()
    record("query_latency", rows, settings={
        "workspace": str(workspace), "chunks": report.chunks_total, "queries": len(queries),
        "top_k": args.top_k, "cache": False, "engine": engine_settings()},
        note="milliseconds per stage, p50 / p95 over the queries; cache off")


async def run_strategy(service, workspace, queries, strategy, top_k) -> dict:
    times = {s: [] for s in STAGES}
    for question in queries:
        result = await service.query(question, QueryOptions(workspace=str(workspace), strategy=strategy,
                                                            top_k=top_k, use_cache=False))
        for stage in STAGES:
            times[stage].append(result.timings_ms[stage])
    cells = "".join(f"{percentile(times[s], 50):>8.1f} /{percentile(times[s], 95):>6.1f}" for s in STAGES)
    print(f"{strategy:<14}{cells}")
    return {"strategy": strategy, **{f"{s} p50 / p95 ms": f"{percentile(times[s], 50):.1f} / "
                                                          f"{percentile(times[s], 95):.1f}" for s in STAGES}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--workspace", help="measure this tree instead of the dependency corpus")
    asyncio.run(main(parser.parse_args()))
