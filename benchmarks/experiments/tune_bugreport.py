"""Informed: `bug-report`'s default weights (title 4, bm25 2, symbol 2, path 1, test -4, k 30).

Tune the `bug-report` strategy's weights with cross-validation across repositories.

    python benchmarks/experiments/tune_bugreport.py [--data DIR] [--repos pytest,sphinx] [--cache F]

For each repository (<data>/swe/NAME indexed in <data>/ke-swe, <data>: --data, else $KE_BENCH_DATA; labels in
../shared/benchmarks/swe/NAME/) every judged query is
asked once through the engine's public API, LocalEngine.query, with every signal weighing 1 (so
every part of the question is embedded) and top_k 100: each result carries its signals (a rank per
ranked signal, a share of the best match per matched one, the test-file mark). The signals are cached
(--cache) and a grid of weights is scored in numpy at file level (MRR@10, R@10) over those 100 results.
Prints, for each repository, the best weights tuned on it and the score they give on the others (tune
on one, report on the other), and the grid's best weights over all repositories together; then the
best weights are measured exactly, again through LocalEngine.query at top_k 10 as the app asks,
and recorded (benchmarks/lib.py). The grid is an estimate: it sees only the 100 results, and the
int8 encoder's vectors shift slightly with the texts encoded beside them (every part is embedded here,
only the weighted ones in the app), so near-equal ranks can swap; the exact figures are the ones to quote.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import data_root, engine_settings, record, shared, swe_snapshot  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import load_qrels  # noqa: E402
from services.retrieval.strategies.bugreport import MATCHED, PLAIN, RANKED, SIGNALS  # noqa: E402

BY_PLAIN = {plain: name for name, plain in PLAIN.items()}  # the why panel's words -> the signal's name

VALUES = [0, 0.25, 0.5, 1, 2, 4]
KS = [3, 10, 30]
POOL_TOP_K = 100  # results whose signals the grid sees
EVERY_SIGNAL = {f"bugreport_{name}_weight": 1.0 for name in SIGNALS}  # every part embedded, every signal shown


def options(workspace: str, top_k: int) -> QueryOptions:
    return QueryOptions(workspace=workspace, top_k=top_k, strategy="bug-report", min_relevance=0.0,
                        expand_context=False, use_cache=False)


def labelled(labels: Path, name: str) -> list[tuple[str, str, set[str]]]:
    """(id, question, relevant paths) of every judged query of repository `name`."""
    qrels = load_qrels(labels / name / "qrels.tsv")
    out = []
    for query in load_queries(labels / name / "queries.jsonl"):
        relevant = {d for d, g in qrels.get(query.id, {}).items() if g > 0}
        if relevant:
            out.append((query.id, query.text, relevant))
    return out


def features(result) -> list[dict]:
    """Per result: its path and each signal's rank (ranked), share of the best match (matched), test mark."""
    rows = []
    for item in result.results:
        row = {"_file": item.chunk.path,  # ("path" is a signal) and the engine's tie-break for equal scores:
               "_tie": (item.original_rank if item.original_rank is not None else float("inf"), item.chunk.id)}
        for signal in item.signals:
            name = BY_PLAIN.get(signal.name.partition(": #")[0])  # "similar to the title: #3", "defines a name …"
            if name in MATCHED:
                row[name] = signal.contribution  # weight 1 x value / best
            elif name:
                row[name] = signal.value  # the rank among every candidate, before the cut
            elif signal.name == "test file":
                row["test"] = 1.0
        rows.append(row)
    return rows


async def collect(service: LocalEngine, labels: Path, name: str, workspace: str) -> list[dict]:
    out = []
    for query_id, question, relevant in labelled(labels, name):
        result = await service.query(question, options(workspace, POOL_TOP_K))
        out.append({"id": query_id, "relevant": relevant, "features": features(result)})
        print(f"  {name}: {len(out)} queries", end="\r", file=sys.stderr)
    return out


def as_arrays(item: dict) -> dict:
    """Per result: file index, relevance, and each signal's rank (0 = absent) or share of the best."""
    rows = item["features"]
    paths = [r["_file"] for r in rows]
    files = {p: n for n, p in enumerate(dict.fromkeys(paths))}
    ties = sorted(range(len(rows)), key=lambda n: rows[n]["_tie"])
    out = {"file": np.array([files[p] for p in paths], dtype=int),
           "relevant": np.array([p in item["relevant"] for p in paths], dtype=bool),
           "tie": np.argsort(ties)}  # each result's place when scores are equal (original rank, then id)
    for name in SIGNALS:
        out[name] = np.array([r.get(name, 0.0) for r in rows], dtype=float)
    return out


def metrics(arrays: list[dict], weights: dict[str, float], k: float) -> tuple[float, float]:
    mrr, recall = [], []
    for a in arrays:
        score = np.zeros(len(a["file"]))
        for name in RANKED:
            ranks = a[name]
            score += np.where(ranks > 0, weights[name] * k / (k + ranks - 1), 0.0)
        for name in MATCHED:
            score += weights[name] * a[name]
        score -= weights["test"] * a["test"]
        order = np.lexsort((a["tie"], -np.round(score, 9)))  # as the engine sorts: score, then the tie-break
        _, first = np.unique(a["file"][order], return_index=True)
        files_in_order = order[np.sort(first)][:10]  # one candidate per file, best first
        hits = a["relevant"][files_in_order]
        mrr.append(1.0 / (np.argmax(hits) + 1) if hits.any() else 0.0)
        relevant_files = len(set(a["file"][a["relevant"]]))
        total = max(relevant_files, 1)
        recall.append(hits.sum() / total)
    return float(np.mean(mrr)), float(np.mean(recall))


