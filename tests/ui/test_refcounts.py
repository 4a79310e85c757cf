"""The window can stay open all day: the Qt binding must not leak references to the immortal-looking
singletons. PySide6-Essentials 6.12.0 on Python 3.11 drops one reference to None for every
QSyntaxHighlighter.setFormat made from a Python highlightBlock; after a few thousand highlighted lines the
next garbage collection aborted the process ("Fatal Python error: none_dealloc").

This drives every Qt virtual the window overrides (highlightBlock, paint, initStyleOption, paintEvent,
resizeEvent, eventFilter, data / headerData / rowCount, setText) and the Qt calls made on those paths
thousands of times, and fails as soon as the reference count of None, True, False or a small int drops: a
binding that gives back references it does not own frees the singleton, and the process aborts. (A count that
rises is a reference taken and never given back, harmless for these singletons: 6.11.3 takes 3 per
QTextDocument layout and 6 per setItemWidget; the soak benchmark shows the count rising all session.)"""

from __future__ import annotations

import functools
import gc
import os
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import PySide6
from PySide6.QtCore import QSize, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from tests.ui.factories import SOURCE, sample_health, sample_result
from ui.code_view import CodeView
from ui.health_panel import HealthPanel
from ui.query_bar import QueryBar
from ui.results_view import ResultsView

ROOT = Path(__file__).resolve().parents[2]
SINGLETONS = {"None": None, "True": True, "False": False, "0": 0, "1": 1}
ROUNDS = 12
LINES = 150  # per round ~1,000 setFormat calls: a leaking binding shows at once, long before None runs out
ALLOWED_DROP = 200  # a leaking binding drops thousands over these rounds; caches and frames move a few dozen


IN_CHILD = "REFCOUNT_TEST_ALONE"  # set in the fresh interpreter that runs a measuring test


def alone(test):
    """Run the test in a fresh interpreter. The counts are process-wide: in a worker shared with other tests, their
    garbage freed during the rounds (an earlier test's cache, a thread ending) moves them by thousands."""
    @functools.wraps(test)
    def in_child(*args, **kwargs):
        if os.environ.get(IN_CHILD):
            return test(*args, **kwargs)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        node = f"{Path(__file__).relative_to(ROOT)}::{test.__name__}"
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                              "-n", "0", node], cwd=ROOT, capture_output=True, text=True, timeout=900,
                             env={**env, IN_CHILD: "1", "QT_QPA_PLATFORM": "offscreen"})
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return in_child


def counts() -> dict[str, int]:
    gc.collect()
    return {name: sys.getrefcount(value) for name, value in SINGLETONS.items()}


def drifted(before: dict[str, int]) -> dict[str, int]:
    """The singletons whose count dropped (the fatal direction) since `before`, by how much."""
    now = counts()
    return {name: now[name] - before[name] for name in before if before[name] - now[name] > ALLOWED_DROP}


def long_file(tmp_path: Path) -> tuple[str, Path]:
    """A workspace with one long Python file (every line coloured: keywords, strings, numbers, comments)."""
    lines = SOURCE.splitlines()
    body = "\n".join(f"    value_{n} = call_{n}('text {n}', {n}, None)  # note {n}" for n in range(LINES))
    text = "\n".join([*lines, "", "def long_function():", body, "    return True", ""])
    (tmp_path / "notes").mkdir()
    path = tmp_path / "notes" / "store.py"
    path.write_text(text, encoding="utf-8")
    return text, path


