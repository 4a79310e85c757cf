"""Go to file (Ctrl+P) and go to symbol (Ctrl+T) in the real window, over the real engine and an indexed copy
of tests/sample_workspace (offscreen). The view-model's rows and previews without Qt: tests/ui/test_viewmodels
style, at the end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.core.models import GotoHit
from services.engine.service import LocalEngine
from tests.ui.test_main_window import ensure_indexed, wait_task
from ui.goto_dialog import HitRole
from ui.viewmodels.goto import code_item, marked, row_html

pytestmark = pytest.mark.slow
SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ke-goto-data")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    target = tmp_path_factory.mktemp("goto-ws") / "sample"
    shutil.copytree(SAMPLE, target)
    return str(target)


@pytest.fixture(scope="module")
def service(data_dir):
    svc = LocalEngine(data_dir=data_dir)
    yield svc
    svc.close()


@pytest.fixture
def window(window, qtbot, workspace):
    """tests/ui/conftest.py's window, with the sample workspace open and indexed."""
    ensure_indexed(qtbot, window, workspace)
    return window


def type_in(qtbot, finder, text: str) -> None:
    """Type `text` key by key, as a user does, then wait for the answer to the whole of it."""
    qtbot.keyClicks(finder.filter, text)
    qtbot.waitUntil(lambda: finder.model.answer is not None and finder.model.answer.query == text.strip()
                    and not finder.runner.is_running("goto"), timeout=30_000)


def test_ctrl_t_finds_a_name_defined_twice_each_labelled_with_its_path(qtbot, window):
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    assert finder.isVisible() and finder.filter.hasFocus() and "symbol" in finder.filter.placeholderText()
    type_in(qtbot, finder, "Note")
    assert finder.shown_labels()[:3] == ["Note", "Note", "Note"]
    rows = [finder.row_text(r) for r in range(2)]
    assert "notes/models.py:12" in rows[0] and "python" in rows[0]
    assert "java/src/main/java/notes/Note.java:3" in rows[1] and "java" in rows[1]
    assert "<b><u>N</u></b>" in row_html(finder.list.item(0).data(HitRole))  # matched characters are highlighted
    # the preview shows the selected definition, its lines marked
    qtbot.waitUntil(lambda: finder.previewed is not None and finder.previewed.chunk.path == "notes/models.py")
    assert "class Note" in finder.preview.editor.toPlainText()
    qtbot.keyClick(finder.filter, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: finder.previewed.chunk.path.endswith("Note.java"))
    qtbot.keyClick(finder.filter, Qt.Key.Key_Return)  # Enter: the code pane, at the Java class
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.path.endswith("Note.java"))
    assert not finder.isVisible() and window.code.item.chunk.start_line == 3
    assert window.code.subtitle.text().startswith("java/src/main/java/notes/Note.java:3-10")


def test_camel_humps_and_a_dotted_method_open_at_the_definition(qtbot, window):
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, finder, "rsp")  # in TypeScript
    assert finder.shown_labels()[0] == "RemoteSearchProvider"
    finder.filter.clear()
    type_in(qtbot, finder, "NoteStore.save")
    assert finder.current_hit().path == "notes/store.py" and finder.current_hit().start_line == 19
    qtbot.keyClick(finder.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.qualified_name == "NoteStore.save")
    assert window.code.editor.marked == (19, 21)
    assert window.code.editor.line_text(20).strip() == "def save(self, note: Note) -> None:"


def test_ctrl_p_opens_a_path_at_the_line_asked(qtbot, window):
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    assert finder.isVisible() and "file" in finder.filter.placeholderText()
    type_in(qtbot, finder, "store.py:40")
    assert finder.shown_labels()[0] == "notes/store.py"
    qtbot.keyClick(finder.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.path == "notes/store.py")
    assert window.code.item.chunk.start_line == 40 and window.code.editor.marked == (40, 40)
    assert window.code.editor.textCursor().blockNumber() + window.code.editor.first_line == 40


def test_a_name_that_does_not_exist_says_so_and_escape_closes(qtbot, window):
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, finder, "Frobnicate")
    assert finder.list.count() == 0 and finder.status.text() == "No symbol named 'Frobnicate'."
    qtbot.keyClick(finder.filter, Qt.Key.Key_Escape)
    assert not finder.isVisible()


