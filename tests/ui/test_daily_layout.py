"""Issue 32, points 4 and 7, at 1024×700 on the real engine and the sample workspace: a status bar whose
texts never collide (each cut with "…", the whole text in its tooltip), qualified names cut in the middle
so the class stays, locations that keep their line number, and a code pane that shows the whole file.
Widths are compared with the widgets' own font metrics, never with pixel counts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from services.core.models import ProgressEvent, SkippedFile, StaleFile
from tests.ui.test_layout import ask, indexed, shown  # noqa: F401 (indexed: the module's indexed sample)
from ui.main_window import MainWindow
from ui.theme import apply_theme
from ui.viewmodels.ranking import elide_name

RUN = ProgressEvent("embedding", 120, 166, 2100, 4300, 48.0, 151.0, "torch on cpu, fp32, batch 32",
                    index_done=8275, index_total=10436)


@pytest.fixture
def window(loop, qtbot, indexed, qsettings):  # noqa: F811
    service, workspace = indexed
    window = MainWindow(service, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.strategies_loaded.done, timeout=60_000)
    qtbot.waitUntil(window.open_workspace(str(workspace)).done, timeout=60_000)
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    yield window
    window.shutdown()


def test_names_are_cut_in_the_middle_so_the_class_stays():
    fits = lambda width: (lambda text: len(text) <= width)  # noqa: E731 (one character, one unit)
    name = "FixtureManager.parsefactories"
    assert elide_name(name, fits(40)) == name
    assert elide_name(name, fits(25)) == "FixtureManager.…factories"
    assert elide_name("A.B.method_name", fits(10)) == "A.…od_name"
    assert elide_name("TestFixtureManagerParseFactories", fits(12)).count("…") == 1
    assert elide_name("VeryLongClassNameHere.x", fits(8)).startswith("Very")


def test_the_status_bar_never_collides_during_a_run(qtbot, window):
    ask(qtbot, window, "save a note to disk and list the titles of every note in the repository", "hybrid")
    window._on_progress(RUN)  # what an automatic run reports, beside the result text and the timings
    qtbot.waitUntil(lambda: window.index_status.isVisible())
    labels = [window.status_results, window.index_status, window.timings_label]
    boxes = [label.geometry() for label in labels]
    for n, box in enumerate(boxes):
        assert all(not box.intersects(other) for other in boxes[n + 1:]), boxes
        assert box.right() <= window.statusBar().width()
    for label in labels:
        metrics, text = label.fontMetrics(), label.shown_text()
        assert text == label.text() or text.endswith("…"), text  # cut at its end, never mid-word unmarked
        assert metrics.horizontalAdvance(text) <= label.contentsRect().width()
        assert label.toolTip() == label.text() and label.text()
        assert label.width() >= metrics.horizontalAdvance("0") * 10  # each keeps room to be read
    assert "8,275 of 10,436" in window.index_status.text() and window.index_status.text().count(" on cpu") == 1


def test_locations_keep_their_line_numbers_and_names_their_class(qtbot, window):
    ask(qtbot, window, "list the titles of the notes in the repository", "hybrid")
    for table in (window.results.original_table, window.results.reranked_table):
        model = table.model()
        for row in range(model.rowCount()):
            chunk = model.item(row).chunk
            name = chunk.path.rsplit("/", 1)[-1]
            assert f"{name}:{chunk.start_line}" in shown(table, row, "Location")
            symbol = shown(table, row, "Symbol")
            if chunk.qualified_name:  # cut in the middle, never from the left: the class's start stays
                assert symbol.startswith(chunk.qualified_name[:3]), symbol


def test_the_code_pane_shows_the_whole_file_with_the_height_of_the_window(qtbot, window):
    """Reading code is the main thing (issue 40): the code pane has the window's whole height beside the
    rankings, shows the whole file scrolled to the chunk (its lines marked) by default, and "Whole file"
    off shows the chunk with its context; the choice is kept."""
    window.resize(1440, 900)  # beside the rankings from 1,200 px wide
    qtbot.waitUntil(lambda: window.arrangement.currentWidget() is window.bottom)
    ask(qtbot, window, "save a note to disk", "hybrid")
    code = window.code
    chunk = code.item.chunk
    lines = len((Path(window.workspace) / chunk.path).read_text().rstrip("\n").split("\n"))
    assert code.whole_file.isChecked() and code.shown_lines() == (1, lines)
    assert code.editor.marked == (chunk.start_line, chunk.end_line)  # the chunk stays marked in the file
    first_visible = code.editor.firstVisibleBlock().blockNumber() + 1
    assert first_visible <= chunk.start_line <= first_visible + 5  # scrolled to it
    assert code.height() > window.results.height()  # beside the rankings, not under them
    code.whole_file.click()
    qtbot.waitUntil(lambda: code.shown_lines() != (1, lines))
    assert code.shown_lines()[0] <= chunk.start_line and code.shown_lines()[1] >= chunk.end_line
    window.save_settings()
    assert window.settings.value("code/wholeFile") in (False, "false")

def test_each_arrangement_keeps_its_own_splits_across_resizes(qtbot, window):
    """1024 wide: the code below the rankings; 1440: beside them, as wide as the rankings' column; back and
    forth, each arrangement comes back as the user left it, and the health dock never takes the code's room."""
    window.resize(1440, 900)
    qtbot.waitUntil(lambda: window.arrangement.currentWidget() is window.bottom and min(window.bottom.sizes()) >= 600)
    column, code = window.bottom.sizes()
    window.bottom.setSizes([column + 40, code - 40])
    window.bottom.splitterMoved.emit(column + 40, 1)  # what dragging the handle signals
    chosen = window.bottom.sizes()
    for width, height in ((1024, 700), (1440, 900), (1024, 700), (1440, 900)):
        window.resize(width, height)
        qtbot.waitUntil(lambda: window.width() == width)
    qtbot.waitUntil(lambda: window.arrangement.currentWidget() is window.bottom and window.bottom.sizes() == chosen)
    assert window.code.width() > window.health_scroll.width()


