"""Informed: one vector cache per data dir, shared by every checkout in it; the encoder's batch stays 32 (issue 22).

A second checkout of an indexed repository (issue 22, item 1): how long it takes to index, how many
vectors it finds in the data dir's shared vector cache, and whether it answers like a fresh index.

    nice -n 10 python benchmarks/experiments/checkout_reuse.py [--repos pytest sphinx] [--back 200] [--subdir src] [--no-compare]
        [--data DIR]

For each repository (under <data>/checkout-reuse; <data>: --data, else $KE_BENCH_DATA): two clones of
../shared/benchmarks/swe/<repo>/history.bundle, the first at
`snapshot~BACK` (first-parent), the second at `snapshot` (the commit the SWE queries were written against).
The first is indexed into an empty data dir, then the second into the same data dir (the shared cache
holds the first's vectors); a fresh index of the second, in a data dir of its own, is the reference.
`--subdir` indexes one folder of each clone (e.g. `src`, when the whole repository takes too long on a
loaded machine). Default settings (onnx-int8). The top 10 of a dozen bug reports (`none`, the vector ranking) are compared
between the reused and the fresh index of the second checkout. Figures: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import RESULTS, data_root, engine_settings, record, shared  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402

QUESTIONS = 12


def clone(repo: str, target: Path, back: int) -> str:
    """A clone of the repository's bundle at `snapshot~back`; returns its commit."""
    if not target.exists():
        bundle = shared("swe", repo, "history.bundle")
        subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(bundle), str(target)],
                       check=True)
        if back:
            subprocess.run(["git", "checkout", "-q", "--detach", f"snapshot~{back}"], cwd=target, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=target, check=True, capture_output=True,
                          text=True).stdout.strip()


def questions(repo: str) -> list[str]:
    rows = [json.loads(line) for line in open(shared("swe", repo, "queries.jsonl"))]
    return [row["text"][:2000] for row in rows[:QUESTIONS]]


async def top10(service: LocalEngine, folder: Path, asked: list[str]) -> list[list[tuple]]:
    found = []
    for question in asked:
        result = await service.query(question, QueryOptions(workspace=str(folder), top_k=10, use_cache=False, strategy="none"))
        found.append([(r.chunk.path, r.chunk.start_line, r.chunk.end_line) for r in result.results])
    return found


async def index_timed(service: LocalEngine, folder: Path):
    """An index run's report and seconds, the model loaded beforehand (it loads once per process)."""
    service.index_embedder.load()
    service.index_embedder.vector_space()
    start = time.perf_counter()
    report = await service.index(folder)
    return report, time.perf_counter() - start


async def measure(repo: str, root: Path, back: int, subdir: str, compare: bool = True) -> dict:
    first, second = root / repo / "first", root / repo / "second"
    commits = clone(repo, first, back), clone(repo, second, 0)
    first, second = first / subdir, second / subdir
    common, fresh_dir = root / repo / "data-shared", root / repo / "data-fresh"
    for folder in (common, fresh_dir):
        shutil.rmtree(folder, ignore_errors=True)
    asked = questions(repo)

    service = LocalEngine(data_dir=common)
    try:
        first_report, first_s = await index_timed(service, first)
        print(f"{repo}: first checkout ({commits[0][:10]}): {first_report.chunks_total:,} chunks, "
              f"{first_report.chunks_embedded:,} embedded in {first_s:.1f} s", flush=True)
        second_report, second_s = await index_timed(service, second)
        print(f"{repo}: second checkout ({commits[1][:10]}, {back} commits later): {second_s:.1f} s "
              f"({100 * second_s / first_s:.1f} % of the first); vectors reused "
              f"{second_report.vectors_reused:,} of {second_report.chunks_embedded:,}", flush=True)
        reused_answers = await top10(service, second, asked)
        health = await service.health(second)
    finally:
        service.close()

    if not compare:
        return row(repo, subdir, back, first_s, second_s, second_report, commits, health, common)
    fresh = LocalEngine(data_dir=fresh_dir)
    try:
        fresh_report, fresh_s = await index_timed(fresh, second)
        fresh_answers = await top10(fresh, second, asked)
    finally:
        fresh.close()
    identical = sum(a == b for a, b in zip(reused_answers, fresh_answers))
    overlap = sum(len(set(a) & set(b)) / max(len(a), len(b), 1) for a, b in zip(reused_answers, fresh_answers))
    first_hit = sum(bool(a) and bool(b) and a[0] == b[0] for a, b in zip(reused_answers, fresh_answers))
    print(f"{repo}: fresh index of the second checkout: {fresh_s:.1f} s; top 10 identical for {identical} of "
          f"{len(asked)} questions, same first result for {first_hit}, mean overlap "
          f"{overlap / len(asked):.3f}", flush=True)
    return {**row(repo, subdir, back, first_s, second_s, second_report, commits, health, common),
            "fresh index of the second s": round(fresh_s, 1),
            "top 10 identical to fresh": f"{identical} of {len(asked)}",
            "same first result": f"{first_hit} of {len(asked)}",
            "top 10 overlap": round(overlap / len(asked), 3),
            "_fresh_chunks_embedded": fresh_report.chunks_embedded}


