""""Used by" and "Uses" for the selected result in the real window (issue 35), over the real engine and an
indexed copy of tests/sample_workspace (offscreen): Alt+F7 and Ctrl+Alt+H bring each list forward, rows are
grouped by file with their line, and a click opens the code pane at the line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem

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


def children(item) -> list[str]:
    return [item.child(i).text(0) for i in range(item.childCount())]


def find_row(tree, text: str):
    found = tree.findItems(text, Qt.MatchFlag.MatchRecursive | Qt.MatchFlag.MatchStartsWith)
    assert found, f"no row {text!r}"
    return found[0]


def expand(qtbot, tree, row) -> None:
    """Right on the current row, as a reader expands it; a loading row until the engine answers."""
    tree.setCurrentItem(row)
    qtbot.keyClick(tree, Qt.Key.Key_Right)
    assert row.isExpanded() and children(row) == ["Loading…"]
    qtbot.waitUntil(lambda: children(row) != ["Loading…"], timeout=30_000)


def test_the_call_tree_expands(qtbot, window):
    """Issue 52: Used by is a call hierarchy. Expanding a use lists who uses the method it is in, one level
    deeper each time (the module's code and mentions in text end a branch); its rows open the code and have
    the rows' menu. Expanding a Uses row lists what that definition uses."""
    from PySide6.QtGui import QGuiApplication

    run_query(qtbot, window, "tokenize a query into keywords, keyword overlap score")
    select(qtbot, window, "tokenize_query")
    used_by = window.graph.lists[USED_BY]
    closed = QTreeWidgetItem.ChildIndicatorPolicy.DontShowIndicatorWhenChildless
    assert find_row(used_by, "    4  import in __init__").childIndicatorPolicy() == closed  # a module's import
    score = find_row(used_by, "   47  call in SearchEngine.score")
    expand(qtbot, used_by, score)
    assert children(score) == ["SearchEngine.search · notes/search.py:41"]
    search = score.child(0)
    expand(qtbot, used_by, search)
    assert "search · notes/search.py:59" in children(search)  # the module's demo code
    assert search.child(children(search).index("search · notes/search.py:59")).childIndicatorPolicy() == closed

    window.graph.row_actions(used_by, search)[2].trigger()
    assert QGuiApplication.clipboard().text() == "notes/search.py:41"
    used_by.scrollToItem(search)
    qtbot.mouseClick(used_by.viewport(), Qt.MouseButton.LeftButton, pos=used_by.visualItemRect(search).center())
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.start_line == 41)
    assert window.graph.model.subject.chunk.qualified_name == "tokenize_query"  # the tree stays

    select(qtbot, window, "SearchEngine.score")
    uses = window.graph.lists[USES]
    tokenize = find_row(uses, "   16  function tokenize_query")
    expand(qtbot, uses, tokenize)
    assert children(tokenize) == ["'tokenize_query' uses no definition of the indexed files."]


WALK = '''\
def ping(n):
    return pong(n - 1) if n else 0


def pong(n):
    return ping(n)


def start():
    return ping(3)
'''


def test_a_cycle_in_the_call_tree_is_marked_and_not_followed(tmp_path):
    """ping and pong call each other: under ping, pong's row expands to ping, marked recursive, which does not
    expand again (the view-model, without Qt, over the real engine)."""
    import asyncio

    from services.core.models import GotoHit
    from ui.viewmodels.goto import code_item
    from ui.viewmodels.graph import GraphViewModel

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "walk.py").write_text(WALK)
    workspace = str(tmp_path / "ws")
    engine = LocalEngine(data_dir=tmp_path / "data")

    async def walk() -> None:
        await engine.index(workspace)
        model = GraphViewModel(engine)
        item = code_item(workspace, GotoHit("walk.py", 1, 2, "ping", "ping", "function", "python", 1.0, "ping"))
        assert await model.load(workspace, item)
        for direction, first in ((USES, "pong"), (USED_BY, "pong")):
            rows = [row for group in model.groups(direction) for row in group.rows]
            pong = next(row for row in rows if row.link.qualified_name == first)
            assert pong.expandable
            level = await model.expand(workspace, direction, pong)
            assert [(row.link.qualified_name, row.text.endswith("↻ recursive"), row.expandable)
                    for row in level.rows] == [("ping", True, False)], level
        starts = [row for group in model.groups(USED_BY) for row in group.rows if row.link.qualified_name == "start"]
        assert starts and starts[0].expandable and not starts[0].recursive

    try:
        asyncio.run(walk())
    finally:
        engine.close()


def test_the_soak_s_call_tree_step_expands_a_row_in_each_tree(qtbot, window, tmp_path):
    """benchmarks/soak.py's step (issue 52: the soak exercises the call tree), over the real window."""
    import asyncio

    from benchmarks.soak import Driver, Heartbeat
    from tests.ui.test_main_window import wait_task

    run_query(qtbot, window, "tokenize a query into keywords, keyword overlap score")
    select(qtbot, window, "SearchEngine.score")
    driver = Driver(window, tmp_path, Heartbeat())
    wait_task(qtbot, asyncio.ensure_future(driver.call_tree()), 60_000)
    assert driver.counts == {"call tree": 1} and driver.failures == []
    expanded = [window.graph.lists[d].currentItem().parent() for d in (USED_BY, USES)]
    assert all(row is not None and row.isExpanded() and row.childCount() for row in expanded)
