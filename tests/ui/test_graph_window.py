""""Used by" and "Uses" for the selected result in the real window (issue 35), over the real engine and an
indexed copy of tests/sample_workspace (offscreen): Alt+F7 and Ctrl+Alt+H bring each list forward, rows are
grouped by file with their line, and a click opens the code pane at the line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from services.engine.service import LocalEngine
from tests.ui.test_main_window import ensure_indexed, run_query
from ui.viewmodels.graph import USED_BY, USES

pytestmark = pytest.mark.slow
SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = LocalEngine(data_dir=tmp_path_factory.mktemp("ke-graph-data"))
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    target = tmp_path_factory.mktemp("graph-ws") / "sample"
    shutil.copytree(SAMPLE, target)
    return str(target)


@pytest.fixture
def window(window, qtbot, workspace):
    """tests/ui/conftest.py's window, with the sample workspace open and indexed."""
    ensure_indexed(qtbot, window, workspace)
    return window


def select(qtbot, window, qualified_name: str) -> None:
    """Select the reranked result that is `qualified_name`, and wait for both of its lists."""
    table = window.results.reranked_table
    rows = [r for r in range(table.model().rowCount()) if table.model().item(r).chunk.qualified_name == qualified_name]
    assert rows, f"{qualified_name} is not among the results"
    table.selectRow(rows[0])
    model = window.graph.model
    qtbot.waitUntil(lambda: model.subject is not None and model.subject.chunk.qualified_name == qualified_name
                    and model.answers[USES] is not None and not window.graph.runner.is_running("graph"),
                    timeout=30_000)


def rows(tree) -> list[tuple[str, list[str]]]:
    return [(tree.topLevelItem(i).text(0), [tree.topLevelItem(i).child(j).text(0)
                                            for j in range(tree.topLevelItem(i).childCount())])
            for i in range(tree.topLevelItemCount())]


def test_used_by_and_uses_of_the_selected_result_open_the_code_at_the_line(qtbot, window):
    run_query(qtbot, window, "tokenize a query into keywords, keyword overlap score")
    select(qtbot, window, "tokenize_query")
    qtbot.keyClick(window, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
    used_by = window.graph.lists[USED_BY]
    assert window.graph.tabs.currentWidget() is used_by and used_by.hasFocus()
    assert window.graph.tabs.tabText(0) == "Used by tokenize_query (5)"  # names what it lists
    assert rows(used_by) == [("notes/__init__.py · 2", ["    4  import in __init__",
                                                        "    7  mentioned in __init__"]),  # in `__all__`
                             ("notes/search.py · 3", ["   38  call in SearchEngine.search",
                                                      "   47  call in SearchEngine.score",
                                                      "   48  call in SearchEngine.score"])]
    row = used_by.topLevelItem(1).child(1)
    used_by.scrollToItem(row)
    qtbot.mouseClick(used_by.viewport(), Qt.MouseButton.LeftButton, pos=used_by.visualItemRect(row).center())
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.start_line == 47)
    assert window.code.item.chunk.path == "notes/search.py" and "tokenize_query(note.title)" in window.code.item.chunk.content
    assert (window.graph.model.subject.chunk.qualified_name == "tokenize_query")  # the lists stay on the result

    select(qtbot, window, "SearchEngine.score")
    qtbot.keyClick(window, Qt.Key.Key_H, Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.ControlModifier)
    uses = window.graph.lists[USES]
    assert window.graph.tabs.currentWidget() is uses and uses.hasFocus()
    shown = dict(rows(uses))
    assert shown["notes/search.py · 1"] == ["   16  function tokenize_query · used on line 47, 48"]
    assert any("class Note" in text for text in shown["notes/models.py · 1"])
    qtbot.keyClick(uses, Qt.Key.Key_Return)  # the first row is current: Enter opens it
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.start_line == 16)


def test_used_by_lists_code_first_tests_and_docs_apart_and_a_row_has_a_menu(qtbot, window):
    """Issue 52, point 4: the documentation's mentions after the code, under their own heading; a row's
    context menu opens it, opens it in the editor or copies its path:line."""
    from PySide6.QtGui import QGuiApplication

    from services.core.models import GraphAnswer, GraphFile, GraphLink
    from ui.viewmodels.graph import file_rows

    def link(path: str, line: int) -> GraphLink:
        return GraphLink(path, line, "Session", "call", "main", "function", "x")

    answer = GraphAnswer("Session", USED_BY, [], [GraphFile(p, [link(p, 3)]) for p in (
        "CHANGELOG.rst", "doc/en/how-to/usage.rst", "testing/test_main.py", "src/_pytest/main.py",
        "src/_pytest/conftest.py", "tests/conftest.py")], 6)
    assert [(g.heading, g.section) for g in file_rows(answer)] == [
        ("src/_pytest/main.py · 1", "code"), ("testing/test_main.py · 1", "tests"),
        ("src/_pytest/conftest.py · 1", "tests"), ("tests/conftest.py · 1", "tests"),
        ("CHANGELOG.rst · 1", "docs"), ("doc/en/how-to/usage.rst · 1", "docs")]

    run_query(qtbot, window, "tokenize a query into keywords, keyword overlap score")
    select(qtbot, window, "tokenize_query")
    used_by = window.graph.lists[USED_BY]
    row = used_by.topLevelItem(1).child(0)
    texts = [a.text() for a in window.graph.row_actions(used_by, row)]
    assert texts == ["Open", "Open in editor", "Copy path:line"]
    window.graph.row_actions(used_by, row)[2].trigger()
    assert QGuiApplication.clipboard().text() == "notes/search.py:38"
    window.graph.row_actions(used_by, row)[0].trigger()
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.start_line == 38)
