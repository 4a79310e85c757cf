"""The right answer by default (issue 41): file answers with history on pytest, Sphinx, xarray and pylint.

    python benchmarks/file_default.py [--data DIR] [--saved DIR]

Every judged SWE issue is asked once per strategy through LocalEngine.query (top_k 100, each query's
`before`), then answered as files by the engine's own FileRanker (what `find_files` does) for every
setting of GRID (the traceback and vector weights of file_ranking.Weights; the question's signals are
computed once, as find_files does, and added with each setting's weights). The setting is chosen
leave-one-repository-out: for each repository, the setting with
the best mean MRR@10 over the single strategies on the three others (ties: the smaller weights) scores it.
`auto` answers a report as find_files does (FileRanker.blended: bug-report's file ranking fused by rank with
metadata's, strategies/auto.py `Blend`), at that traceback weight, with the blend (share, k, vector) chosen
the same way: best mean MRR@10 of `auto` on the three others. The table gives each repository's held-out
figures; `figures` keeps every setting's.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import data_root, engine_settings, judged, record, shared, swe_snapshot  # noqa: E402
from services.core.models import QueryOptions
from services.retrieval.file_answer import BLEND_POOL, fuse
from services.retrieval.strategies.auto import Blend  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.file_answers import allowed_files  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import file_qrels, load_qrels  # noqa: E402

REPOS = ["pytest", "sphinx", "xarray", "pylint"]
SINGLE = ["none", "metadata", "bug-report"]
STRATEGIES = SINGLE + ["auto"]
TRACEBACK = [0.0, 1.0, 2.0, 3.0]  # file_ranking.Weights.traceback
VECTOR = [0.0, 0.5, 1.0]  # file_ranking.Weights.vector
GRID = [(a, b) for a in TRACEBACK for b in VECTOR]
BLENDS = [Blend(share, k, vector) for share in (0.2, 0.3, 0.4, 0.5) for k in (1, 3, 10, 30, 60) for vector in (0.5, 1.0)]


def scores(ranked: list[str], relevant: set[str]) -> tuple[float, float, float]:
    """(reciprocal rank within 10, recall at 10, whether the first is relevant)."""
    top = ranked[:10]
    rr = next((1.0 / k for k, p in enumerate(top, 1) if p in relevant), 0.0)
    return rr, len(relevant & set(top)) / len(relevant), float(bool(top) and top[0] in relevant)


async def chunk_rankings(service: LocalEngine, folder: Path, queries) -> dict:
    """{query id: {strategy: QueryResult}}: each question asked once per strategy, top_k 100, its `before`."""
    out: dict = {}
    for query in queries:
        for name in STRATEGIES:
            options = QueryOptions(workspace=str(folder), top_k=100, strategy=name, min_relevance=0.0,
                                   expand_context=False, use_cache=False, before=query.before)
            out.setdefault(query.id, {})[name] = await service.query(query.text, options)
    return out


async def repository(service: LocalEngine, data: Path, repo: str, saved: Path | None) -> dict:
    """{strategy: {weights: [(rr, recall, acc1) per query]}}; the chunk rankings kept in `saved` and reused."""
    folder = swe_snapshot(repo, data)
    await service.index(folder)
    qrels = file_qrels(load_qrels(shared("swe", repo, "qrels.tsv")))
    queries = judged(load_queries(shared("swe", repo, "queries.jsonl")), qrels)
    kept = saved / f"{repo}.pickle" if saved else None
    if kept and kept.exists():
        results = pickle.loads(kept.read_bytes())
    else:
        results = await chunk_rankings(service, folder, queries)
        if kept:
            kept.write_bytes(pickle.dumps(results))
    index = service.workspace_index(folder)
    ranker = service.file_answers.ranker(index)
    allowed = ranker.source_files(allowed_files(index, QueryOptions(workspace=str(folder), strategy="none")))
    out: dict = {s: {w: [] for w in GRID} for s in SINGLE}
    out["auto"] = {(t, b): [] for t in TRACEBACK for b in BLENDS}
    for query in queries:
        relevant = {d for d, g in qrels[query.id].items() if g > 0}
        for name in SINGLE:
            result = results[query.id][name]
            feats, why = ranker.features(result, query.before, ranker.weights())  # what find_files does
            for weight in GRID:
                weights = replace(ranker.weights(), traceback=weight[0], vector=weight[1])
                answer = ranker.ranked(result, dict(feats), why, weights, 10, query.before, allowed)
                out[name][weight].append(scores([f.path for f in answer.files], relevant))
        kept: dict = {}
        for t, blend in out["auto"]:
            first, second = (legs(ranker, results[query.id][n], query.before, allowed, t, v, kept)
                             for n, v in (("auto", blend.vector), (blend.second, ranker.weights().vector)))
            fused = [p for p, _ in fuse(first, second, blend.share, blend.k)]
            out["auto"][(t, blend)].append(scores(fused, relevant))
    print(repo, len(queries), "queries", flush=True)
    return out


def legs(ranker, result, before, allowed, traceback: float, vector: float, kept: dict) -> list[str]:
    """One leg of auto's blend: `result`'s file ranking (BLEND_POOL files) at these weights (`kept`: one
    question's, reused across blends)."""
    key = (result.strategy, traceback, vector)
    if key not in kept:
        weights = replace(ranker.weights(), traceback=traceback, vector=vector)
        feats, why = ranker.features(result, before, weights)
        kept[key] = [f.path for f in ranker.ranked(result, feats, why, weights, BLEND_POOL, before, allowed).files]
    return kept[key]


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def chosen_weight(runs: dict, held_out: str) -> tuple[float, float]:
    """The weights with the best mean MRR@10 (over the single strategies and the other repositories' queries)."""
    def fitness(weight) -> float:
        return mean(mean(rr for rr, _, _ in runs[repo][name][weight])
                    for repo in runs if repo != held_out for name in SINGLE)
    return max(GRID, key=lambda w: (round(fitness(w), 6), -w[0], -w[1]))


def chosen_blend(runs: dict, held_out: str, traceback: float) -> Blend:
    """auto's blend with the best mean MRR@10 on the other repositories (ties: the smaller share, k, vector)."""
    def fitness(blend: Blend) -> float:
        return mean(mean(rr for rr, _, _ in runs[repo]["auto"][(traceback, blend)]) for repo in runs if repo != held_out)
    return max(BLENDS, key=lambda b: (round(fitness(b), 6), -b.share, -b.k, -b.vector))


def table(runs: dict) -> tuple[list[dict], dict]:
    rows, picks = [], {}
    for repo in runs:
        weight = chosen_weight(runs, repo)
        blend = chosen_blend(runs, repo, weight[0])
        picks[repo] = {"traceback, vector": list(weight), "blend share, k, vector": [blend.share, blend.k, blend.vector]}
        best = max(mean(rr for rr, _, _ in runs[repo][s][weight]) for s in SINGLE)
        for name in STRATEGIES:
            values = runs[repo][name][(weight[0], blend) if name == "auto" else weight]
            mrr = mean(v[0] for v in values)
            rows.append({"repository": f"{repo} ({len(values)})", "strategy": name,
                         "weights (chosen on the others)": (f"blend {blend.share:g}, k {blend.k}, vector {blend.vector:g}"
                                                            if name == "auto" else ", ".join(f"{w:g}" for w in weight)),
                         "MRR@10": f"{mrr:.3f}",
                         "R@10": f"{mean(v[1] for v in values):.3f}", "Acc@1": f"{mean(v[2] for v in values):.3f}",
                         "vs none": "" if name != "auto" else f"{mrr - mean(v[0] for v in runs[repo]['none'][weight]):+.3f}",
                         "vs best single": "" if name != "auto" else f"{mrr - best:+.3f}"})
    return rows, picks


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default $KE_BENCH_DATA): the SWE "
                    "snapshots in <data>/swe, their index in <data>/ke-swe")
    ap.add_argument("--repos", default=",".join(REPOS))
    ap.add_argument("--saved", type=Path, help="a folder: each repository's chunk rankings are kept there and reused")
    args = ap.parse_args()
    settings = Settings()
    if args.saved:
        args.saved.mkdir(parents=True, exist_ok=True)
    data = data_root(args.data)
    service = LocalEngine(settings, data_dir=data / "ke-swe")
    try:
        runs = {repo: await repository(service, data, repo, args.saved) for repo in args.repos.split(",")}
    finally:
        service.close()
    rows, picks = table(runs)
    for row in rows:
        print(row)
    every = {repo: {name: {",".join(f"{x:g}" for x in w): round(mean(v[0] for v in runs[repo][name][w]), 4) for w in GRID}
                    for name in SINGLE} for repo in runs}
    blends = {repo: {f"{t:g}|{b.share:g},{b.k},{b.vector:g}": round(mean(v[0] for v in vs), 4)
                     for (t, b), vs in runs[repo]["auto"].items()} for repo in runs}
    record("file_default", rows, settings={"strategies": STRATEGIES, "grid": GRID, "blends": len(BLENDS), "top_k": 100,
                                           "engine": engine_settings(settings)},
           figures={"chosen": picks, "mrr10_by_weight": every, "auto_mrr10_by_traceback_and_blend": blends},
           uses_percentiles=False,
           note=("file answers with history (each query's `before`), the engine's FileRanker over every file "
                 "the app indexes; each repository's traceback and vector weights chosen on the three others "
                 "(best mean MRR@10 over none, metadata and bug-report), then auto's blend (bug-report's file ranking "
                 "fused by rank with metadata's: metadata's share, k, bug-report's vector weight) chosen on the "
                 "three others; `vs best single`: auto minus the best of none, metadata and bug-report"))


if __name__ == "__main__":
    asyncio.run(main())