def row(repo, subdir, back, first_s, second_s, report, commits, health, common) -> dict:
    cache_file = common / "vector-cache.sqlite"
    return {
        "repository": repo + (f" ({subdir}/)" if subdir else ""), "commits apart": back, "chunks": report.chunks_total,
        "first index s": round(first_s, 1), "second index s": round(second_s, 1),
        "second / first": f"{100 * second_s / first_s:.1f} %",
        "vectors reused": f"{report.vectors_reused:,} of {report.chunks_embedded:,}",
        "_commits": commits, "_health": {"last_run_reused": health.last_run_reused,
                                         "last_run_vectors": health.last_run_vectors},
        "_cache_mb": round(cache_file.stat().st_size / 1e6, 1) if cache_file.exists() else 0,
    }


def with_earlier_rows(table: list[dict], figures: dict) -> tuple[list[dict], dict]:
    """Today's earlier run of other repositories or distances stays in the table (one run per distance)."""
    today = RESULTS / f"checkout_reuse-{datetime.datetime.now(datetime.timezone.utc).date().isoformat()}.json"
    if not today.exists():
        return table, figures
    earlier = json.loads(today.read_text())
    measured = {(row["repository"], row["commits apart"]) for row in table}
    kept = [row for row in earlier["table"] if (row["repository"], row["commits apart"]) not in measured]
    return kept + table, {**{k: v for k, v in earlier["figures"].items() if k not in figures}, **figures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("--repos", nargs="+", default=["pytest", "sphinx"])
    parser.add_argument("--back", type=int, default=200, help="commits between the two checkouts")
    parser.add_argument("--subdir", default="", help="index this folder of each clone only")
    parser.add_argument("--no-compare", action="store_true", help="skip the fresh index of the second checkout")
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    args = parser.parse_args()
    args.root = data_root(args.data) / "checkout-reuse"
    # the ONNX export is made once, not in each fresh data dir's timed run
    os.environ.setdefault("KE_ENCODER_CACHE_DIR", str(args.root / "encoders"))
    rows = [asyncio.run(measure(repo, args.root, args.back, args.subdir, not args.no_compare)) for repo in args.repos]
    table = [{k: v for k, v in row.items() if not k.startswith("_")} for row in rows]
    figures = {f"{row['repository']}, {args.back} back": {k[1:]: v for k, v in row.items() if k.startswith("_")}
               for row in rows}
    table, figures = with_earlier_rows(table, figures)
    record("checkout_reuse", table, settings={"engine": engine_settings(), "back": args.back, "subdir": args.subdir,
                                              "questions": QUESTIONS},
           figures=figures, uses_percentiles=False,
           note="second checkout indexed into the data dir of the first (shared vector cache) vs the first's "
                "time; answers compared with a fresh index of the second (onnx-int8 vectors depend slightly on "
                "their batch, so the fresh index differs a little from any other)")


if __name__ == "__main__":
    main()
