"""Informed: the graph's file signal ships at weight 0.2, top chunk and traceback frames; names, callers off.

Tune the code graph's file-answer signal (issue #35): weight, the sources that vote, specificity.

    python benchmarks/experiments/tune_graph.py [--data DIR] [--cache F]   # snapshots in <data>/swe, index in <data>/ke-swe

Asks every SWE question of pytest and Sphinx once per strategy (as `app_eval.py files` does, each query's
`before` cutting the history), keeps each file's signals and the graph's raw relations, through the engine's
own functions (services/retrieval/graph.py): the files that each of the top 10 chunks calls and that call it,
the files that the traceback's frames call, the files that the definitions of names the question uses call,
and per file how many files call it. Then re-ranks offline for every setting of the grid (--cache keeps the
collected signals for a rerun). A setting is chosen on one repository (the best mean MRR@10 over strategies,
no strategy losing more than 0.005; ties go to the first in grid order: frames on as in the app, the other
sources off) and reported on the other. Prints; records nothing (app_eval.py records the shipped default).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import pickle
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.app_eval import STRATEGIES  # noqa: E402
from benchmarks.lib import data_root, judged, shared, swe_snapshot  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.file_answers import allowed_files  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import file_qrels, load_qrels  # noqa: E402
from services.retrieval import file_ranking as fr  # noqa: E402
from services.retrieval import graph  # noqa: E402
from services.retrieval.file_answer import CHUNK_WEIGHT, POOL, _found  # noqa: E402

TOP = 10  # top chunks whose relations are kept
# weight: Weights.graph; chunks: top chunks whose callees vote (the k-th 1/k); frames: a traceback frame's vote;
# names: a named definition's vote (Settings.files_graph_names); callers: top chunks whose callers vote
# (files_graph_callers); specific: a vote divided by (files calling the voted file) ** specific (not in the app)
GRID = dict(weight=[0.1, 0.2, 0.3, 0.5], chunks=[1, 3, 10], frames=[1.0, 0.0], names=[0.0, 1.0], callers=[0, 3],
            specific=[0.0, 1.0])
OFF = dict(weight=0.0, chunks=1, frames=0.0, names=0.0, callers=0, specific=0.0)
LOSS = 0.005


async def collect(service: LocalEngine, root: Path, repo: str, names: list[str]) -> tuple[list[dict], Files]:
    folder = swe_snapshot(repo, root)
    queries = load_queries(shared("swe", repo, "queries.jsonl"))
    qrels = file_qrels(load_qrels(shared("swe", repo, "qrels.tsv")))
    await service.index(folder)
    index = service.workspace_index(str(folder))
    catalog = index.catalog()
    ranker = service.file_answers.ranker(index)
    weights = replace(fr.Weights(), chunks=CHUNK_WEIGHT)
    seen: dict = {}

    def related(find, chunk):  # a chunk's callee or caller files, once per chunk
        key = (find.__name__, chunk.id)
        if key not in seen:
            seen[key] = find(catalog, graph.chunk_target(chunk))
        return seen[key]

    rows = []
    for query in judged(queries, qrels):
        relevant = {p for p, g in qrels[query.id].items() if g > 0}
        for name in names:
            options = QueryOptions(workspace=str(folder), top_k=POOL, strategy=name, min_relevance=0.0,
                                   expand_context=False, use_cache=False, before=query.before)
            result = await service.query(query.text, options)
            feats, why = ranker.features(result, query.before, weights)
            allowed = ranker.source_files(allowed_files(index, options))
            frames = graph.frame_targets(catalog, why.signals.frames)
            named = graph.named_targets(catalog, why.signals.names(), frames)
            rows.append(dict(query=query.id, strategy=name, feats=feats, allowed=allowed, relevant=relevant,
                             down=[related(graph.callee_files, r.chunk) for r in result.results[:TOP]],
                             up=[related(graph.caller_files, r.chunk) for r in result.results[:TOP]],
                             frames=[graph.callee_files(catalog, t) for t in frames],
                             named=[graph.callee_files(catalog, t) for t in named]))
    return rows, Files(ranker.index.paths, ranker.index.is_test, fan_in(catalog, ranker.index.paths))


def fan_in(catalog, paths: list[str]) -> dict[str, int]:
    """Per file, how many other files call it (or use its attributes or bases)."""
    callers: dict[str, int] = {}
    for path in paths:
        for callee in graph.callee_files(catalog, graph.Target(path, 1, 10**9, "", "", "module", "", "")):
            callers[callee] = callers.get(callee, 0) + 1
    return callers


class Files:
    """What re-ranking needs of a FileIndex (which holds the catalogue's connection: no pickle)."""

    def __init__(self, paths: list[str], is_test: np.ndarray, fan_in: dict[str, int]) -> None:
        self.paths, self.is_test, self.fan_in = paths, is_test, fan_in
        self.position = {p: i for i, p in enumerate(paths)}

    fold = fr.FileIndex.fold


def graph_feature(row: dict, index: Files, setting: dict) -> np.ndarray:
    """The app's graph_votes (services/retrieval/file_answer.py) from the collected relations."""
    votes: dict[str, float] = {}
    voters = [(1.0 / k, paths) for k, paths in enumerate(row["down"][:setting["chunks"]], 1)]
    voters += [(setting["frames"], paths) for paths in row["frames"]]
    voters += [(setting["names"], paths) for paths in row["named"]]
    voters += [(1.0 / k, paths) for k, paths in enumerate(row["up"][:setting["callers"]], 1)]
    for vote, paths in voters:
        for p in paths:
            votes[p] = votes.get(p, 0.0) + vote / max(index.fan_in.get(p, 1), 1) ** setting["specific"]
    return index.fold(votes)


def scores(rows: list[dict], index: Files, setting: dict) -> dict[str, tuple]:
    """Per strategy: (MRR@10, R@10)."""
    weights = replace(fr.Weights(), chunks=CHUNK_WEIGHT, graph=setting["weight"])
    per: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        feats = dict(row["feats"])
        if setting["weight"]:
            feats["graph"] = graph_feature(row, index, setting)
        total = fr.combine(feats, index.is_test, weights)
        found = _found(feats, row["allowed"], index.paths)
        top = [index.paths[i] for i in np.argsort(-total, kind="stable") if found[i]][:10]
        hits = [n for n, p in enumerate(top, 1) if p in row["relevant"]]
        per.setdefault(row["strategy"], []).append(
            (1.0 / hits[0] if hits else 0.0, len(set(top) & row["relevant"]) / len(row["relevant"])))
    return {name: tuple(np.mean(v, axis=0)) for name, v in per.items()}


def settings() -> list[dict]:
    return [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]


def choose(results: list[tuple[dict, dict]], base: dict) -> dict:
    """The setting with the best mean MRR@10, no strategy below base - LOSS (OFF when none gains)."""
    best, best_mean = OFF, np.mean([m for m, _ in base.values()])
    for setting, got in results:
        if any(got[n][0] < base[n][0] - LOSS for n in base):
            continue
        mean = np.mean([m for m, _ in got.values()])
        if mean > best_mean + 1e-9:
            best, best_mean = setting, mean
    return best


def table(label: str, base: dict, got: dict) -> None:
    print(f"  {label}")
    for name in base:
        print(f"    {name:14s} MRR@10 {base[name][0]:.3f} -> {got[name][0]:.3f} ({got[name][0] - base[name][0]:+.3f})"
              f"   R@10 {base[name][1]:.3f} -> {got[name][1]:.3f}")


def ceiling(rows: list[dict], index: Files) -> dict[str, float]:
    """Per strategy, the MRR@10 gained if every relevant file that some collected relation reaches (the top
    chunks' callees and callers, the frames', the named definitions') went to #1, and nothing else moved."""
    weights = replace(fr.Weights(), chunks=CHUNK_WEIGHT)
    per: dict[str, list[float]] = {}
    for row in rows:
        total = fr.combine(row["feats"], index.is_test, weights)
        found = _found(row["feats"], row["allowed"], index.paths)
        top = [index.paths[i] for i in np.argsort(-total, kind="stable") if found[i]][:10]
        hits = [n for n, p in enumerate(top, 1) if p in row["relevant"]]
        reached = set().union(*row["down"], *row["up"], *row["frames"], *row["named"])
        gain = 1.0 - (1.0 / hits[0] if hits else 0.0) if reached & row["relevant"] else 0.0
        per.setdefault(row["strategy"], []).append(gain)
    return {name: float(np.mean(v)) for name, v in per.items()}


def markdown(base: dict, chosen: dict, data: dict) -> None:
    """The out-of-sample table: each repository with the other's choice."""
    print("| strategy | pytest (tuned on Sphinx) | Sphinx (tuned on pytest) |\n|---|---|---|")
    got = {repo: scores(*data[repo], chosen[repo]) for repo in data}
    for name in base["pytest"]:
        cells = []
        for repo in ("pytest", "sphinx"):
            was, now = base[repo][name][0], got[repo][name][0]
            cells.append(f"{was:.3f} → {now:.3f} ({now - was:+.3f})".replace("-", "−"))
        print(f"| {name} | {' | '.join(cells)} |")


def shown(setting: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in setting.items())


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--cache", type=Path, help="a pickle of the collected signals: written once, then read")
    ap.add_argument("--grid", action="store_true", help="also print every setting's figures")
    args = ap.parse_args()
    if args.cache and args.cache.exists():
        data = pickle.loads(args.cache.read_bytes())
    else:
        service = LocalEngine(Settings(), data_dir=data_root(args.data) / "ke-swe")
        try:
            data = {repo: await collect(service, data_root(args.data), repo, args.strategies.split(","))
                    for repo in ("pytest", "sphinx")}
        finally:
            service.close()
        if args.cache:
            args.cache.write_bytes(pickle.dumps(data))
    base = {repo: scores(*data[repo], OFF) for repo in data}
    grid = {repo: [(s, scores(*data[repo], s)) for s in settings()] for repo in data}
    chosen = {}
    for tuned, other in (("pytest", "sphinx"), ("sphinx", "pytest")):
        setting = chosen[other] = choose(grid[tuned], base[tuned])
        print(f"tuned on {tuned}: {shown(setting)}")
        table(f"{tuned} (in sample)", base[tuned], scores(*data[tuned], setting))
        table(f"{other} (out of sample)", base[other], scores(*data[other], setting))
    shipped = dict(OFF, weight=Settings().files_graph_weight, chunks=Settings().files_graph_chunks, frames=1.0,
                   names=Settings().files_graph_names, callers=Settings().files_graph_callers)
    print(f"shipped: {shown(shipped)}")
    for repo in data:
        table(repo, base[repo], scores(*data[repo], shipped))
    markdown(base, chosen, data)
    for repo in data:
        print(f"ceiling on {repo}: " + ", ".join(f"{n} {v:+.3f}" for n, v in ceiling(*data[repo]).items()))
    if args.grid:
        for repo, results in grid.items():
            print(f"grid on {repo}: {' '.join(GRID)} -> mean MRR@10, deltas over strategies")
            for setting, got in results:
                deltas = [got[n][0] - base[repo][n][0] for n in got]
                print(f"    {' '.join(str(v) for v in setting.values())} {np.mean([m for m, _ in got.values()]):.4f} "
                      f"mean {np.mean(deltas):+.4f} worst {min(deltas):+.4f} best {max(deltas):+.4f}")


if __name__ == "__main__":
    asyncio.run(main())
