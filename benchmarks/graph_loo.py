"""Is the code graph's file signal worth shipping on (issue 41)? Leave-one-repository-out on four repositories.

    python benchmarks/graph_loo.py --saved DIR [--data DIR]

Reuses file_default.py's chunk rankings (`--saved`, made by `file_default.py --saved DIR`) and answers every
judged SWE issue of pytest, Sphinx, xarray and pylint as files, as find_files does with the default `auto`
(FileRanker.blended) and with `none`, for each graph weight in WEIGHTS (Weights.graph; the graph's other
settings as shipped). For each repository the weight with the best mean MRR@10 of `auto` on the three others
is scored on it, beside weight 0 (no graph): the held-out gain decides whether the graph ships on (it must gain
on at least three of the four).
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.file_default import REPOS, mean, scores  # noqa: E402
from benchmarks.lib import data_root, engine_settings, judged, record, shared, swe_snapshot  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.file_answers import allowed_files  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import file_qrels, load_qrels  # noqa: E402
from services.retrieval.file_answer import BLEND_POOL, fuse  # noqa: E402
from services.retrieval.strategies.auto import FILES  # noqa: E402

WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5]


def file_ranking(ranker, result, before, allowed, graph: float, vector: float | None = None, k: int = 10) -> list[str]:
    weights = replace(ranker.weights(), graph=graph, **({} if vector is None else {"vector": vector}))
    feats, why = ranker.features(result, before, weights)
    return [f.path for f in ranker.ranked(result, feats, why, weights, k, before, allowed).files]


async def repository(service: LocalEngine, data: Path, repo: str, saved: Path) -> dict:
    """{(strategy, weight): [(rr, recall, acc1) per query]} for `none` and `auto`."""
    folder = swe_snapshot(repo, data)
    await service.index(folder)
    qrels = file_qrels(load_qrels(shared("swe", repo, "qrels.tsv")))
    queries = judged(load_queries(shared("swe", repo, "queries.jsonl")), qrels)
    results = pickle.loads((saved / f"{repo}.pickle").read_bytes())
    index = service.workspace_index(folder)
    ranker = service.file_answers.ranker(index)
    allowed = ranker.source_files(allowed_files(index, QueryOptions(workspace=str(folder), strategy="none")))
    out: dict = {}
    for query in queries:
        relevant = {d for d, g in qrels[query.id].items() if g > 0}
        got = results[query.id]
        for weight in WEIGHTS:
            none = file_ranking(ranker, got["none"], query.before, allowed, weight)
            first = file_ranking(ranker, got["auto"], query.before, allowed, weight, FILES.vector, BLEND_POOL)
            second = file_ranking(ranker, got[FILES.second], query.before, allowed, weight, None, BLEND_POOL)
            auto = [p for p, _ in fuse(first, second, FILES.share, FILES.k)]
            out.setdefault(("none", weight), []).append(scores(none, relevant))
            out.setdefault(("auto", weight), []).append(scores(auto, relevant))
    print(repo, len(queries), "queries", flush=True)
    return out


def table(runs: dict) -> tuple[list[dict], dict]:
    rows, picks = [], {}
    for repo in runs:
        def fitness(weight: float) -> float:
            return mean(mean(v[0] for v in runs[other][("auto", weight)]) for other in runs if other != repo)
        weight = picks[repo] = max(WEIGHTS, key=lambda w: (round(fitness(w), 6), -w))
        for name in ("none", "auto"):
            off, on = runs[repo][(name, 0.0)], runs[repo][(name, weight)]
            rows.append({"repository": f"{repo} ({len(on)})", "strategy": name,
                         "graph weight (chosen on the others)": f"{weight:g}",
                         "MRR@10": f"{mean(v[0] for v in on):.3f}", "without the graph": f"{mean(v[0] for v in off):.3f}",
                         "gain": f"{mean(v[0] for v in on) - mean(v[0] for v in off):+.3f}",
                         "R@10": f"{mean(v[1] for v in on):.3f}", "Acc@1": f"{mean(v[2] for v in on):.3f}"})
    return rows, picks


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default $KE_BENCH_DATA): the SWE "
                    "snapshots in <data>/swe, their index in <data>/ke-swe")
    ap.add_argument("--saved", type=Path, required=True, help="file_default.py --saved's folder")
    args = ap.parse_args()
    settings = Settings()
    data = data_root(args.data)
    service = LocalEngine(settings, data_dir=data / "ke-swe")
    try:
        runs = {repo: await repository(service, data, repo, args.saved) for repo in REPOS}
    finally:
        service.close()
    rows, picks = table(runs)
    for row in rows:
        print(row)
    every = {repo: {f"{name} {w:g}": round(mean(v[0] for v in values), 4) for (name, w), values in runs[repo].items()}
             for repo in runs}
    record("graph_loo", rows, settings={"weights": WEIGHTS, "engine": engine_settings(settings)},
           figures={"chosen": picks, "mrr10": every}, uses_percentiles=False,
           note=("file answers with history, as find_files gives them with `auto` and `none`; the graph weight "
                 "of each repository's rows chosen on the three others (best mean MRR@10 of auto); `gain`: "
                 "against weight 0 on the held-out repository"))


if __name__ == "__main__":
    asyncio.run(main())
