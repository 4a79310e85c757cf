"""File-level "where do I look?" on the SWE queries (issue #19): MRR@10 / R@10 over Python files.

    python benchmarks/file_level.py [--data DIR] [--no-chunks] [--trials 600] [--strategies bug-report,metadata]

The pytest and Sphinx snapshots are <data>/swe/<repo> (benchmarks/lib.swe_snapshot: cloned from
../shared/benchmarks/swe/<repo>/history.bundle if missing; <data>: --data, else $KE_BENCH_DATA).
Candidates and qrels: `*.py` files only. A query's history signals see only commits
strictly before its `before` time (per-query cut-off, in CommitIndex.weighted_scores and the `new`-file filter).

Chunk evidence (the model's): each snapshot is indexed once into <data>/ke-swe with the engine's defaults (the real
model, onnx-int8) and every query is asked once per strategy through LocalEngine.query at top_k 100 (as
find_files asks); the chunk rankings are cached there (chunks-<repo>.json). `none` is the vector
ranking (each result's `original`). A file's chunk evidence: best chunk + decay x the next (file_ranking).

Weights are tuned on one repository and reported on the other, both directions: random search on MRR@10
(+0.1 x R@10); the weights are the mean of the 20 best trials' (the single best trial over-fits 33/57 queries),
the discrete knobs (history half-life, chunk decay) the most frequent among them.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter
import csv
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import data_root, record, shared, swe_snapshot  # noqa: E402
from services.evaluation.metrics import compute_metrics  # noqa: E402
from services.indexing.history import CommitIndex, read_history, repo_state  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.retrieval import file_ranking as fr  # noqa: E402
from services.retrieval.file_answer import POOL, evidence  # noqa: E402

REPOS = ("pytest", "sphinx")
GRID = dict(title=[0, .25, .5, 1, 2], history=[0, .25, .5, 1, 2], history_title=[0, .25, .5, 1, 2],
            path=[0, .25, .5, 1, 2], symbol=[0, .25, .5, 1], test=[0, .5, 1, 2],
            chunks=[0, .25, .5, 1, 2, 4])  # bm25 fixed at 1
KNOBS = dict(half_life_days=[365.0], chunk_decay=[0.25, 0.5, 0.75])  # half-lives: --half-lives
HISTORY = ("history", "history_title", "new")


def load(repo: str, root: Path):
    folder = swe_snapshot(repo, root)  # the real history up to the snapshot, with its working tree
    labels = shared("swe", repo)
    qrels: dict[str, dict[str, int]] = {}
    with open(labels / "qrels.tsv") as f:
        for qid, doc, grade in list(csv.reader(f, delimiter="\t"))[1:]:
            if doc.endswith(".py") and int(grade) > 0:
                qrels.setdefault(qid, {})[doc] = int(grade)
    queries = [q for q in map(json.loads, open(labels / "queries.jsonl")) if q["id"] in qrels]
    files = {str(p.relative_to(folder)): p.read_text("utf-8", "replace")
             for p in folder.rglob("*.py") if ".git" not in p.relative_to(folder).parts}
    return folder, queries, qrels, files


async def chunk_rankings(folder: Path, queries: list[dict], data_dir: Path, strategies: list[str]) -> dict:
    """{strategy: {query id: [(path, score)] best first}}: each query asked once per strategy through the
    engine (the snapshot indexed into `data_dir` first); `none` is the vector ranking. Cached in `data_dir`."""
    cache = data_dir / f"chunks-{folder.name}.json"
    runs = json.loads(cache.read_text()) if cache.exists() else {}
    missing = [s for s in strategies if s not in runs]
    if missing:
        from services.core.settings import settings_from_env
        from services.engine.service import LocalEngine  # late: only a first run needs the model
        service = LocalEngine(settings_from_env(), data_dir=data_dir)  # KE_* variables apply (e.g. KE_BUGREPORT_*)
        try:
            await service.index(folder)
            for strategy in missing:
                runs[strategy] = {}
                for q in queries:
                    result = await service.query(q["text"], QueryOptions(
                        workspace=str(folder), strategy=strategy, top_k=POOL, expand_context=False, use_cache=False))
                    runs[strategy][q["id"]] = evidence(result.results)
                    runs.setdefault("none", {})[q["id"]] = evidence(result.original)
        finally:
            service.close()
        cache.write_text(json.dumps(runs))
    return runs


def features(repo: str, root: Path, data_dir: Path | None, strategies: list[str]) -> dict:
    """Each query's signals over the repository's Python files (history per half-life, chunk evidence per
    strategy and decay), and the timings."""
    folder, queries, qrels, files = load(repo, root)
    t0 = time.perf_counter()
    commits = read_history(folder)
    t1 = time.perf_counter()
    history = CommitIndex(commits)
    t2 = time.perf_counter()
    index = fr.FileIndex.from_texts(files)
    t3 = time.perf_counter()
    chunks = asyncio.run(chunk_rankings(folder, queries, data_dir, strategies)) if data_dir else {}
    per_query, latency = {}, []
    for q in queries:
        start = time.perf_counter()
        feats = fr.file_features(q["text"], index, history, q["before"])
        fr.rank(index.paths, fr.combine(feats, index.is_test, fr.Weights()))
        latency.append(time.perf_counter() - start)
        scores = {name: history.weighted_scores(terms, q["before"])
                  for name, terms in zip(("history", "history_title"), fr.query_terms(q["text"])[1:])}
        by_half_life = {}
        for half_life in {*KNOBS["half_life_days"], fr.Weights().history_knobs["half_life_days"]}:
            knobs = dict(fr.Weights().history_knobs, half_life_days=half_life)
            by_half_life[half_life] = {name: index.fold(fr.history_votes(history.commits, s, q["before"], **knobs))
                                       for name, s in scores.items()}
        by_strategy = {s: {d: index.fold(fr.chunk_evidence(ranked[q["id"]], d)) for d in KNOBS["chunk_decay"]}
                       for s, ranked in chunks.items()}
        per_query[q["id"]] = dict(base=feats, history=by_half_life, chunks=by_strategy)
    timing = {"git": repo_state(folder), "commits": len(commits), "history read s": round(t1 - t0, 2),
              "history index s": round(t2 - t1, 2), "py files": len(files), "file index s": round(t3 - t2, 2),
              "query ms mean": round(1000 * float(np.mean(latency)), 1),
              "query ms p95": round(1000 * float(np.percentile(latency, 95)), 1)}
    return dict(repo=repo, index=index, qrels=qrels, per_query=per_query, timing=timing)


def assemble(q: dict, weights: fr.Weights, history: bool, strategy: str | None) -> dict[str, np.ndarray]:
    """One query's features for `weights`' knobs; without history signals or chunk evidence when asked."""
    feats = dict(q["base"])
    if history:
        feats.update(q["history"][weights.history_knobs["half_life_days"]])
    else:
        feats = {k: v for k, v in feats.items() if k not in HISTORY}
    feats.pop("chunks", None)
    if strategy:
        feats["chunks"] = q["chunks"][strategy][weights.chunk_decay]
    return feats


def rankings(data, weights: fr.Weights, history: bool = True, strategy: str | None = None) -> dict[str, list[str]]:
    index = data["index"]
    return {qid: fr.rank(index.paths, fr.combine(assemble(q, weights, history, strategy), index.is_test, weights))
            for qid, q in data["per_query"].items()}


def only(signal: str, **knobs) -> fr.Weights:
    weights = fr.Weights(**{name: float(name == signal) for name in fr.SIGNALS}, test=0.0)
    return with_knobs(weights, **knobs)


def with_knobs(weights: fr.Weights, half_life_days: float | None = None, chunk_decay: float | None = None):
    knobs = dict(weights.history_knobs)
    if half_life_days is not None:
        knobs["half_life_days"] = half_life_days
    return replace(weights, history_knobs=knobs, chunk_decay=weights.chunk_decay if chunk_decay is None else chunk_decay)


def quick(data, ranked) -> float:
    """MRR@10 + 0.1 x R@10 (fast, for tuning; the table uses ranx)."""
    total = 0.0
    for qid, rel in data["qrels"].items():
        hits = [i for i, p in enumerate(ranked[qid][:10]) if p in rel]
        total += (1 / (hits[0] + 1) if hits else 0.0) + 0.1 * len(hits) / len(rel)
    return total / len(data["qrels"])


def tune(data, history: bool, trials: int, strategy: str | None = None, seed: int = 0,
         keep: int = 20) -> fr.Weights:
    rng = np.random.default_rng(seed)
    grid = {k: v if (history or not k.startswith("history")) and (strategy or k != "chunks") else [0]
            for k, v in GRID.items()}
    knobs = {k: v if (k == "half_life_days" and history) or (k == "chunk_decay" and strategy) else [v[len(v) // 2]]
             for k, v in KNOBS.items()}
    tried = []
    for _ in range(trials):
        w = with_knobs(fr.Weights(**{k: float(rng.choice(v)) for k, v in grid.items()}),
                       **{k: float(rng.choice(v)) for k, v in knobs.items()})
        tried.append((quick(data, rankings(data, w, history, strategy)), w))
    best = [w for _, w in sorted(tried, key=lambda t: -t[0])[:keep]]
    mean = fr.Weights(**{k: round(float(np.mean([getattr(w, k) for w in best])), 2) for k in grid})
    return with_knobs(mean, Counter(w.history_knobs["half_life_days"] for w in best).most_common(1)[0][0],
                      Counter(w.chunk_decay for w in best).most_common(1)[0][0])


def shown(w: fr.Weights) -> dict:
    return {**{k: v for k, v in asdict(w).items() if k in GRID}, "half_life_days": w.history_knobs["half_life_days"],
            "chunk_decay": w.chunk_decay}


# issue 19's reference lines (the app before file answers), for comparison; not measured by this script
REFERENCE = {"reference: bug-report chunks folded to files (issue 19)": {"pytest": "0.561 / 0.773", "sphinx": "0.432 / 0.760"}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    ap.add_argument("--no-chunks", action="store_true", help="files' own signals only: no index, no chunk evidence")
    ap.add_argument("--strategies", default="bug-report,metadata", help="chunk rankings to fold (none always)")
    ap.add_argument("--trials", type=int, default=600)
    ap.add_argument("--half-lives", default="365", help="history half-lives (days, 0: none) tuning may pick")
    ap.add_argument("--name", default="file_level", help="the name the run is recorded under")
    args = ap.parse_args()
    KNOBS["half_life_days"] = [float(h) for h in args.half_lives.split(",")]
    root = data_root(args.data)
    strategies = [] if args.no_chunks else args.strategies.split(",")
    data = {r: features(r, root, None if args.no_chunks else root / "ke-swe", strategies) for r in REPOS}
    folded = ["none", *strategies] if strategies else []
    rows: dict[str, dict[str, str]] = {}
    tuned = {}

    def add(name, repo, ranked):
        m = compute_metrics(data[repo]["qrels"], ranked)
        rows.setdefault(name, {})[repo] = f"{m['mrr@10']:.3f} / {m['r@10']:.3f}"

    for repo in REPOS:
        d, other = data[repo], data[REPOS[1 - REPOS.index(repo)]]
        add("file BM25, bug-report term weights", repo, rankings(d, only("bm25")))
        add("file BM25, title words", repo, rankings(d, only("title")))
        add("history votes (weighted terms) alone", repo, rankings(d, only("history")))
        add("history votes (title words) alone", repo, rankings(d, only("history_title")))
        for strategy in folded:
            add(f"`{strategy}` chunks folded to files alone", repo, rankings(d, only("chunks"), False, strategy))
        for strategy in [None, *folded]:
            chunks = f" + `{strategy}` chunks" if strategy else ""
            for name, history in ((f"combined{chunks}, no history (ablation)", False),
                                  (f"combined{chunks}, with history", True)):
                w = tune(other, history, args.trials, strategy)
                tuned[(name, repo)] = w
                add(f"{name}, tuned on the other repo", repo, rankings(d, w, history, strategy))
    print(f"\n| method | {' | '.join(f'{r} MRR@10 / R@10' for r in REPOS)} |\n|---|---|---|")
    for name, cells in rows.items():
        print(f"| {name} | {' | '.join(cells.get(r, '') for r in REPOS)} |")
    print("\nweights (repository reported <- tuned on the other):")
    for (name, repo), w in tuned.items():
        print(f"  {repo}, {name}: {shown(w)}")
    print("\ntimings:")
    for repo in REPOS:
        print(f"  {repo}: {data[repo]['timing']}")
    table = [{"method": name, **{f"{r} MRR@10 / R@10": cells.get(r, "") for r in REPOS}}
             for name, cells in {**REFERENCE, **rows}.items()]
    record(args.name, table, settings={"trials": args.trials, "grid": GRID, "knobs": KNOBS,
                                          "chunk strategies": folded, "chunk pool": POOL},
           figures={"weights": {f"{repo} <- {name}": shown(w) for (name, repo), w in tuned.items()},
                    "timings": {r: data[r]["timing"] for r in REPOS}},
           uses_percentiles=False,
           note="Python files only; history counts only commits before each query's `before`; each "
                "repository's weights tuned on the other (mean of the 20 best random-search trials)"
                + ("; chunk evidence from the engine (onnx-int8 model) at top_k 100" if folded else "; no chunk evidence"))


if __name__ == "__main__":
    main()
