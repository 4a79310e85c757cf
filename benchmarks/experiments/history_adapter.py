"""Informed: `tuned` trained on the history alone is no default (file level: pytest +0.007, Sphinx -0.020).

`tuned` trained on the repository's history alone (issue #19, item 3) against `none`, on the SWE sets.

    python benchmarks/experiments/history_adapter.py [--data DIR] [--levels chunk,file]

Each snapshot (<data>/swe/<repo>, indexed in <data>/ke-swe as benchmarks/file_level.py leaves it; <data>: --data,
else $KE_BENCH_DATA) is asked every
judged query with `none` and `tuned` through services.evaluation.runner.evaluate (top_k 10), with no labels
in the data dir: `tuned` learns from the commits made before each query's `before` (its newest 20% held out)
and is used only when it beats the vector search on those held-out commits; otherwise it falls back to the
vector ranking and says why (counted as fallbacks). Judged on Python files only, as file_level.py.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.file_level import REPOS  # noqa: E402
from benchmarks.lib import data_root, record, shared, swe_snapshot  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import load_qrels  # noqa: E402
from services.evaluation.runner import evaluate  # noqa: E402
from services.retrieval.strategies import query_adapter  # noqa: E402


async def run(repo: str, data: Path, levels: list[str]) -> list[dict]:
    qrels = {q: {d: g for d, g in docs.items() if d.endswith(".py") and g > 0}
             for q, docs in load_qrels(shared("swe", repo, "qrels.tsv")).items()}
    queries = [q for q in load_queries(shared("swe", repo, "queries.jsonl")) if qrels.get(q.id)]
    workspace = swe_snapshot(repo, data)
    service = LocalEngine(data_dir=data / "ke-swe")
    rows = []
    try:
        await trained(service, queries, workspace)
        for level in levels:
            report = await evaluate(service, queries, qrels, ["none", "tuned"], workspace, top_k=10, level=level)
            for name, item in report.strategies.items():
                m = item.metrics
                rows.append({"repository": repo, "level": level, "strategy": name,
                             "MRR@10": round(m["mrr@10"], 3), "R@10": round(m["r@10"], 3),
                             "fell back": f"{item.fallbacks} of {report.queries}" if name == "tuned" else "",
                             "why (last)": item.fallback_reason if name == "tuned" else ""})
                print(rows[-1], flush=True)
    finally:
        service.close()
    return rows


async def trained(service: LocalEngine, queries, workspace: Path) -> None:
    """Each query's adapter trained before it is measured: `tuned` trains in the background and answers as the
    vector ranking meanwhile (issue 41), which is not what this benchmark measures."""
    for query in queries:
        options = QueryOptions(workspace=str(workspace), strategy="tuned", before=query.before, use_cache=False)
        await service.query(query.text, options)
        query_adapter.wait_for_training()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    ap.add_argument("--levels", default="chunk,file")
    ap.add_argument("--repos", default=",".join(REPOS))
    args = ap.parse_args()
    rows = [row for repo in args.repos.split(",")
            for row in asyncio.run(run(repo, data_root(args.data), args.levels.split(",")))]
    record("history_adapter", rows, uses_percentiles=False,
           settings={"levels": args.levels, "top_k": 10, **{k: getattr(query_adapter, k) for k in (
               "HISTORY_COMMITS", "HISTORY_MIN_COMMITS", "HISTORY_MAX_FILES", "HISTORY_HELD_OUT",
               "HISTORY_NEGATIVES", "HISTORY_EPOCHS", "HISTORY_REUSE_DAYS")}},
           note="no labels: `tuned` trained on commits before each query's `before` only; Python files judged")


if __name__ == "__main__":
    main()
