"""Stable refreshes, through the real window, the real engine and its real watcher: an edit refreshes the
list with the selected chunk still selected (not #1), and once the engine has recounted references (the
edited file's chunks are "much referenced" again) the list is refreshed again, so it ends on the ranking
the next query gives.

Real LocalEngine (model, Chroma, watchdog) in a temp data dir; a copy of tests/sample_workspace."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt


SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
INDEX_TIMEOUT = 240_000
QUESTION = "save a note"


def shown(window) -> list[str]:
    model = window.results.reranked_model
    return [model.item(row).chunk.qualified_name for row in range(model.rowCount())]


def referenced(window) -> set[str]:
    model = window.results.reranked_model
    return {model.item(row).chunk.qualified_name for row in range(model.rowCount())
            if any(s.name == "much referenced" for s in model.item(row).signals)}


def test_a_refresh_after_an_edit_keeps_the_selection_and_ends_on_the_recounted_ranking(
        qtbot, window, service, tmp_path, monkeypatch):
    workspace = shutil.copytree(SAMPLE, tmp_path / "sample")
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=60_000)
    assert window.query_bar.select_strategy("heuristic")
    window.query_bar.query.setText(QUESTION)
    qtbot.keyClick(window.query_bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.last_result is not None and window.last_result.question == QUESTION,
                    timeout=60_000)
    assert {"FileNoteStore.save", "NoteStore.save"} <= referenced(window)
    chosen = shown(window).index("NoteStore")
    assert chosen > 0
    window.results.reranked_table.selectRow(chosen)
    assert window.results.selected_chunk().chunk.qualified_name == "NoteStore"

    answers = []  # every answer the window shows from now on, with what is selected once it is shown
    show = window.questions.show_result

    def recording(result):
        show(result)
        answers.append((shown(window), window.results.selected_chunk().chunk.qualified_name))

    monkeypatch.setattr(window.questions, "show_result", recording)
    store = workspace / "notes" / "store.py"
    store.write_text(store.read_text() + "\n# saved notes stay on disk\n")  # its chunks lose their references

    # the automatic run refreshes the list; the recount after it refreshes it again with "much referenced"
    qtbot.waitUntil(lambda: bool(answers) and "FileNoteStore.save" in referenced(window), timeout=INDEX_TIMEOUT)
    assert all(selected == "NoteStore" for _, selected in answers), answers
    assert window.results.selected_chunk().chunk.qualified_name == "NoteStore"
    fresh = asyncio.ensure_future(service.query(QUESTION, replace(window.questions.files_request[1], use_cache=False)))
    qtbot.waitUntil(fresh.done, timeout=60_000)
    assert shown(window) == [r.chunk.qualified_name for r in fresh.result().results]
