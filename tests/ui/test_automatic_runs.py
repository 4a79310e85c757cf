"""Ctrl+. stops automatic indexing, through the real window, the real engine, a real watcher and real
files: the cancelled automatic run stays stopped while files keep changing (they are listed as stale),
and F5 afterwards finishes the work and resumes automatic indexing.

Real LocalEngine (real model, Chroma, watchdog) in a temp data dir; a copy of tests/sample_workspace."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt


SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
INDEX_TIMEOUT = 240_000


def write_stages(folder: Path, first: int, count: int) -> None:
    """New Python files with code no index has seen (so no vector comes from the shared cache)."""
    folder.mkdir(exist_ok=True)
    for n in range(first, first + count):
        body = "\n\n".join(f"def stage_{n}_{k}(value):\n    \"\"\"Stage {n}, step {k}.\"\"\"\n    return value * {k} + {n}\n"
                           for k in range(6))
        (folder / f"stage_{n}.py").write_text(body)


def test_ctrl_period_during_an_automatic_run_pauses_automatic_indexing_until_f5(qtbot, window, service,
                                                                                tmp_path, monkeypatch):
    workspace = tmp_path / "sample"
    shutil.copytree(SAMPLE, workspace)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=60_000)
    root = workspace.resolve()

    # the encoder waits at its first batch until Ctrl+. is pressed, so the run is surely under way then
    encoder = service.index_embedder.for_index(service.workspace_index(root).catalog().get_meta("backend"))  # what runs
    real_encode = encoder.encode_chunks
    entered, release, calls = threading.Event(), threading.Event(), []

    def gated(chunks):
        calls.append(len(chunks))
        entered.set()
        release.wait(60)
        return real_encode(chunks)

    monkeypatch.setattr(encoder, "encode_chunks", gated)
    write_stages(workspace / "generated", 0, 40)  # a burst, as a checkout or a copied folder makes
    qtbot.waitUntil(lambda: entered.is_set() and window.health_panel.running == "auto", timeout=INDEX_TIMEOUT)
    assert window.health_panel.cancel_button.isEnabled() and service.scheduler.running(root)

    qtbot.keyClick(window, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)  # Ctrl+.
    release.set()
    qtbot.waitUntil(lambda: "Automatic indexing paused" in window.messages.text(), timeout=INDEX_TIMEOUT)
    assert window.messages.action_button.text() == "Resume"
    assert service.scheduler.paused(root) and not service.scheduler.running(root)
    assert window.health_panel.running == "" and window.health_panel.badge.text() != "indexing…"
    # what the run did not reach is kept, not lost: committed (step 1), its vectors awaited
    assert window.health.chunks_embedded < window.health.chunks
    encoded = len(calls)

    write_stages(workspace / "later", 100, 3)  # files keep changing: listed as stale, no run starts
    qtbot.waitUntil(lambda: window.health is not None
                    and {"later/stage_100.py", "later/stage_102.py"} <= {s.path for s in window.health.stale_files},
                    timeout=60_000)
    stale = len(window.health.stale_files)
    assert f"{stale} files changed" in window.messages.text()
    assert service.scheduler.paused(root) and not service.scheduler.running(root)
    assert len(calls) == encoded and window.health_panel.running == ""  # nothing was embedded since
    assert "indexing" not in window.windowTitle()
    window.grab().save(str(tmp_path / "paused.png"))

    qtbot.keyClick(window, Qt.Key.Key_F5)  # F5 finishes the work and resumes automatic indexing
    qtbot.waitUntil(lambda: not window.runner.is_running("index"), timeout=INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=60_000)
    assert not window.health.stale_files and not window.last_report.cancelled
    assert not service.scheduler.paused(root) and not window.session.paused
    assert "paused" not in window.messages.text() or not window.messages.isVisible()

    (workspace / "later/stage_100.py").write_text("def zircon_abacus():\n    return 1\n")  # automatic again
    catalog = service.workspace_index(workspace).catalog()
    qtbot.waitUntil(lambda: "zircon_abacus" in " ".join(c.content for c in catalog.chunks(path="later/stage_100.py")),
                    timeout=INDEX_TIMEOUT)
