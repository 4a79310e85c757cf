"""The why view and legend in the real window, on the real engine (model, Chroma) and the sample workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.engine.service import LocalEngine
from services.retrieval.strategies._ranking import apply_signals
from services.core.settings import DEFAULT_STRATEGY
from ui.main_window import MainWindow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


@pytest.fixture
def service(tmp_path):
    svc = LocalEngine(data_dir=tmp_path / "data")
    yield svc
    svc.close()


@pytest.mark.slow
def test_a_fresh_window_uses_the_benchmark_default_and_explains_the_selected_result(
        loop, qtbot, service, qsettings, tmp_path):
    workspace = shutil.copytree(SAMPLE, tmp_path / "sample")
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.strategies_loaded.done, timeout=60_000)  # the engine has listed its strategies
    assert window.query_bar.strategy_name() == DEFAULT_STRATEGY  # no saved choice, no labels yet
    task = window.open_workspace(str(workspace))
    qtbot.waitUntil(task.done, timeout=60_000)
    index = window.start_index(False)
    qtbot.waitUntil(index.done, timeout=240_000)
    window.query_bar.query.setText("what implements ChunkStore")
    qtbot.keyClick(window.query_bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.last_result is not None, timeout=60_000)
    result = window.last_result
    assert result.strategy == DEFAULT_STRATEGY and result.pool_size > len(result.results)
    assert f"from {result.pool_size} candidates" in window.results.right.title.text()
    assert "Reranked:" in window.results.legend.text()
    qtbot.waitUntil(lambda: window.results.why.table.rowCount() > 0, timeout=10_000)  # first row selected
    top = result.results[0]
    assert top.chunk.symbol in ("MemoryChunkStore", "DiskChunkStore")
    assert [name for name, _, _ in window.results.why.rows()][:2] == ["cosine similarity", "implements chunkstore"]
    assert apply_signals(top.signals) == pytest.approx(top.score)
    window.shutdown()
