"""Every strategy's explanations add up on the real sample workspace: the rows of a result's why
panel (its signals) sum to its score, read plainly, and a strategy that falls back still explains
its results by their cosine and says it fell back."""

from __future__ import annotations

import pytest

from services.core.models import QueryOptions
from services.retrieval.strategies import create_strategy, strategy_names
from services.retrieval.strategies._ranking import apply_signals
from services.core.settings import Settings
from tests.test_adapter import BUG_REPORT

QUESTIONS = ["save a note to disk", "NoteStore", BUG_REPORT]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from tests.conftest import indexed_sample

    yield from indexed_sample(tmp_path_factory.mktemp("explanations"))


def options(workspace, name: str) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), strategy=name, top_k=10, min_relevance=0.0, use_cache=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", strategy_names())
async def test_signals_sum_to_the_score_for_every_strategy(indexed, name):
    service, workspace = indexed
    for question in QUESTIONS:
        result = await service.query(question, options(workspace, name))
        assert result.results, f"{name}: no results for {question[:30]!r}"
        for item in result.results:
            assert item.signals, f"{name} left {item.chunk.path} unexplained"
            assert apply_signals(item.signals) == pytest.approx(item.score, abs=1e-3)
            added = sum(s.contribution for s in item.signals if s.op == "add")
            if all(s.op == "add" for s in item.signals):  # a plain sum, as a reader adds the rows
                assert added == pytest.approx(item.score, abs=1e-3)
        if not result.reranked and result.fallback_reason:  # every result says so (a name asked adds its row)
            for item in result.results:
                notes = [s.note for s in item.signals if not s.note.startswith("navigation:")]
                assert notes and all("fell back" in note for note in notes), notes


@pytest.mark.slow
async def test_bug_report_rows_are_plain_and_nonzero(indexed):
    service, workspace = indexed
    result = await service.query(BUG_REPORT, options(workspace, "bug-report"))
    top = result.results[0]
    assert top.score > 1.5  # points, not a cosine
    names = [s.name for s in top.signals]
    assert "defines a name the question uses" in names and not any(n.endswith(" rank") for n in names)
    assert all(s.contribution != 0 for item in result.results for s in item.signals
               if s.name != "no signal found it")
    legend = create_strategy("bug-report", Settings()).legend
    assert "0–1" not in legend.split("Short questions")[0]
    top_of_scale = float(legend.split("about 0 to ")[1].split(";")[0])
    assert max(item.score for item in result.results) <= top_of_scale


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rrf", "hybrid"])
async def test_rank_fusion_rows_are_in_the_scores_own_units(indexed, name):
    service, workspace = indexed
    result = await service.query("save a note to disk", options(workspace, name))
    for item in result.results:
        assert all(s.op == "add" for s in item.signals[1:])  # no "× 211" row dwarfing the rest
        assert all(abs(s.contribution) < 10 for s in item.signals)
        assert item.signals[-1].name == "minus the weakest candidate"


@pytest.mark.slow
async def test_tuned_without_labels_falls_back_with_its_cosine(indexed):
    service, workspace = indexed
    result = await service.query("save a note to disk", options(workspace, "tuned"))
    assert not result.reranked and "needs" in result.fallback_reason
    top = result.results[0]
    assert [s.name for s in top.signals] == ["cosine similarity"]
    assert top.signals[0].contribution == pytest.approx(top.original_score)
    assert top.signals[0].note.startswith("fell back to the vector ranking")