@pytest.fixture
def themed(qapp):
    """The app's own look (its fonts, style and stylesheet), as `knowledge-explorer` starts it; undone after."""
    style, font, sheet = qapp.style().name(), qapp.font(), qapp.styleSheet()
    apply_theme(qapp)
    yield
    qapp.setStyleSheet(sheet)
    qapp.setFont(font)
    qapp.setStyle(style)


def test_the_health_panel_fits_its_pane_whatever_it_lists(qtbot, themed, window):
    """The health panel is never cut at the right edge (it was at 1440×900 with 9 skipped files: the list's
    title, in the app's bold font, set the panel's width): its long lines wrap, so the panel is no wider than
    the pane that shows it, in both arrangements."""
    window.resize(1440, 900)
    qtbot.waitUntil(lambda: window.health is not None and window.health.indexed)
    skipped = tuple(SkippedFile(f"doc/en/img/picture-with-a-long-name-{i}.png", "binary") for i in range(340))
    stale = tuple(StaleFile(f"src/package/module_{i}.py", "modified") for i in range(12))
    languages = {f"language{i}": 1000 + i for i in range(9)}
    window.health_panel.show_action.trigger()  # Ctrl+Shift+H: the health dock
    window.health_panel.set_health(replace(window.health, skipped=skipped, stale_files=stale, languages=languages,
                                           workspace="/home/someone/projects/" + "a-long-folder-name/" * 6))
    for width, height in ((1440, 900), (1024, 700)):
        window.resize(width, height)
        qtbot.waitUntil(lambda: window.width() == width)
        viewport, panel = window.health_scroll.viewport(), window.health_panel
        qtbot.waitUntil(lambda: panel.width() >= panel.minimumSizeHint().width())  # laid out at its new size
        assert panel.width() <= viewport.width(), (width, panel.width(), viewport.width())
        for control in (window.health_panel.badge, window.health_panel.files_title):
            right = control.mapTo(viewport, control.rect().topRight()).x()
            assert right <= viewport.width(), (width, control.objectName() or control.text(), right, viewport.width())
        dock = window.health_dock  # the buttons stay under the scrolling part, inside the dock
        right = panel.cancel_button.mapTo(dock, panel.cancel_button.rect().topRight()).x()
        assert right <= dock.width(), (width, right, dock.width())
