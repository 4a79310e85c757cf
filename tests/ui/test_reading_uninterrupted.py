"""Issue 52, point 2, through the real window, the real engine and its real watcher: a save in the workspace
(the automatic run answers the question again, then the reference recount answers it again) updates the
rankings in place and leaves the code pane where the reader put it: the file opened with Ctrl+T, its scroll
position and its caret; a save of the shown file itself shows the new text at the same place.

Real LocalEngine (model, Chroma, watchdog) in a temp data dir; a copy of tests/sample_workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
INDEX_TIMEOUT = 240_000
QUESTION = "save a note"


def referenced(window) -> set[str]:
    model = window.results.reranked_model
    return {model.item(row).chunk.qualified_name for row in range(model.rowCount())
            if any(s.name == "much referenced" for s in model.item(row).signals)}


def reading_place(code) -> tuple[str, int, int, int]:
    """The file, the caret's line and column, the first line in view (as a user sees them)."""
    editor = code.editor
    cursor = editor.textCursor()
    return (code.item.chunk.path, editor.first_line + cursor.blockNumber(), cursor.positionInBlock(),
            editor.first_line + editor.verticalScrollBar().value())


def test_a_save_refreshes_the_rankings_and_leaves_the_code_pane_where_the_reader_is(
        qtbot, window, service, tmp_path, monkeypatch):
    workspace = shutil.copytree(SAMPLE, tmp_path / "sample")
    window.resize(1024, 700)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    qtbot.waitUntil(window.start_index(False).done, timeout=INDEX_TIMEOUT)
    qtbot.waitUntil(lambda: window.health_panel.badge.text() == "up to date", timeout=60_000)
    assert window.query_bar.select_strategy("heuristic")
    window.query_bar.query.setText(QUESTION)
    qtbot.keyClick(window.query_bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.last_result is not None and window.last_result.question == QUESTION,
                    timeout=60_000)
    assert {"FileNoteStore.save", "NoteStore.save"} <= referenced(window)

    window.finder.symbol_action.trigger()  # Ctrl+T: a definition the rankings do not show
    qtbot.keyClicks(window.finder.filter, "SearchEngine.score")
    qtbot.waitUntil(lambda: window.finder.list.count() > 0 and not window.finder.runner.is_running("goto"))
    qtbot.keyClick(window.finder.filter, Qt.Key.Key_Return)
    code = window.code
    qtbot.waitUntil(lambda: code.item is not None and code.item.chunk.qualified_name == "SearchEngine.score")
    editor = code.editor
    default_top = editor.verticalScrollBar().value()
    editor.verticalScrollBar().setValue(max(default_top - 20, 0) if default_top > 20 else default_top + 8)
    cursor = QTextCursor(editor.document().findBlockByNumber(editor.verticalScrollBar().value() + 4))
    cursor.movePosition(QTextCursor.MoveOperation.Right, n=6)
    editor.setTextCursor(cursor)  # the caret where the reader put it, inside the view
    place = reading_place(code)
    assert place[3] != default_top + editor.first_line and place[0] == "notes/search.py"

    answers = []  # every answer the window shows from now on, with where the code pane is then
    show = window.questions.show_result

    def recording(result):
        show(result)
        answers.append(reading_place(code))

    monkeypatch.setattr(window.questions, "show_result", recording)
    store = workspace / "notes" / "store.py"
    store.write_text(store.read_text() + "\n# saved notes stay on disk\n")  # a save elsewhere
    # the automatic run refreshes the list; the recount after it refreshes it again
    qtbot.waitUntil(lambda: bool(answers) and "FileNoteStore.save" in referenced(window), timeout=INDEX_TIMEOUT)
    assert answers and all(where == place for where in answers), (place, answers)
    assert reading_place(code) == place and code.item.chunk.qualified_name == "SearchEngine.score"

    answers.clear()
    search = workspace / "notes" / "search.py"
    search.write_text(search.read_text() + "\n# read on from here\n")  # the shown file itself
    qtbot.waitUntil(lambda: bool(answers) and "# read on from here" in editor.toPlainText(), timeout=INDEX_TIMEOUT)
    assert reading_place(code) == place
