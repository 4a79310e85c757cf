"""A first index in the real window (issue #51): while step 2 makes the vectors, Ctrl+T, Alt+F7 (Used by) and
Ctrl+P find what step 1 committed and the health panel counts files, chunks and vectors; the title's and the bar's percentage
is one number, of the whole run, and never runs ahead of the vectors made.

Real LocalEngine (the stand-in encoder, the real code path), Chroma, the real window offscreen; step 2 is held
with a gate on the encoder (the real encoder runs, only later): the only way to look mid-run without timing luck."""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.encoders.embedder import Embedder
from services.engine.service import LocalEngine
from tests.helpers.stand_in_encoder import stand_in_settings
from tests.ui.test_goto_window import used_by_places
from ui.main_window import MainWindow

pytestmark = pytest.mark.stand_in_encoder
SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
TIMEOUT = 240_000


def title_percent(win) -> int | None:
    found = re.search(r"indexing (\d+) %", win.windowTitle())
    return int(found.group(1)) if found else None


def test_a_first_index_is_useful_and_its_progress_honest(loop, qtbot, qsettings, tmp_path, monkeypatch):
    workspace = tmp_path / "sample"
    shutil.copytree(SAMPLE, workspace)
    held, release, encoded = threading.Event(), threading.Event(), [0]
    original = Embedder.encode_chunks

    def gated(self, chunks):  # counts the work done: the chunks the encoder was handed
        held.set()
        release.wait(300)
        vectors = original(self, chunks)
        encoded[0] += len(chunks)
        return vectors

    monkeypatch.setattr(Embedder, "encode_chunks", gated)
    service = LocalEngine(stand_in_settings(embed_batch_size=8), data_dir=tmp_path / "data")
    win = MainWindow(service, qsettings)
    qtbot.addWidget(win)
    win.show()
    try:
        qtbot.waitUntil(lambda: not win.runner.is_running("workspace") or True)
        win.open_workspace(str(workspace))
        qtbot.waitUntil(lambda: win.session.workspace == str(workspace), timeout=30_000)
        win.start_index(False)
        qtbot.waitUntil(held.is_set, timeout=TIMEOUT)  # step 1 is over: every file is committed
        qtbot.waitUntil(lambda: win.health_panel.values["Files"].text() == "24", timeout=30_000)
        assert win.health_panel.values["Chunks"].text().startswith("121")
        first = title_percent(win)
        assert first is not None and first < 100 and win.health_panel.progress.value() == first
        assert win.health_panel.progress.maximum() == 100 and "Step 2 of 2" in win.index_status.text()

        finder = win.finder  # Ctrl+T: a name step 1 wrote
        qtbot.keyClick(win, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
        qtbot.keyClicks(finder.filter, "NoteStore")
        qtbot.waitUntil(lambda: finder.model.answer is not None and finder.model.answer.query == "NoteStore"
                        and not finder.runner.is_running("goto"), timeout=30_000)
        assert finder.current_hit().path == "notes/store.py"
        qtbot.keyClick(finder.filter, Qt.Key.Key_Return)  # opened, then Alt+F7: who uses it, from step 1's graph
        qtbot.waitUntil(lambda: win.code.item is not None and win.code.item.chunk.qualified_name == "NoteStore")
        win.setFocus()
        qtbot.keyClick(win, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
        places = used_by_places(qtbot, win, "NoteStore")
        assert ("notes/search.py", 33) in places and ("notes/store.py", 32) in places, places
        assert win.graph.tabs.tabText(0).startswith("Used by NoteStore")
        assert encoded[0] == 0  # all of it during step 2, before a single vector was made
        qtbot.keyClick(win, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)  # Ctrl+P: a file
        finder.filter.clear()
        qtbot.keyClicks(finder.filter, "store.py")
        qtbot.waitUntil(lambda: finder.model.answer is not None and finder.model.answer.query == "store.py"
                        and not finder.runner.is_running("goto"), timeout=30_000)
        assert any(finder.row_text(r).startswith("notes/store.py") or "notes/store.py" in finder.row_text(r)
                   for r in range(finder.list.count()))
        finder.hide()

        seen = []  # (title %, bar %, chunks encoded) whenever the window shows a step 2 event
        original_show = win.runs.show_run_status

        def watched(text, percent):
            original_show(text, percent)
            if "Step 2" in text:
                seen.append((title_percent(win), win.health_panel.progress.value(), encoded[0]))

        monkeypatch.setattr(win.runs, "show_run_status", watched)
        release.set()
        qtbot.waitUntil(lambda: win.health_panel.badge.text() == "up to date", timeout=TIMEOUT)
        assert len(seen) > 3
        for title, bar, done in seen:  # step 1's share, then the rest only as vectors are made
            assert title == bar and title <= first + (100 - first) * done / 121 + 1, (title, done, seen)
    finally:
        release.set()
        win.shutdown()
        service.close()
