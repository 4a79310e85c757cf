"""Search quality, pinned: MRR@10 and R@10 of each strategy on a labelled set over the sample workspace
(tests/golden/sample_queries.jsonl), measured by the real engine with the real model, against the figures
checked in at tests/golden/quality.json. A change that moves a figure by more than 1e-3 fails, old beside new;
when the change is meant, `pytest tests/test_quality_golden.py --regen-golden` rewrites the file (review its diff)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.core.labelled import load_queries
from services.evaluation.formats import qrels_from_queries
from services.evaluation.runner import evaluate

GOLDEN = Path(__file__).parent / "golden"
QUERIES = GOLDEN / "sample_queries.jsonl"
FIGURES = GOLDEN / "quality.json"
STRATEGIES = ["none", "metadata", "bug-report", "auto", "keyword-boost", "rrf", "hybrid"]
METRICS = ["mrr@10", "r@10"]
TOP_K = 10
TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from tests.conftest import indexed_sample

    yield from indexed_sample(tmp_path_factory.mktemp("golden"))


async def measure(service, workspace) -> dict[str, dict[str, float]]:
    """strategy -> metric -> value, over the labelled set."""
    queries = load_queries(QUERIES)
    report = await evaluate(service, queries, qrels_from_queries(queries), STRATEGIES, workspace, TOP_K)
    assert not report.failed, report.failed
    return {name: {m: round(report.strategies[name].metrics[m], 4) for m in METRICS} for name in STRATEGIES}


def drifts(old: dict, new: dict) -> list[str]:
    """One line per figure that moved by more than TOLERANCE (or is missing on either side)."""
    lines = []
    for name in sorted(set(old) | set(new)):
        for metric in METRICS:
            before, after = old.get(name, {}).get(metric), new.get(name, {}).get(metric)
            if before is None or after is None or abs(before - after) > TOLERANCE:
                lines.append(f"{name} {metric}: {before} -> {after}")
    return lines


def test_drifts_name_each_figure_that_moved_beyond_the_tolerance():
    old = {"none": {"mrr@10": 0.5, "r@10": 0.8}, "rrf": {"mrr@10": 0.6, "r@10": 0.9}}
    new = {"none": {"mrr@10": 0.5004, "r@10": 0.7}, "hybrid": {"mrr@10": 0.6, "r@10": 0.9}}
    assert drifts(old, new) == ["hybrid mrr@10: None -> 0.6", "hybrid r@10: None -> 0.9", "none r@10: 0.8 -> 0.7",
                                "rrf mrr@10: 0.6 -> None", "rrf r@10: 0.9 -> None"]


@pytest.mark.slow  # indexes the sample workspace with the real model
async def test_quality_figures_match_the_golden_file(indexed, request):
    service, workspace = indexed
    measured = await measure(service, workspace)
    if request.config.getoption("--regen-golden"):
        FIGURES.write_text(json.dumps({"queries": QUERIES.name, "top_k": TOP_K, "strategies": measured},
                                      indent=2) + "\n", encoding="utf-8")
        return
    golden = json.loads(FIGURES.read_text(encoding="utf-8"))["strategies"]
    moved = drifts(golden, measured)
    assert not moved, ("quality drifted from tests/golden/quality.json (old -> new; --regen-golden rewrites it "
                       "when the change is meant):\n" + "\n".join(moved))
