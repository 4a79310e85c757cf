"""The desk (issue #13): shortcuts, editor at the line, history, highlighting, per-workspace state, layout.

Real window offscreen on the real LocalEngine (real model, real Chroma) over a copy of
tests/sample_workspace; the editor and terminal are real programs (small Python scripts that
record the arguments they receive).
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from pygments.token import Keyword, String
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest

from services.engine.service import LocalEngine
from services.core.models import Chunk, ResultChunk
from ui.code_view import CodeView, lexer_for
from ui.editor import CUSTOM, ENVIRONMENT, JETBRAINS, SUBLIME, VSCODE, EditorError, editor_command, open_at_line
from ui.main_window import MainWindow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_workspace"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    target = tmp_path_factory.mktemp("desk") / "sample"
    shutil.copytree(SAMPLE, target)
    return str(target.resolve())


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    svc = LocalEngine(data_dir=tmp_path_factory.mktemp("desk-data"))
    yield svc
    svc.close()


@pytest.fixture
def window(loop, qtbot, service, qsettings, workspace):
    win = MainWindow(service, qsettings)
    qtbot.addWidget(win)
    win.show()
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=10_000)
    health = wait_task(qtbot, win.open_workspace(workspace))
    if not health.indexed or health.stale_files:
        wait_task(qtbot, win.start_index(False), 240_000)
    yield win
    win.shutdown()


def wait_task(qtbot, task, timeout=60_000):
    qtbot.waitUntil(task.done, timeout=timeout)
    return task.result()


def press(qtbot, win, shortcut: str) -> None:
    """Type a shortcut into whatever has the focus (as a user would). Offscreen, a closing popup
    (the completer's) leaves no window active, so the window is activated first."""
    if not win.isActiveWindow():
        win.activateWindow()
        qtbot.waitUntil(win.isActiveWindow, timeout=5_000)
    target = win.focusWidget() or win
    QTest.keySequence(target, QKeySequence(shortcut))


def ask(qtbot, win, text: str):
    """Type a question and press Enter; wait for its answer."""
    before = win.last_result
    win.query_bar.query.setFocus()
    win.query_bar.query.clear()
    qtbot.keyClicks(win.query_bar.query, text)
    qtbot.keyClick(win.query_bar.query, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: win.last_result is not before and win.last_result.question == text, timeout=60_000)
    return win.last_result


def recorder(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """An executable script `name` that writes its arguments, one a line, to a file. The file appears
    whole (written aside, then renamed): a test waiting for it never reads it half-written."""
    record = tmp_path / f"{name}.args"
    script = tmp_path / "bin" / name
    script.parent.mkdir(exist_ok=True)
    part = f"{record}.part"
    script.write_text(f"#!{sys.executable}\nimport os, sys\n"
                      f"with open({part!r}, 'w') as out:\n    out.write('\\n'.join(sys.argv[1:]))\n"
                      f"os.replace({part!r}, {str(record)!r})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, record


def zombie_children() -> set[int]:
    """Our children that exited and were never reaped (other tests' leftovers are compared away)."""
    zombies = set()
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            zombies.add(int(stat_file.parent.name))
    return zombies


def test_every_action_has_a_shortcut_shown_in_its_tooltip(window):
    for action in window.palette.commands() + [window.palette.open_action]:
        shortcut = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
        assert shortcut, action.text()
        assert shortcut in action.toolTip(), action.text()
    assert "Ctrl+L" in window.query_bar.query.toolTip()
    assert "Ctrl+E" in window.code.open_button.toolTip()


def test_keyboard_drives_query_rankings_strategies_tabs_and_quit(qtbot, window):
    press(qtbot, window, "Ctrl+L")
    assert window.query_bar.query.hasFocus()
    ask(qtbot, window, "delete a note")
    assert window.query_bar.query.hasFocus(), "results do not steal the focus"
    press(qtbot, window, "Ctrl+2")
    assert window.results.reranked_table.hasFocus()
    qtbot.keyClick(window.results.reranked_table, Qt.Key.Key_Down)
    assert window.code.item is window.results.reranked_model.item(1)
    press(qtbot, window, "Ctrl+1")
    assert window.results.original_table.hasFocus()

    # strategies: arrow keys on the box change it and the focus stays there
    first = window.query_bar.strategy_name()
    press(qtbot, window, "Ctrl+]")
    second = window.query_bar.strategy_name()
    assert second != first
    qtbot.waitUntil(lambda: window.last_result.strategy == second, timeout=60_000)
    press(qtbot, window, "Ctrl+[")
    assert window.query_bar.strategy_name() == first
    window.query_bar.strategy.setFocus()
    qtbot.keyClick(window.query_bar.strategy, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: window.last_result.strategy == window.query_bar.strategy_name() != first,
                    timeout=60_000)
    assert window.query_bar.strategy.hasFocus()

    # Down from the question box goes to the results; Ctrl+L comes back
    press(qtbot, window, "Ctrl+L")
    qtbot.keyClick(window.query_bar.query, Qt.Key.Key_Down)
    assert window.results.reranked_table.hasFocus()

    # tabs: Ctrl+L focuses the question box of the Compare tab
    press(qtbot, window, "Ctrl+Shift+C")
    assert window.tabs.currentWidget() is window.compare_view
    press(qtbot, window, "Ctrl+L")
    assert window.compare_view.question.hasFocus()
    press(qtbot, window, "Ctrl+Shift+E")
    assert window.tabs.currentWidget() is window.explore

    # Ctrl+Enter runs the question from anywhere
    window.session.last_result = None
    window.results.reranked_table.setFocus()
    press(qtbot, window, "Ctrl+Return")
    qtbot.waitUntil(lambda: window.last_result is not None, timeout=60_000)

    press(qtbot, window, "Ctrl+Q")
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=5_000)


def test_command_palette_filters_and_runs_actions(qtbot, window):
    press(qtbot, window, "Ctrl+K")
    palette = window.palette
    assert palette.isVisible() and palette.filter.hasFocus()
    assert len(palette.shown_commands()) > 10
    qtbot.keyClicks(palette.filter, "compare")
    assert palette.shown_commands() == ["Compare strategies tab    Ctrl+Shift+C"]
    qtbot.keyClick(palette.filter, Qt.Key.Key_Return)
    assert not palette.isVisible() and window.tabs.currentWidget() is window.compare_view
    press(qtbot, window, "Ctrl+K")
    qtbot.keyClick(palette.filter, Qt.Key.Key_Escape)
    assert not palette.isVisible()


def test_enter_and_double_click_open_the_result_at_its_line(qtbot, window, tmp_path, monkeypatch):
    script, record = recorder(tmp_path, "fake-editor")
    zombies = zombie_children()
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    window.editor_settings.set_editor(ENVIRONMENT)
    ask(qtbot, window, "save a note to disk")
    table = window.results.reranked_table
    press(qtbot, window, "Ctrl+2")
    qtbot.keyClick(table, Qt.Key.Key_Return)
    qtbot.waitUntil(record.exists, timeout=15_000)
    first = window.results.reranked_model.item(0).chunk
    assert record.read_text().splitlines() == [f"+{first.start_line}", str(Path(window.workspace) / first.path)]

    record.unlink()
    second = window.results.reranked_model.item(1).chunk
    model = window.results.reranked_model
    rect = table.visualRect(model.index(1, model.column_of("Symbol")))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a double-click's
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # first press
    qtbot.waitUntil(record.exists, timeout=15_000)
    assert record.read_text().splitlines() == [f"+{second.start_line}", str(Path(window.workspace) / second.path)]
    assert zombie_children() <= zombies
    assert window.settings.value("editor/preset") == ENVIRONMENT


def test_editor_presets_open_at_the_line():
    assert editor_command(VSCODE, "/w/a.py", 12) == ["code", "-g", "/w/a.py:12"]
    assert editor_command(SUBLIME, "/w/a.py", 12) == ["subl", "/w/a.py:12"]
    assert editor_command(JETBRAINS, "/w/a.py", 12, "pycharm") == ["pycharm", "--line", "12", "/w/a.py"]
    assert editor_command(CUSTOM, "/w/my notes.py", 3, custom="ed --goto {path}:{line}") == \
        ["ed", "--goto", "/w/my notes.py:3"]
    with pytest.raises(EditorError, match="custom editor command is empty"):
        editor_command(CUSTOM, "/w/a.py", 3, custom="")


def test_a_terminal_editor_runs_in_a_terminal_emulator_or_says_why_not(qtbot, tmp_path, monkeypatch):
    target = tmp_path / "notes.py"
    target.write_text("x = 1\n")
    terminal, record = recorder(tmp_path, "xterm")  # a real program standing in for xterm
    zombies = zombie_children()
    monkeypatch.setenv("PATH", str(terminal.parent))
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "vim -p")
    open_at_line(ENVIRONMENT, str(target), 7)
    qtbot.waitUntil(record.exists, timeout=15_000)
    assert record.read_text().splitlines() == ["-e", "vim", "-p", "+7", str(target)]
    assert zombie_children() <= zombies

    terminal.unlink()
    with pytest.raises(EditorError, match="no terminal emulator was found"):
        open_at_line(ENVIRONMENT, str(target), 7)
    monkeypatch.setenv("EDITOR", "no-such-editor")
    with pytest.raises(EditorError, match="Could not find the editor program"):
        open_at_line(ENVIRONMENT, str(target), 7)


def test_a_failing_editor_shows_a_message(qtbot, window, monkeypatch):
    monkeypatch.setenv("VISUAL", "no-such-editor --wait")
    window.editor_settings.set_editor(ENVIRONMENT)
    ask(qtbot, window, "save a note to disk")
    press(qtbot, window, "Ctrl+E")
    assert "no-such-editor" in window.messages.text() and window.messages.isVisible()


def test_history_walks_with_up_and_down_and_is_kept_per_workspace(qtbot, window, service, qsettings, tmp_path):
    ask(qtbot, window, "delete a note")
    ask(qtbot, window, "save a note to disk")
    box = window.query_bar.query
    box.clear()
    qtbot.keyClicks(box, "draft")
    qtbot.keyClick(box, Qt.Key.Key_Up)
    assert box.text() == "save a note to disk"
    qtbot.keyClick(box, Qt.Key.Key_Up)
    assert box.text() == "delete a note"
    qtbot.keyClick(box, Qt.Key.Key_Down)
    qtbot.keyClick(box, Qt.Key.Key_Down)
    assert box.text() == "draft"
    box.setText("delete a note")
    press(qtbot, window, "Ctrl+D")  # pin it
    assert window.query_bar.pinned == ["delete a note"]
    window.query_bar._fill_history_menu()
    titles = [a.text() for a in window.query_bar.history_menu.actions()]
    assert titles[:2] == ["Pinned", "delete a note"] and "save a note to disk" in titles

    workspace = window.workspace
    other = tmp_path / "other"
    other.mkdir()
    wait_task(qtbot, window.open_workspace(str(other)))
    assert window.query_bar.recent == [] and window.query_bar.pinned == []
    window.close()

    second = MainWindow(service, qsettings)  # the same settings file: history survives a restart
    qtbot.addWidget(second)
    try:
        wait_task(qtbot, second.open_workspace(str(SAMPLE)))  # a third workspace: its own, empty history
        assert second.query_bar.recent == []
        wait_task(qtbot, second.open_workspace(workspace))
        assert second.query_bar.recent[:2] == ["save a note to disk", "delete a note"]
        assert second.query_bar.pinned == ["delete a note"]
    finally:
        second.shutdown()


def test_filters_belong_to_the_workspace_rerun_and_explain_an_empty_answer(qtbot, window, tmp_path):
    ask(qtbot, window, "save a note to disk")
    bar = window.query_bar
    before = window.last_result
    bar.path_glob.setFocus()
    qtbot.keyClicks(bar.path_glob, "swift/*")
    qtbot.keyClick(bar.path_glob, Qt.Key.Key_Return)

    def swift_only() -> bool:  # an unfiltered answer still in flight from before may land first
        result = window.last_result
        return result is not before and bool(result.results) and all(
            r.chunk.path.startswith("swift/") for r in result.results)

    qtbot.waitUntil(swift_only, timeout=60_000)
    assert bar.clear_filters_button.isVisible() and "swift/*" in bar.clear_filters_button.text()
    assert "filtered: paths swift/*" in window.status_results.text()

    before = window.last_result
    bar.top_k.setValue(3)  # the result count re-runs too
    qtbot.waitUntil(lambda: window.last_result is not before and len(window.last_result.results) <= 3,
                    timeout=60_000)

    before = window.last_result
    next(a for a in bar.languages_menu.actions() if a.text() == "java").setChecked(True)
    qtbot.waitUntil(lambda: window.last_result is not before and window.last_result.results == [], timeout=60_000)
    text = window.messages.text()
    assert "the path filter excluded" in text and "the language filter excluded" in text
    assert window.messages.action_button.text() == "Clear filters"

    # another workspace starts without these filters, and the old banner and status are gone
    other = tmp_path / "other"
    other.mkdir()
    workspace = window.workspace
    wait_task(qtbot, window.open_workspace(str(other)))
    assert bar.filters_text() == "" and not bar.clear_filters_button.isVisible()
    assert window.status_results.text() == "" and "excluded" not in window.messages.text()
    wait_task(qtbot, window.open_workspace(workspace))
    assert bar.selected_languages() == ("java",) and bar.path_glob.text() == "swift/*"

    # one click clears them and the question runs again
    window.run_query("save a note to disk")
    qtbot.waitUntil(lambda: window.messages.action_button.isVisible(), timeout=60_000)
    before = window.last_result
    qtbot.mouseClick(window.messages.action_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.last_result is not before and bool(window.last_result.results), timeout=60_000)
    assert bar.filters_text() == ""
    assert "java" in [a.text() for a in bar.languages_menu.actions()]  # still on offer


def test_the_threshold_explanation_names_the_closest_chunk(qtbot, window):
    result = ask(qtbot, window, "quantum chromodynamics lattice gauge theory")
    if result.results:
        pytest.skip("the sample workspace matched this question above the threshold")
    assert "below the relevance threshold" in window.messages.text()
    assert "Closest:" in window.messages.text()


def test_results_refresh_when_an_index_run_finishes(qtbot, window):
    ask(qtbot, window, "delete a note")
    before = window.last_result
    press(qtbot, window, "F5")
    qtbot.waitUntil(lambda: window.last_result is not before, timeout=120_000)
    assert window.last_result.question == "delete a note"


def test_full_rebuild_asks_first(qtbot, window):
    qtbot.mouseClick(window.health_panel.rebuild_button, Qt.MouseButton.LeftButton)
    assert not window.runner.is_running("index")
    assert "Rebuild the whole index" in window.messages.text()
    assert window.messages.action_button.text() == "Rebuild"


def test_banners_float_over_the_view_and_the_minimum_size_shows_five_rows(qtbot, window):
    ask(qtbot, window, "save a note to disk")
    table = window.results.reranked_table
    where = table.mapTo(window, QPoint(0, 0))
    window.messages.show_message("A long message\nover two lines", "warning")
    assert window.messages.isVisible()
    assert table.mapTo(window, QPoint(0, 0)) == where  # nothing moved under the mouse

    window.resize(window.minimumSizeHint().expandedTo(window.minimumSize()))
    qtbot.waitUntil(lambda: window.size() == window.minimumSizeHint().expandedTo(window.minimumSize()),
                    timeout=5_000)
    # the minimum size depends on the fonts; what a user needs does not: it fits the screen (offscreen:
    # 800 x 800) and at that size every control is on screen, whole, with five rows in each ranking (three
    # when its rows are stacked on two lines; the health panel is a dock, opened from the toolbar)
    screen = window.screen().availableGeometry()
    assert window.width() <= screen.width() and window.height() <= screen.height()
    bar = window.query_bar
    for widget in (bar.query, bar.search_button, bar.strategy, bar.top_k, bar.languages_button, bar.path_glob,
                   window.results.original_table, window.results.reranked_table, window.code.editor,
                   window.code.open_button):
        assert widget.isVisible(), widget
        where = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
        assert window.rect().contains(where), widget
        assert widget.width() >= widget.minimumSizeHint().width() or widget.minimumSizeHint().width() < 0, widget
    for ranking in (window.results.original_table, table):
        rows = ranking.viewport().height() // ranking.verticalHeader().defaultSectionSize()
        assert rows >= (3 if ranking.stacked else 5)
    assert window.code.editor.viewport().height() >= window.code.editor.fontMetrics().height() * 4


DOCSTRING_SOURCE = '''def load(path):
    """Read the notes file.

    It's "quoted" here and there; def is a word.
    Returns the parsed notes.
    """
    with open(path) as f:
        return f.read()
'''


def test_a_slice_starting_inside_a_docstring_is_highlighted_as_in_the_file(qtbot, tmp_path):
    (tmp_path / "m.py").write_text(DOCSTRING_SOURCE)
    lines = DOCSTRING_SOURCE.splitlines()
    chunk = Chunk(path="m.py", language="python", start_line=1, end_line=8, content=DOCSTRING_SOURCE,
                  symbol="load", qualified_name="load", kind="function", content_hash="h")
    context = "\n".join(lines[2:8])  # from line 3, inside the docstring, to the end
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace(str(tmp_path))
    view.show_chunk(ResultChunk(chunk, 1, 0.5, 1, 0.5, context, 3))
    highlighter = view.highlighter
    # block 1 is line 4 (docstring text); block 4 is line 7 ("with open(...)")
    assert highlighter.token_at(1, 6) in String.Doc
    assert highlighter.token_at(4, 4) in Keyword
    # lexing the slice alone inverts it (the premise of the fix)
    highlighter.prepare(context, lexer_for("m.py", "python"))
    assert highlighter.token_at(4, 4) in String