def test_ctrl_e_in_the_finder_opens_the_match_in_the_editor(qtbot, window, tmp_path):
    # the editor is a real program: a shell script that writes the file and line it was asked to open
    opened = tmp_path / "opened.txt"
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!/bin/sh\necho \"$@\" > {opened}\n")
    editor.chmod(0o755)
    window.settings.setValue("editor/command", f"{editor} {{path}} {{line}}")
    window.editor_settings.set_editor("custom")
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, finder, "InvertedIndex")  # in Go
    qtbot.keyClick(finder.filter, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(opened.exists, timeout=30_000)
    qtbot.waitUntil(lambda: opened.read_text().strip() != "", timeout=10_000)
    path, line = opened.read_text().split()
    assert path.endswith("go/index/index.go") and line == "14"
    assert window.code.item.chunk.qualified_name == "InvertedIndex"


# --- the view-model alone (no Qt) ---
def test_rows_mark_matched_characters_and_previews_mark_the_definition(workspace):
    assert marked("FixtureManager", (0, 1, 2, 7)) == ("<b><u>F</u></b><b><u>i</u></b><b><u>x</u></b>ture"
                                                     "<b><u>M</u></b>anager")
    assert marked("a<b", (1,)) == "a<b><u>&lt;</u></b>b"
    hit = GotoHit("notes/store.py", 19, 21, "save", "NoteStore.save", "method", "python", 1.0, "NoteStore.save")
    item = code_item(workspace, hit)
    assert (item.chunk.start_line, item.chunk.end_line, item.context_start_line) == (19, 21, 1)
    assert item.chunk.content.splitlines()[1].strip() == "def save(self, note: Note) -> None:"
    gone = code_item(workspace, GotoHit("gone.py", 3, 3, "", "", "file", "python", 1.0, "gone.py"))
    assert gone.context.startswith("(cannot read gone.py")


def go_to_symbol(qtbot, window, name: str) -> None:
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    window.finder.filter.clear()
    type_in(qtbot, window.finder, name)
    qtbot.keyClick(window.finder.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.qualified_name == name)


def shown(window) -> tuple[str, int]:
    return window.code.item.chunk.path, window.code.item.chunk.start_line


def test_back_and_forward_walk_a_chain_of_jumps_and_used_by_follows_ctrl_t(qtbot, window):
    """Ctrl+T, Ctrl+P, a "Used by" row: Alt+Left walks back through each place and Alt+Right forward again,
    as in an editor; "Used by" is of what Ctrl+T opened, not of a selected result (issue 40)."""
    from ui.viewmodels.graph import USED_BY

    go_to_symbol(qtbot, window, "NoteStore.save")
    first = shown(window)
    graph = window.graph.model
    qtbot.waitUntil(lambda: graph.subject is not None and graph.subject.chunk.qualified_name == "NoteStore.save"
                    and graph.answers[USED_BY] is not None and not window.graph.runner.is_running("graph"),
                    timeout=30_000)
    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, window.finder, "models.py:12")
    qtbot.keyClick(window.finder.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: shown(window) == ("notes/models.py", 12))
    go_to_symbol(qtbot, window, "tokenize_query")
    third = shown(window)
    qtbot.waitUntil(lambda: graph.subject.chunk.qualified_name == "tokenize_query"
                    and graph.answers[USED_BY] is not None and not window.graph.runner.is_running("graph"),
                    timeout=30_000)
    qtbot.keyClick(window, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
    used_by = window.graph.lists[USED_BY]
    assert window.graph.tabs.currentWidget() is used_by and used_by.topLevelItemCount() >= 2
    qtbot.keyClick(used_by, Qt.Key.Key_Return)  # the first use of tokenize_query
    qtbot.waitUntil(lambda: shown(window) != third)
    fourth = shown(window)
    assert graph.subject.chunk.qualified_name == "tokenize_query"  # the list stays while its rows are opened

    back, forward = Qt.Key.Key_Left, Qt.Key.Key_Right
    for expected in (third, ("notes/models.py", 12), first):
        qtbot.keyClick(window, back, Qt.KeyboardModifier.AltModifier)
        assert shown(window) == expected
    assert not window.code.back_action.isEnabled() and window.code.forward_action.isEnabled()
    for expected in (("notes/models.py", 12), third, fourth):
        qtbot.keyClick(window, forward, Qt.KeyboardModifier.AltModifier)
        assert shown(window) == expected
    assert not window.code.forward_action.isEnabled()
    go_to_symbol(qtbot, window, "NoteStore.save")  # a new jump drops what was ahead, as in a browser
    qtbot.keyClick(window, back, Qt.KeyboardModifier.AltModifier)
    assert shown(window) == fourth


def test_go_to_rows_keep_underscores_and_cut_long_paths_in_the_middle(qtbot, window):
    """`notes/__init__.py` reads with its underscores (the row as tall as its text, nothing clipped), and a
    path too long for the row keeps its first folder and its file name (issue 40)."""
    from ui.goto_dialog import HitRole, row_document

    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, finder, "__init__")
    assert finder.row_text(0).startswith("notes/__init__.py")
    document = row_document(finder.list.item(0).data(HitRole), False, finder.list.font(), finder.list.viewport().width())
    assert finder.list.visualItemRect(finder.list.item(0)).height() >= document.size().height()  # nothing clipped
    finder.filter.clear()
    finder.resize(300, finder.height())  # a narrow finder: the list is about 100 px wide
    qtbot.waitUntil(lambda: finder.list.viewport().width() < 200)
    type_in(qtbot, finder, "NoteRepository")
    java = next(text for text in map(finder.row_text, range(finder.list.count())) if "NoteRepository.java" in text)
    assert java.startswith(("java/…/", "…/", "NoteRepository.java"))  # cut from the front folders on
    assert "NoteRepository.java" in java and "java/src/main/java/notes" not in java  # the file name kept


