"""The health panel says how much of the index is embedded while a run embeds (issue #8)."""

from __future__ import annotations

from tests.ui.factories import sample_health
from ui.health_panel import HealthPanel


def test_health_panel_shows_the_embedded_share(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(sample_health(chunks=36522, chunks_embedded=6574))
    assert panel.values["Chunks"].text() == "36,522 (semantic: 18% of 36,522 chunks)"
    panel.set_health(sample_health(chunks=36522, chunks_embedded=36522))
    assert panel.values["Chunks"].text() == "36,522"


def test_health_panel_says_how_many_vectors_the_last_run_reused(qtbot):
    """Issue 22: vectors another checkout had already embedded are taken from the data dir's shared cache."""
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(sample_health(last_run_vectors=7206, last_run_reused=6900))
    assert panel.values["Vectors"].text() == "vectors reused: 6,900 of 7,206 (last run)"
    assert "shared cache" in panel.values["Vectors"].toolTip()
    panel.set_health(sample_health())
    assert panel.values["Vectors"].text() == "—"
