"""Stale results are marked in the ranking tables, and a missing file cannot be opened silently."""

from __future__ import annotations

from services.core.models import Chunk, QueryResult, ResultChunk
from ui.code_view import CodeView
from ui.health_panel import HealthPanel, badge_for
from ui.viewmodels.ranking import location_text
from services.core.models import IndexHealth


def result(*stale: str) -> QueryResult:
    items = [ResultChunk(Chunk(f"pkg/m{n}.py", "python", 1, 3, "def f():\n    pass\n", symbol="f", kind="function"),
                         n + 1, 0.5, n + 1, 0.5, stale=flag) for n, flag in enumerate(stale)]
    return QueryResult("q", "none", items, items, [], 10, 3, False, None, False, {"total": 1.0})


def test_stale_results_say_how_their_file_changed(qtbot):
    items = result("", "modified", "deleted").results
    assert [location_text(i) for i in items] == ["pkg/m0.py:1-3", "pkg/m1.py:1-3 (modified)",
                                                  "pkg/m2.py:1-3 (deleted)"]


def test_opening_a_deleted_file_says_so(qtbot, tmp_path):
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace(str(tmp_path))
    view.show_chunk(result("deleted").results[0])
    with qtbot.waitSignal(view.open_failed, timeout=5_000) as signal:
        view.open_button.click()
    assert signal.args == ["pkg/m0.py was deleted since it was indexed."]


def test_an_error_badge_replaces_indexing_when_a_run_fails(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    failed = IndexHealth(workspace="/gone", indexed=False, last_error="Workspace folder /gone does not exist.")
    assert badge_for(failed) == ("error", "error")
    panel.set_health(failed)
    panel.indexing_started(False)
    assert panel.badge.text() == "indexing…"
    panel.indexing_finished("Indexing failed")
    assert panel.badge.text() == "checking…"  # the health from before the run is not shown as current
    panel.set_health(failed)  # the window reads the health again after every run
    assert panel.badge.text() == "error" and "does not exist" in panel.values["Last error"].text()