def search(arrays: list[dict]) -> list[tuple[float, float, dict, float]]:
    """Coordinate ascent over the weights (from the vector ranking alone), for each k: best first."""
    results = []
    for k in KS:
        weights = {n: 0.0 for n in SIGNALS} | {"vector": 1.0}
        best = metrics(arrays, weights, k)
        for _ in range(4):
            improved = False
            for name in SIGNALS:
                for value in VALUES:
                    trial = weights | {name: value}
                    if any(trial.values()) and (score := metrics(arrays, trial, k)) > best:
                        weights, best, improved = trial, score, True
            if not improved:
                break
        results.append((*best, weights, k))
    return sorted(results, key=lambda r: (-r[0], -r[1]))


async def exact(data_dir: str, labels: Path, repos: dict, weights: dict, k: float) -> dict:
    """File-level MRR@10 and R@10 of `weights` per repository, through LocalEngine.query at top_k 10."""
    settings = Settings().with_changes(bugreport_k=float(k), **{f"bugreport_{n}_weight": float(w)
                                                                 for n, w in weights.items()})
    service = LocalEngine(settings, data_dir=data_dir)
    scores = {}
    try:
        for name, workspace in repos.items():
            mrr, recall = [], []
            for _, question, relevant in labelled(labels, name):
                files = list(dict.fromkeys(r.chunk.path for r in
                                           (await service.query(question, options(workspace, 10))).results))[:10]
                hits = [f in relevant for f in files]
                mrr.append(1.0 / (hits.index(True) + 1) if any(hits) else 0.0)
                recall.append(sum(hits) / max(len(relevant), 1))
            scores[name] = (float(np.mean(mrr)), float(np.mean(recall)))
    finally:
        service.close()
    return scores


async def main(args) -> None:
    labels, cache = shared("swe"), Path(args.cache)
    data = pickle.loads(cache.read_bytes()) if cache.exists() else {}
    repos = {name: str(swe_snapshot(name, args.data)) for name in args.repos.split(",")}
    missing = [n for n in repos if n not in data]
    if missing:
        service = LocalEngine(Settings().with_changes(**EVERY_SIGNAL), data_dir=args.data_dir)
        try:
            for name in missing:
                data[name] = await collect(service, labels, name, repos[name])
        finally:
            service.close()
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(data))
    arrays = {name: [as_arrays(item) for item in data[name]] for name in repos}
    only_vector = {n: 0.0 for n in SIGNALS} | {"vector": 1.0}
    for name in repos:
        print(f"{name}: {len(arrays[name])} queries; vector only: MRR@10/R@10 = "
              "%.3f/%.3f" % metrics(arrays[name], only_vector, 10))
    tuned = {name: search(arrays[name])[0] for name in repos}
    for name, (mrr, rec, weights, k) in tuned.items():
        print(f"\ntuned on {name}: k={k} {weights}: {name} {mrr:.3f}/{rec:.3f}")
        for other in repos:
            if other != name:
                print("  measured on %s: MRR@10/R@10 = %.3f/%.3f" % (other, *metrics(arrays[other], weights, k)))
    together = search([a for name in repos for a in arrays[name]])[:5]
    print("\nbest over all repositories together:")
    for mrr, rec, weights, k in together:
        print(f"  {mrr:.3f}/{rec:.3f} k={k} {weights} | " + ", ".join(
            "%s %.3f" % (n, metrics(arrays[n], weights, k)[0]) for n in repos))
    current = Settings()
    candidates = {"current settings": ({n: getattr(current, f"bugreport_{n}_weight") for n in SIGNALS},
                                       current.bugreport_k),
                  "best together": (together[0][2], together[0][3]),
                  **{f"tuned on {n}": (w, k) for n, (_, _, w, k) in tuned.items()}}
    rows = []
    print("\nexact, through LocalEngine.query at top_k 10 (file level, MRR@10 / R@10):")
    for label, (weights, k) in candidates.items():
        scores = await exact(args.data_dir, labels, repos, weights, k)
        print(f"  {label}: " + ", ".join(f"{n} {m:.3f}/{r:.3f}" for n, (m, r) in scores.items()))
        rows.append({"weights": label, "k": k, **{f"{n} MRR@10 / R@10": f"{m:.3f} / {r:.3f}"
                                                   for n, (m, r) in scores.items()},
                     **{n: w for n, w in weights.items() if w}})
    record("tune_bugreport", rows, uses_percentiles=False,
           settings={"repos": repos, "labels": str(labels), "grid_top_k": POOL_TOP_K, "values": VALUES, "ks": KS,
                     "engine": engine_settings()},
           note="file-level MRR@10 and R@10 of each weight set, measured through LocalEngine.query")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    parser.add_argument("--repos", default="pytest,sphinx", help="SWE repositories, comma-separated")
    parser.add_argument("--cache", type=Path, help="the collected signals (default: <data>/bugreport-features.pkl)")
    arguments = parser.parse_args()
    arguments.data = data_root(arguments.data)
    arguments.data_dir = str(arguments.data / "ke-swe")
    arguments.cache = arguments.cache or arguments.data / "bugreport-features.pkl"
    asyncio.run(main(arguments))
