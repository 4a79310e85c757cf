"""The why view, the score legend and the score bars, through real widgets (offscreen)."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt

from services.core.models import Signal, StrategyInfo
from services.retrieval.strategies import create_strategy, strategy_info
from services.core.settings import Settings
from tests.ui.factories import sample_result
from ui.ranking_model import ScoreBarRole
from ui.results_view import ResultsView

HYBRID_SIGNALS = (
    Signal("vector rank 3", 3, 0.0079, "add"), Signal("vector score 0.61", 0.61, 0.15, "add"),
    Signal("BM25 rank 1", 1, 0.0034, "add"), Signal("BM25 score 7.5", 7.5, 0.09, "add"),
    Signal("demoted path", 0.8, 0.8, "mul", "matches tests/*"),
)


def explained_result():
    """sample_result() with signals on the top reranked result and a 50-candidate pool."""
    result = sample_result()
    top = replace(result.results[0], signals=HYBRID_SIGNALS)
    return replace(result, results=[top, *result.results[1:]], pool_size=50)


def shown(qtbot):
    view = ResultsView()
    qtbot.addWidget(view)
    view.set_strategies([strategy_info(create_strategy("hybrid", Settings())),
                         StrategyInfo("none", "None", "vector order", True, "")])
    view.resize(1200, 700)
    view.show()
    view.set_result(explained_result())
    return view


def test_selecting_a_result_shows_a_bar_per_signal_and_both_ranks(qtbot):
    view = shown(qtbot)
    view.reranked_table.selectRow(0)
    qtbot.waitUntil(lambda: view.why.table.rowCount() == len(HYBRID_SIGNALS))
    rows = view.why.rows()
    assert [name for name, _, _ in rows] == [s.name for s in HYBRID_SIGNALS]
    assert rows[1][1] == "+0.150" and rows[4][1] == "× 0.80"
    assert rows[1][2] == 1.0  # the biggest effect has the full bar
    assert rows[4][2] < 0  # the demotion lowered the score: a red bar
    heading = view.why.heading.text()
    assert "Index.add" in heading and "#1 after reranking" in heading and "vector rank #3" in heading
    assert "▲2" in heading


def test_selecting_in_the_vector_list_explains_the_reranked_twin_or_says_it_was_cut(qtbot):
    view = shown(qtbot)
    view.original_table.selectRow(2)  # Index.add, reranked #1
    qtbot.waitUntil(lambda: view.why.table.rowCount() == len(HYBRID_SIGNALS))
    view.original_table.selectRow(3)  # README.md: dropped by the reranker
    qtbot.waitUntil(lambda: "not in the reranked top" in view.why.heading.text())
    assert view.why.table.rowCount() == 0


def test_legend_pool_and_comparable_bars(qtbot):
    view = shown(qtbot)
    assert "within this question" in view.legend.text()  # hybrid's relative scale
    assert "from 50 candidates" in view.right.title.text()
    model = view.reranked_model
    column = model.column_of("Reranked")
    bars = [model.data(model.index(r, column), ScoreBarRole) for r in range(model.rowCount())]
    assert bars[0] == 1.0 and bars == sorted(bars, reverse=True) and bars[-1] > 0
    tip = model.data(model.index(0, column), Qt.ItemDataRole.ToolTipRole)
    assert "0.930" in tip and "within this question" in tip
    row_tip = model.data(model.index(0, model.column_of("Symbol")), Qt.ItemDataRole.ToolTipRole)
    assert "vector rank #3" in row_tip and "vector score 0.61" in row_tip  # a reason, not the path again


def test_none_has_its_own_legend(qtbot):
    view = shown(qtbot)
    view.set_result(replace(explained_result(), strategy="none"))
    assert "cosine" in view.legend.text().lower() and "within this question" not in view.legend.text()