def test_ctrl_t_during_the_first_index_says_the_index_is_still_being_built(qtbot, loop, service, qsettings, tmp_path):
    """Not "No symbol named 'LineMatcher'" while the first index of the workspace is under way (issue 40);
    once it is done, the finder says what is true again."""
    from ui.main_window import MainWindow
    from ui.viewmodels.goto import BUILDING

    fresh = shutil.copytree(SAMPLE, tmp_path / "fresh")
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    health = wait_task(qtbot, window.open_workspace(str(fresh)))
    assert not health.indexed
    task = window.start_index(False)
    assert window.finder.building()  # the first run is under way
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    window.finder.filter.blockSignals(True)  # the engine's answer is not what is tested: the run may end first
    window.finder.filter.setText("LineMatcher")
    window.finder.filter.blockSignals(False)
    window.finder._show_rows([])  # what an answer with no match shows, while the run goes on
    assert window.finder.status.text() == BUILDING
    wait_task(qtbot, task, 240_000)
    qtbot.waitUntil(lambda: not window.finder.building(), timeout=30_000)
    window.finder.filter.clear()
    type_in(qtbot, window.finder, "LineMatcher")
    assert window.finder.status.text() != BUILDING and "LineMatcher" in window.finder.status.text()
    window.shutdown()


def test_used_by_follows_the_name_under_the_code_pane_s_cursor(qtbot, window):
    """With the keyboard in the code pane, Alt+F7 lists the uses of the name under the cursor, not of the
    definition the pane was opened on (issue 40)."""
    from PySide6.QtGui import QTextCursor

    go_to_symbol(qtbot, window, "SearchEngine.search")
    editor = window.code.editor
    block = next(editor.document().findBlockByNumber(n) for n in range(editor.blockCount())
                 if "tokenize_query(" in editor.document().findBlockByNumber(n).text())
    cursor = QTextCursor(block)
    cursor.movePosition(QTextCursor.MoveOperation.Right, n=block.text().index("tokenize_query") + 3)
    editor.setTextCursor(cursor)
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    qtbot.keyClick(editor, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
    places = used_by_places(qtbot, window, "tokenize_query")
    assert ("notes/search.py", 38) in places and ("notes/search.py", 47) in places


def used_by_places(qtbot, window, symbol: str) -> set[tuple[str, int]]:
    """Once Used by lists `symbol` (Alt+F7 pressed), the (path, line) of each use it lists."""
    from ui.viewmodels.graph import USED_BY

    graph = window.graph.model
    qtbot.waitUntil(lambda: graph.subject is not None and graph.subject.chunk.symbol == symbol
                    and graph.answers[USED_BY] is not None and not window.graph.runner.is_running("graph"),
                    timeout=30_000)
    return {(f.path, link.line) for f in graph.answers[USED_BY].files for link in f.links}


FIXTURES = "def fill_fixtures(request):\n    return request\n"


def test_rows_that_would_read_alike_keep_the_folder_that_tells_them_apart_and_terms_match_apart(
        qtbot, loop, service, qsettings, tmp_path):
    """Issue 52, point 5: two `conftest.py` cut to fit a narrow finder each keep the folder that differs (not
    `testing/…/conftest.py` twice); "fill_fixtures conftest" finds the name in the conftest files, as
    VS Code's Ctrl+T does, and "python conftest" the file in Ctrl+P."""
    from ui.main_window import MainWindow

    folders = ("testing/a_rather_long_folder_name/python", "testing/a_rather_long_folder_name/io", "src/pkg")
    for folder, name in zip(folders, ("conftest.py", "conftest.py", "fixtures.py")):
        (tmp_path / "ws" / folder).mkdir(parents=True)
        (tmp_path / "ws" / folder / name).write_text(FIXTURES)
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    ensure_indexed(qtbot, window, str(tmp_path / "ws"))
    finder = window.finder
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    finder.resize(420, finder.height())
    qtbot.waitUntil(lambda: finder.list.viewport().width() < 400)
    type_in(qtbot, finder, "fill_fixtures conftest")
    rows = [finder.row_text(r) for r in range(finder.list.count())]
    assert len(rows) == 2 and all("conftest.py" in row for row in rows), rows
    assert all("a_rather_long_folder_name" not in row for row in rows), rows  # cut to fit
    assert any("/python/conftest.py" in row for row in rows) and any("/io/conftest.py" in row for row in rows), rows
    qtbot.keyClick(finder.filter, Qt.Key.Key_Escape)

    qtbot.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    type_in(qtbot, finder, "python conftest")
    assert [finder.list.item(r).data(HitRole).path for r in range(finder.list.count())] == [
        "testing/a_rather_long_folder_name/python/conftest.py"]
    window.shutdown()