def exercise(code: CodeView, results: ResultsView, health: HealthPanel, size: int, bar: QueryBar | None = None
             ) -> None:
    """One round of what a user does all day: read a whole file, scroll it, repaint the rankings and the
    why bars, resize the panes, refresh the health panel, type a question with completions and walk the
    history."""
    result = sample_result()
    results.set_result(result)
    for row in range(len(result.results)):
        results.reranked_table.selectRow(row)
        results.grab()  # paints the score bars, the fitted names and locations, the why view's bars
    code.whole_file.setChecked(True)
    code.show_chunk(result.original[0])  # the whole file: highlightBlock for each of its lines
    code.highlighter.rehighlight()
    scrollbar = code.editor.verticalScrollBar()
    for value in range(0, scrollbar.maximum(), max(1, scrollbar.maximum() // 20)):
        scrollbar.setValue(value)
        code.editor.grab()  # the gutter's paintEvent at each scroll position
    for width in (size, size // 2, size):
        code.resize(QSize(width, 600))
        results.resize(QSize(width, 500))  # ElidedLabel.resizeEvent, the column fitter's eventFilter
        results.grab()  # narrow: rows stacked on two lines, painted by the delegates themselves
    health.set_health(sample_health())
    health.grab()
    if bar is not None:  # keyPressEvent, the completer's splitPath / pathFromIndex
        box = bar.query
        box.clear()
        QTest.keyClicks(box, "save the sto")
        popup = bar.completer.popup()
        if popup.isVisible():
            QTest.keyClick(popup, Qt.Key.Key_Down)
            QTest.keyClick(popup, Qt.Key.Key_Return)
        for key in (Qt.Key.Key_Up, Qt.Key.Key_Up, Qt.Key.Key_Down):
            QTest.keyClick(box, key)
        bar.grab()


@alone
def test_the_window_s_qt_paths_never_drop_references_to_none_or_small_singletons(qtbot, tmp_path):
    _text, _path = long_file(tmp_path)
    code, results, health, bar = CodeView(), ResultsView(), HealthPanel(), QueryBar()
    for widget in (code, results, health, bar):
        qtbot.addWidget(widget)
        widget.show()
    code.set_workspace(str(tmp_path))
    bar.set_symbols(["Store", "Store.save", "Store.load", "store_notes", "stored"])
    bar.query.set_history(["save notes", "load notes", "index notes"])
    exercise(code, results, health, 900, bar)  # first use fills caches (lexers, fonts, styles)
    before = counts()
    for _ in range(ROUNDS):
        exercise(code, results, health, 900, bar)
        assert not drifted(before), (
            f"reference counts drifted by {drifted(before)} with PySide6 {PySide6.__version__}: the Qt binding "
            "leaks references (a leak to None aborts the process once its count reaches zero)")
    assert code.editor.blockCount() > LINES  # the whole file was shown and highlighted each round


@alone
def test_the_chunk_view_highlights_a_long_file_without_leaking(qtbot, tmp_path):
    """Highlighting alone, many thousand times: the path that crashed the window."""
    _text, path = long_file(tmp_path)
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace(str(tmp_path))
    item = sample_result().original[0]
    view.whole_file.setChecked(True)
    view.show_chunk(item)
    before = counts()
    for _ in range(30):  # 30 × 150 lines × several spans: over 20,000 setFormat calls
        view.highlighter.rehighlight()
        assert not drifted(before), f"highlighting leaks: {drifted(before)} (PySide6 {PySide6.__version__})"
    assert view.editor.blockCount() > LINES


@alone
def test_the_go_to_finder_s_rows_never_drop_references(qtbot):
    """Rows shown, selected, painted and cleared as Ctrl+T does on every keystroke."""
    from services.core.models import GotoHit
    from ui.goto_dialog import GotoDialog
    from ui.viewmodels.goto import GotoViewModel

    host = QWidget()
    host.resize(1000, 700)
    qtbot.addWidget(host)
    finder = GotoDialog(host, GotoViewModel(None), lambda: "", lambda _item, _editor: None)
    finder.runner.run = lambda coro, *_args, **_kwargs: coro.close()  # the preview asks no engine here
    host.show()
    finder.show()
    hits = [GotoHit(f"src/_pytest/_io/module_{n}.py", n + 1, n + 9, f"name_{n}", f"Class_{n}.name_{n}", "method",
                    "python", 1.0, f"Class_{n}.name_{n}", (0, 1, 2)) for n in range(20)]

    def show_rows() -> None:
        finder._show_rows(hits)
        for row in range(0, 20, 4):
            finder.list.setCurrentRow(row)
        finder.list.grab()  # paints every row
        finder._show_rows([])

    show_rows()
    before = counts()
    for _ in range(ROUNDS * 5):
        show_rows()
        assert not drifted(before), f"the finder's rows drop references: {drifted(before)} (PySide6 {PySide6.__version__})"


KNOWN_LEAKING = {"6.12.0": "QSyntaxHighlighter.setFormat leaks a reference to None per call on Python 3.11"}


def test_the_pinned_qt_binding_is_not_one_known_to_leak():
    """A pinned dependency is a choice to keep testing: neither the pin nor what is installed is a version
    known to crash the window."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {dep.split("==")[0].lower(): dep.split("==")[1] for dep in project["project"]["dependencies"]
            if "==" in dep}
    pinned = pins["pyside6-essentials"]
    assert pinned not in KNOWN_LEAKING, f"PySide6-Essentials {pinned}: {KNOWN_LEAKING[pinned]}"
    assert PySide6.__version__ not in KNOWN_LEAKING, KNOWN_LEAKING.get(PySide6.__version__)
    assert PySide6.__version__ == pinned, f"installed PySide6 {PySide6.__version__}, pinned {pinned}"


def test_exercise_shows_the_whole_file(qtbot, tmp_path):
    """The refcount rounds are only worth something if they highlight what a user reads: the whole file,
    coloured."""
    text, _path = long_file(tmp_path)
    view = CodeView()
    qtbot.addWidget(view)
    view.set_workspace(str(tmp_path))
    view.whole_file.setChecked(True)
    view.show_chunk(replace(sample_result().original[0]))
    last = view.editor.document().findBlockByNumber(view.editor.blockCount() - 2)
    assert view.editor.blockCount() == text.rstrip("\n").count("\n") + 1
    assert last.layout().formats(), "the file's last lines are coloured too"
