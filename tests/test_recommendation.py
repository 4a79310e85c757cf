"""Per-query wins/losses, paired significance and the recommended strategy, scored with ranx."""

from __future__ import annotations

from services.evaluation.report import format_table
from services.evaluation.runner import score_rankings


def rankings_where(better_on: int, queries: int) -> tuple[dict, dict]:
    """`none` finds each query's document at rank 3; `hybrid` at rank 1 on the first `better_on`
    queries and not at all on the others."""
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(queries)}
    none = {f"q{i}": ["x", "y", f"d{i}"] for i in range(queries)}
    hybrid = {f"q{i}": [f"d{i}"] if i < better_on else ["x", "y", "z"] for i in range(queries)}
    return qrels, {"none": none, "hybrid": hybrid}


def test_per_query_scores_and_wins_against_none():
    qrels, rankings = rankings_where(better_on=3, queries=5)
    report = score_rankings(qrels, rankings)
    assert report.per_query["none"]["q0"] == 1 / 3
    assert report.per_query["hybrid"]["q0"] == 1.0 and report.per_query["hybrid"]["q4"] == 0.0
    assert report.wins_losses("hybrid") == (3, 0, 2)


def test_a_clear_gain_on_many_queries_is_recommended():
    qrels, rankings = rankings_where(better_on=36, queries=40)
    report = score_rankings(qrels, rankings)
    assert report.p_value("hybrid") < 0.05
    best = report.recommend()
    assert best.strategy == "hybrid" and best.significant
    assert "p = " in best.reason
    assert "recommended: hybrid" in format_table(report)


def test_ten_queries_do_not_overclaim():
    qrels, rankings = rankings_where(better_on=5, queries=10)
    report = score_rankings(qrels, rankings)
    assert report.strategies["hybrid"].metrics["mrr@10"] > report.strategies["none"].metrics["mrr@10"]
    best = report.recommend()
    assert best.strategy == "none" and not best.significant
    assert "not significant" in best.reason


def test_json_carries_the_test_and_the_recommendation():
    qrels, rankings = rankings_where(better_on=36, queries=40)
    data = score_rankings(qrels, rankings).to_json()
    assert data["strategies"]["hybrid"]["wins"] == 36 and data["strategies"]["hybrid"]["p_vs_none"] < 0.05
    assert data["recommended"]["strategy"] == "hybrid"
    assert data["per_query"]["q0"] == {"none": round(1 / 3, 4), "hybrid": 1.0}


def test_identical_rankings_have_p_one_not_nan():
    qrels, rankings = rankings_where(better_on=3, queries=5)
    report = score_rankings(qrels, {"none": rankings["none"], "metadata": rankings["none"]})
    assert report.p_value("metadata") == 1.0
    assert report.recommend().strategy == "none"


def test_without_a_significant_gain_the_default_is_kept_only_if_it_is_not_below_none():
    qrels, rankings = rankings_where(better_on=5, queries=10)
    equal = {**rankings, "auto": rankings["none"]}
    kept = score_rankings(qrels, equal).recommend()
    assert kept.strategy == "auto" and not kept.significant and "keeping auto" in kept.reason

    worse = {**rankings, "auto": {q: ["x", "y", "z", "w", docs[-1]] for q, docs in rankings["none"].items()}}
    report = score_rankings(qrels, worse)
    assert report.strategies["auto"].metrics["mrr@10"] < report.strategies["none"].metrics["mrr@10"]
    fallback = report.recommend()
    assert fallback.strategy == "none" and not fallback.significant
    assert "keeping none" in fallback.reason and "auto scored 0.200, below none" in fallback.reason
