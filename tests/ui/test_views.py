"""View-model and widget tests on hand-built QueryResult / IndexHealth data (no engine needed)."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from services.core.models import IndexHealth, ProgressEvent, StrategyInfo
from tests.ui.factories import SKIPPED, STALE, sample_health, sample_result
from ui.code_view import CodeView
from ui.health_panel import HealthPanel, badge_for, encoder_text
from ui.viewmodels.progress import progress_percent, progress_text
from ui.query_bar import QueryBar, StrategyNameRole, strategy_model
from ui.ranking_model import DOWN_COLOR, NEW_COLOR, ORIGINAL, RERANKED, UP_COLOR, RankingModel
from ui.results_view import ResultsView


def cell(model, row, title, role=Qt.ItemDataRole.DisplayRole):
    return model.data(model.index(row, model.column_of(title)), role)


def test_reranked_model_shows_movement_both_scores_and_colours():
    model = RankingModel(RERANKED)
    model.set_result(sample_result())
    assert model.rowCount() == 4
    assert [cell(model, r, "Δ") for r in range(4)] == ["▲2", "▼1", "new", "▼2"]
    assert cell(model, 0, "Symbol") == "Index.add"
    assert cell(model, 0, "Location") == "notes/index.py:20-31"
    assert (cell(model, 0, "Vector"), cell(model, 0, "Reranked")) == ("0.610", "0.930")
    assert cell(model, 2, "Vector") == "—"  # found by BM25 only
    colours = [cell(model, r, "Δ", Qt.ItemDataRole.ForegroundRole).color() for r in range(3)]
    assert colours == [QColor(UP_COLOR), QColor(DOWN_COLOR), QColor(NEW_COLOR)]
    right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
    assert cell(model, 0, "Reranked", Qt.ItemDataRole.TextAlignmentRole) == int(right)


def test_original_model_keeps_vector_order_and_looks_up_reranked_scores():
    model = RankingModel(ORIGINAL)
    model.set_result(sample_result())
    assert [cell(model, r, "#") for r in range(4)] == ["1", "2", "3", "4"]
    assert [cell(model, r, "Symbol") for r in range(4)] == ["Store.save", "Store.load", "Index.add",
                                                            "README.md lines 1–12"]  # a text chunk by its lines
    assert cell(model, 0, "Reranked") == "0.880"
    assert cell(model, 3, "Reranked") == "—"  # dropped by the reranker
    assert "Δ" not in model.columns


def test_selecting_a_row_selects_the_same_chunk_in_the_other_list(qtbot):
    view = ResultsView()
    qtbot.addWidget(view)
    shown = []
    view.chunk_selected.connect(shown.append)
    view.set_result(sample_result())
    view.original_table.selectRow(0)  # Store.save: rank 2 on the right
    assert view.reranked_table.selectionModel().selectedRows()[0].row() == 1
    assert shown[-1].chunk.qualified_name == "Store.save"
    view.reranked_table.selectRow(2)  # new chunk: not in the left list
    assert view.original_table.selectionModel().selectedRows() == []
    assert shown[-1].chunk.qualified_name == "SyncNotes"


def test_keyboard_moves_through_results_and_keeps_lists_in_step(qtbot):
    view = ResultsView()
    qtbot.addWidget(view)
    view.set_result(sample_result())
    view.show()
    view.select_first()
    table = view.reranked_table
    qtbot.keyClick(table, Qt.Key.Key_Down)
    assert table.currentIndex().row() == 1
    assert view.selected_chunk().chunk.qualified_name == "Store.save"
    assert view.original_table.selectionModel().selectedRows()[0].row() == 0


def test_code_view_highlights_the_chunk_lines_with_line_numbers(qtbot):
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace("/tmp/ws")
    item = sample_result().original[0]  # lines 7-10, context from line 2
    view.show_chunk(item)
    editor = view.editor
    assert editor.first_line == 2
    assert editor.line_text(7).strip() == "def save(self, note):"
    marked = [editor.first_line + n for n in editor.marked_block_numbers()]
    assert marked == [7, 8, 9, 10]
    assert "Store.save" in view.title.text() and "notes/store.py:7-10" in view.subtitle.text()
    # Pygments colours the keyword "def" differently from plain text
    block = editor.document().findBlockByNumber(7 - 2)
    formats = block.layout().formats()
    assert any(f.start == 4 and f.format.foreground().color() != QColor("#000000") for f in formats)
    assert view.open_button.isEnabled()


def test_a_narrow_code_pane_cuts_its_title_with_an_ellipsis_and_keeps_the_file_name(qtbot):
    """Beside an open "Used by" list at 1024 wide the pane is narrow: the title ends in "…" where it is cut,
    the path loses its folders before its file name and line, both whole in their tooltips."""
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace("/tmp/ws")
    item = sample_result().original[0]
    long = replace(item.chunk, qualified_name="NoteStoreKeptOnDisk.save_every_note_atomically",
                   path="notes/storage/backends/filesystem/store.py")
    view.show_chunk(replace(item, chunk=long))
    view.resize(420, 400)  # the buttons keep their room, the title has what is left
    view.show()
    qtbot.waitUntil(lambda: 0 < view.title.width() < 300)
    for label in (view.title, view.subtitle):
        assert len(label.shown_text()) < len(" ".join(label.text().split())) and label.toolTip() == label.text()
        assert label.fontMetrics().horizontalAdvance(label.shown_text()) <= label.contentsRect().width()
    assert view.title.shown_text().endswith("…")
    assert view.subtitle.shown_text().startswith(("…/store.py:7", "store.py:7"))
    assert view.subtitle.text().startswith("notes/storage/backends/filesystem/store.py:7-10")


def test_unavailable_strategies_are_disabled_with_reason_tooltip(qtbot):
    infos = [StrategyInfo("none", "None", "vector order", True, ""),
             StrategyInfo("cross-encoder", "Cross-encoder", "model", False, "model not installed"),
             StrategyInfo("hybrid", "Hybrid", "bm25 + vectors", True, "")]
    model = strategy_model(infos)
    disabled = model.item(1)
    assert not disabled.isEnabled()
    assert "model not installed" in disabled.toolTip()
    assert model.item(2).isEnabled()
    bar = QueryBar()
    qtbot.addWidget(bar)
    bar.set_strategies(infos, preferred="cross-encoder")  # unavailable: falls back to the first available
    assert bar.strategy_name() == "none"
    assert not bar.select_strategy("cross-encoder")
    assert bar.select_strategy("hybrid") and bar.strategy_name() == "hybrid"
    assert bar.strategy.itemData(1, Qt.ItemDataRole.ToolTipRole).endswith("model not installed")
    assert bar.strategy.itemData(1, StrategyNameRole) == "cross-encoder"


def test_completer_completes_the_last_word_of_the_question(qtbot):
    bar = QueryBar()
    qtbot.addWidget(bar)
    bar.show()
    bar.set_symbols(["NoteStore", "saveNote", "Index"])
    bar.query.setFocus()
    qtbot.keyClicks(bar.query, "where is note")
    completer = bar.completer
    assert completer.completionCount() == 1  # "note" starts NoteStore only
    assert completer.currentCompletion() == "where is NoteStore"


def test_health_badge_states():
    assert badge_for(None)[0] == "no workspace"
    assert badge_for(sample_health(indexed=False))[0] == "not indexed"
    assert badge_for(sample_health())[0] == "up to date"
    assert badge_for(sample_health(stale_files=STALE))[0] == "2 stale"
    # many stale files: the same words, the warning colour (a reindex catches up; no rebuild is implied)
    assert badge_for(sample_health(stale_files=STALE, needs_reindex=True)) == ("2 stale", "reindex")
    assert badge_for(sample_health(files=0, chunks=0, state="empty")) == ("empty", "missing")
    assert badge_for(sample_health(state="folder-missing")) == ("folder missing", "reindex")
    assert badge_for(sample_health(state="resuming")) == ("resuming", "busy")
    assert badge_for(sample_health(state="interrupted")) == ("interrupted", "stale")
    assert badge_for(sample_health(state="damaged", needs_reindex=True)) == ("damaged", "error")
    assert badge_for(sample_health(state="failed", last_error="disk full")) == ("failed", "error")


def test_health_panel_lists_facts_stale_and_skipped_files_with_reasons(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(sample_health(stale_files=STALE, skipped=SKIPPED, last_error="disk full"))
    assert panel.badge.text() == "2 stale"
    assert panel.values["Chunks"].text() == "80"
    assert panel.values["Languages"].text() == "python 50, go 30"
    assert panel.values["Model"].text() == "all-MiniLM-L6-v2 (384-d)"
    assert panel.values["Size"].text() == "2.3 MiB"
    assert panel.values["Last error"].text() == "disk full"
    rows = [(panel.files.topLevelItem(i).text(0), panel.files.topLevelItem(i).text(1))
            for i in range(panel.files.topLevelItemCount())]
    assert ("notes/old.py", "stale: modified") in rows
    assert ("dump.sql", "skipped: too large (2.3 MiB > 1 MiB)") in rows


def test_health_panel_names_what_was_repaired(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(sample_health())
    assert panel.values["Repaired"].text() == "nothing"
    repaired = ("labels: 2 damaged lines set aside in /d/labels/ws-1.jsonl.rejected",
                "history: history.sqlite is not an SQLite database: set aside as history.sqlite.damaged; rebuilt from git")
    panel.set_health(sample_health(repaired=repaired))
    assert panel.values["Repaired"].text() == "\n".join(repaired)


def test_progress_shows_counts_and_eta(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(sample_health())
    panel.indexing_started(full=False)
    assert panel.cancel_button.isEnabled() and not panel.reindex_button.isEnabled()
    event = ProgressEvent("embedding", 3, 10, 40, 160, 55.0, 125.0)
    panel.show_progress(event)
    assert (panel.progress.value(), panel.progress.maximum()) == (40, 160)
    assert progress_text(event) == "Embedding · files 3/10 · chunks 40/160 · 55/s · ETA 2:05"
    panel.indexing_finished("done")
    assert not panel.cancel_button.isEnabled() and panel.reindex_button.isEnabled()


def test_progress_is_of_the_whole_index_and_the_bar_follows_the_index_between_runs(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    # a run resuming an index interrupted at 25 %: 1,800 of 7,200 chunks were kept, 5,400 are this run's
    panel.set_health(sample_health(state="interrupted", chunks=1800, run_chunks_done=1800, run_chunks_total=7200))
    assert (panel.progress.value(), panel.progress.maximum()) == (1800, 7200)  # not 0 % under "1,800 of 7,200"
    panel.auto_started()
    event = ProgressEvent("embedding", 0, 40, 0, 5400, 0.0, None, "", index_done=1800, index_total=7200)
    panel.show_progress(event)
    assert (panel.progress.value(), panel.progress.maximum()) == (1800, 7200)
    assert progress_percent(event) == 25 and "1,800 of 7,200 chunks (25 %)" in progress_text(event)
    panel.auto_finished()
    panel.set_health(sample_health())  # up to date: a full bar, never 0 %
    assert panel.progress.value() == panel.progress.maximum() > 0
    panel.set_health(sample_health(chunks=100, chunks_embedded=40))  # vectors still on the way
    assert (panel.progress.value(), panel.progress.maximum()) == (40, 100)


def test_languages_line_stays_short_with_the_full_list_in_the_tooltip(qtbot):
    panel = HealthPanel()
    qtbot.addWidget(panel)
    languages = {"python": 28, "java": 20, "swift": 18, "kotlin": 9, "rust": 9, "go": 8}
    panel.set_health(sample_health(languages=languages))
    assert panel.values["Languages"].text() == "python 28, java 20, swift 18, kotlin 9, +2 more"
    assert panel.values["Languages"].toolTip().endswith("rust 9, go 8")


def test_the_encoder_row_names_its_backend_once():
    """The health panel's Encoder row read "openvino-int8 on cpu — encoder openvino-int8: chosen …"."""
    chosen = IndexHealth(workspace="w", indexed=True, backend="openvino-int8", device="cpu",
                         encoder_note="encoder openvino-int8: chosen on this machine 2026-11-27, 32 chunks/s vs "
                                      "onnx-int8 14 on 256 chunks (121 of yours)")
    assert encoder_text(chosen) == ("openvino-int8 on cpu — chosen on this machine 2026-11-27, 32 chunks/s vs "
                                    "onnx-int8 14 on 256 chunks (121 of yours)")
    idle_gpu = replace(chosen, backend="torch", encoder_note="GPU NOT USED: torch sees no CUDA device")
    assert encoder_text(idle_gpu) == "torch on cpu — GPU NOT USED: torch sees no CUDA device"
