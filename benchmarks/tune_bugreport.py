"""Tune the `bug-report` strategy's weights with cross-validation across repositories.

    python benchmarks/tune_bugreport.py --data-dir DIR \
        --repo pytest=/work/scratch/swe/pytest --repo sphinx=/work/scratch/swe/sphinx

For each repository (indexed in DIR, labels in /work/shared/benchmarks/swe/NAME/) every judged query goes
once through the real pipeline up to the reranker (same pool, same signals: bugreport.gather); the
signals are cached (--cache) and a grid of weights is scored in numpy at file level (MRR@10, R@10).
Prints, for each repository, the best weights tuned on it and the score they give on the others
(tune on one, report on the other), and the grid's best weights over all repositories together.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.evaluation.metrics import load_qrels, load_queries  # noqa: E402
from services.engine.service import KnowledgeService  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.retrieval.search import IndexContext, Searcher  # noqa: E402
from services.retrieval.strategies import RerankRequest  # noqa: E402
from services.retrieval.strategies.bugreport import MATCHED, RANKED, SIGNALS, gather  # noqa: E402

LABELS = Path("/work/shared/benchmarks/swe")
VALUES = [0, 0.25, 0.5, 1, 2, 4]
KS = [3, 10, 30]


def request_for(service: KnowledgeService, question: str, workspace: str) -> RerankRequest:
    """The request the query flow would hand `bug-report` (services.retrieval.search.Searcher.query)."""
    options = QueryOptions(workspace=workspace, top_k=100, strategy="bug-report", min_relevance=0.0,
                           expand_context=False, use_cache=False)
    index = service._index(workspace)
    strategy = service._strategy("bug-report")
    vector = service.embedder.encode([question])[0]
    searcher = Searcher(index, service.settings, service.embedder.encode)
    semantic, keyword, _ = searcher.candidates(question, vector, options, strategy.pool_size(100), False)
    return RerankRequest(question, semantic, keyword, 100, IndexContext(index, service.embedder.encode), vector)


def collect(service: KnowledgeService, name: str, workspace: str) -> list[dict]:
    queries = load_queries(LABELS / name / "queries.jsonl")
    qrels = load_qrels(LABELS / name / "qrels.tsv")
    out = []
    for query in queries:
        relevant = {d for d, g in qrels.get(query.id, {}).items() if g > 0}
        if relevant:
            feats = gather(request_for(service, query.text, workspace), service.settings, every_part=True)
            out.append({"id": query.id, "relevant": relevant, "features": feats})
            print(f"  {name}: {len(out)} queries", end="\r", file=sys.stderr)
    return out


def as_arrays(item: dict) -> dict:
    """Per candidate: file index, relevance, and each signal's rank (0 = absent) or normalised value."""
    feats = item["features"]
    ids = list(feats.candidates)
    paths = [feats.candidates[i].chunk.path for i in ids]
    files = {p: n for n, p in enumerate(dict.fromkeys(paths))}
    out = {"file": np.array([files[p] for p in paths]), "relevant": np.array([p in item["relevant"] for p in paths])}
    position = {i: n for n, i in enumerate(ids)}
    for name in SIGNALS:
        values = feats.values[name]
        column = np.zeros(len(ids))
        if name in RANKED:
            for rank, (i, _) in enumerate(sorted(values.items(), key=lambda kv: -kv[1]), 1):
                column[position[i]] = rank
        else:
            best = max(values.values(), default=0.0)
            for i, v in values.items():
                column[position[i]] = v / best if best > 0 else 0.0  # "test": 1.0 for test files
        out[name] = column
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
        order = np.argsort(-score, kind="stable")
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


async def main(args) -> None:
    cache = Path(args.cache)
    data = pickle.loads(cache.read_bytes()) if cache.exists() else {}
    repos = dict(r.split("=", 1) for r in args.repo)
    missing = [n for n in repos if n not in data]
    if missing:
        service = KnowledgeService(data_dir=args.data_dir)
        for name in missing:
            data[name] = collect(service, name, repos[name])
        service.close()
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--repo", action="append", required=True, help="NAME=WORKSPACE (labels in %s/NAME)" % LABELS)
    parser.add_argument("--cache", default="/work/scratch/w12/bugreport-features.pkl")
    asyncio.run(main(parser.parse_args()))
