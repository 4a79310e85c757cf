"""Retrieval metrics (MRR, nDCG, precision, recall) and the paired significance test, from the `ranx` library."""

from __future__ import annotations

import math
from collections.abc import Sequence

from services.evaluation.formats import Qrels

# Our short names -> ranx metric names.
METRICS: dict[str, str] = {
    "mrr@10": "mrr@10",
    "ndcg@10": "ndcg@10",
    "p@5": "precision@5",
    "r@10": "recall@10",
    "r@100": "recall@100",
}
PRIMARY = "mrr@10"  # the metric a recommendation is based on


def run_from_rankings(rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Rankings (best first) -> a ranx run whose scores keep that exact order."""
    return {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}


class FixedIds:
    """ranx compiles its numba kernels once per width of the id strings it is given (numpy's '<Un'); ids
    are handed to it as numbers of one width instead, so one compiled kernel serves every evaluation
    (numba caches it in the environment; warm_up compiles it at setup)."""

    WIDTH = 12

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        return self.ids.setdefault(name, f"{len(self.ids):0{self.WIDTH}d}")

    def qrels(self, qrels: Qrels) -> Qrels:
        return {self(q): {self(d): g for d, g in docs.items()} for q, docs in qrels.items()}

    def run(self, rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
        return run_from_rankings({self(q): [self(d) for d in docs] for q, docs in rankings.items()})

    def original(self) -> dict[str, str]:
        return {fixed: name for name, fixed in self.ids.items()}


def warm_up() -> None:
    """Compile ranx's kernels for the metrics, the per-query scores and the paired test once (cached by
    numba in the environment), so the first evaluation after an install does not wait on it."""
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}}
    rankings = {"one": {"q1": ["a", "x"], "q2": ["x", "b"]}, "two": {"q1": ["x", "a"], "q2": ["c", "b"]}}
    compute_metrics(qrels, rankings["one"])
    per_query(qrels, rankings["two"])
    paired_p_values(qrels, rankings)


def compute_metrics(qrels: Qrels, rankings: dict[str, list[str]]) -> dict[str, float]:
    """Mean of each metric in METRICS over the judged queries (a query with no ranking scores 0)."""
    from ranx import Qrels as RanxQrels, Run, evaluate  # imported late: numba makes it slow to load

    positive = positive_judgements(qrels)
    if not positive:
        raise ValueError("no query has a relevant document")
    ids = FixedIds()
    runs = {q: rankings.get(q, []) for q in positive}
    scores = evaluate(RanxQrels(ids.qrels(positive)), Run(ids.run(runs)), list(METRICS.values()),
                      make_comparable=True)
    if not isinstance(scores, dict):  # ranx returns a bare number for one metric
        scores = {list(METRICS.values())[0]: scores}
    return {short: float(scores[name]) for short, name in METRICS.items()}


def positive_judgements(qrels: Qrels) -> Qrels:
    """The judged queries with at least one relevant document, their relevant documents only."""
    positive = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    return {q: docs for q, docs in positive.items() if docs}


def per_query(qrels: Qrels, rankings: dict[str, list[str]], metric: str = PRIMARY) -> dict[str, float]:
    """`metric` for each judged query (0 when its ranking misses every relevant document)."""
    from ranx import Qrels as RanxQrels, Run, evaluate

    positive = positive_judgements(qrels)
    ids = FixedIds()
    run = Run(ids.run({q: rankings.get(q, []) for q in positive}))
    evaluate(RanxQrels(ids.qrels(positive)), run, [METRICS[metric]], make_comparable=True)
    names = ids.original()
    return {names[q]: float(v) for q, v in run.scores[METRICS[metric]].items()}


def paired_p_values(qrels: Qrels, rankings: dict[str, dict[str, list[str]]],
                    metric: str = PRIMARY) -> dict[frozenset, float]:
    """p-value of a paired Student's t-test (ranx `compare`) on `metric` for every pair of strategies."""
    from ranx import Qrels as RanxQrels, Run, compare

    positive = positive_judgements(qrels)
    if len(rankings) < 2:
        return {}
    ids = FixedIds()
    runs = [Run(ids.run({q: ranked.get(q, []) for q in positive}), name=name) for name, ranked in rankings.items()]
    report = compare(RanxQrels(ids.qrels(positive)), runs, [METRICS[metric]], stat_test="student",
                     make_comparable=True)
    p_values = {pair: float(values[METRICS[metric]]["p_value"]) for pair, values in report.comparisons.items()}
    return {pair: 1.0 if math.isnan(p) else p for pair, p in p_values.items()}  # nan: identical per-query scores


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
