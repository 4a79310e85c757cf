"""Pictures of the window as a developer uses it every few minutes, on a real repository (issue 32):
reading code at 1440×900 and 1024×700 (issue 40), 1024×700 with a run's status in the status bar,
middle-elided qualified names, the chunk with its context, the health panel under a banner, a result's
"Used by" list, a pasted traceback answered as files by the default.

    xvfb-run -a python docs/daily_screenshots.py --data-dir DIR --workspace /path/to/pytest [--out docs]

The workspace must be indexed in DIR already (`knowledge-explorer --data-dir DIR index PATH`). A throwaway
settings file keeps the user's own window state alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.screenshots import settle, wait_for  # noqa: E402

QUESTION = "FixtureManager parsefactories"
SITE = "/usr/local/lib/python3.8/site-packages"
REPORT = f"""INTERNALERROR when exception in __repr__

```
INTERNALERROR> Traceback (most recent call last):
INTERNALERROR>   File "{SITE}/_pytest/main.py", line 191, in wrap_session
INTERNALERROR>   File "{SITE}/_pytest/reports.py", line 285, in from_item_and_call
INTERNALERROR>   File "{SITE}/_pytest/_code/code.py", line 693, in repr_args
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 82, in saferepr
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 51, in repr
INTERNALERROR>   File "/usr/local/lib/python3.8/reprlib.py", line 52, in repr
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 56, in repr_instance
INTERNALERROR> RuntimeError: No active exception to reraise
```
"""  # pytest-dev/pytest#7168, shortened


async def scenes(app, window, workspace: str, out: Path, only: set[str]) -> None:
    from services.core.models import ProgressEvent

    def shot(name: str) -> None:
        if not only or name in only:
            window.grab().save(str(out / name))
            print(f"saved {out / name}")

    await wait_for(lambda: window.strategies_loaded.done())
    await window.open_workspace(workspace)
    await reading(app, window, shot)
    window.resize(1024, 700)
    before = window.last_result
    window.query_bar.select_strategy("hybrid")
    window.run_query(QUESTION)
    await wait_for(lambda: window.last_result is not before)
    await settle(app, 0.5)
    await used_by(app, window, "FixtureManager")
    shot("daily-used-by.png")
    window.code.whole_file.setChecked(False)  # the chunk with its context
    await settle(app, 0.5)
    shot("daily-whole-file.png")
    # a run's status as an automatic run reports it, beside the result text and the timings
    window.health_panel.auto_started()
    window._on_progress(ProgressEvent("embedding", 120, 166, 2100, 4300, 48.0, 151.0, "torch on cpu, fp32, batch 32",
                                      index_done=8275, index_total=10436))
    await settle(app)
    shot("daily-1024x700.png")
    window._show_run_status("", None)
    window.health_panel.auto_finished()
    # a banner beside the health panel's buttons, never over them
    window.health_scroll.ensureWidgetVisible(window.health_panel.auto_reindex)
    window.messages.show_message("Automatic indexing paused — 166 files changed. Changes are listed as stale "
                                 "until you resume.", "info", action_text="Resume", action=lambda: None)
    await settle(app, 0.5)
    shot("daily-banner.png")
    window.messages.hide()
    # the result menu: copy path:line, reveal in folder, more hits in this file
    from PySide6.QtWidgets import QMenu

    table = window.results.reranked_table
    menu = QMenu(window)
    menu.addActions(window.results.row_actions(table, 0))
    menu.popup(table.viewport().mapToGlobal(table.visualRect(table.model().index(0, 2)).center()))
    await settle(app, 0.3)
    if not only or "daily-result-menu.png" in only:
        menu.grab().save(str(out / "daily-result-menu.png"))
        print(f"saved {out / 'daily-result-menu.png'}")
    menu.hide()
    # the one question box on the Files tab, answered as files
    before = window.files_view.answer
    window.show_tab(window.files_view)
    await wait_for(lambda: window.files_view.answer is not None and window.files_view.answer is not before)
    await settle(app, 0.5)
    shot("daily-files-question.png")
    # a pasted traceback answered by the default, auto: files fused from bug-report's and metadata's rankings
    window.resize(1440, 900)
    before = window.files_view.answer
    window.query_bar.select_strategy("auto")
    window.run_query(REPORT)
    await wait_for(lambda: window.files_view.answer is not None and window.files_view.answer is not before)
    window.files_view.table.selectRow(0)
    await settle(app, 0.5)
    shot("daily-files-report.png")


async def reading(app, window, shot) -> None:
    """Reading code at 1440×900 (the code pane beside the rankings, the whole height) and at 1024×700 (below
    them, the whole width): a go to symbol, then a use of it opened; prints the lines and columns shown."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    for (width, height), name in (((1440, 900), "reading-1440x900.png"), ((1024, 700), "reading-1024x700.png")):
        window.resize(width, height)
        before = window.last_result
        window.query_bar.select_strategy("hybrid")
        window.run_query("where are fixture definitions parsed from a plugin")
        await wait_for(lambda: window.last_result is not before)
        window.finder.symbol_action.trigger()  # Ctrl+T (no window manager here to give the window the keys)
        QTest.keyClicks(window.finder.filter, "FixtureManager.parsefactories")
        finder = window.finder
        await wait_for(lambda: finder.model.answer is not None and not finder.runner.is_running("goto")
                       and finder.list.count() > 0)
        QTest.keyClick(finder.filter, Qt.Key.Key_Return)
        await wait_for(lambda: window.code.item is not None
                       and window.code.item.chunk.qualified_name == "FixtureManager.parsefactories")
        await settle(app, 1.0)
        editor = window.code.editor
        lines = editor.viewport().height() // editor.fontMetrics().lineSpacing()
        columns = editor.viewport().width() // editor.fontMetrics().horizontalAdvance("x")
        print(f"{width}×{height}: the code pane shows {lines} lines of {columns} columns")
        shot(name)


async def used_by(app, window, qualified_name: str) -> None:
    """Select the result `qualified_name` and bring its "Used by" list forward (Alt+F7): code uses first,
    then the name's mentions in docstrings, comments and strings."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from ui.viewmodels.graph import USED_BY

    table = window.results.reranked_table
    rows = [r for r in range(table.model().rowCount()) if table.model().item(r).chunk.qualified_name == qualified_name]
    table.selectRow(rows[0])
    model = window.graph.model
    await wait_for(lambda: model.subject is not None and model.answers[USED_BY] is not None
                   and not window.graph.runner.is_running("graph"))
    QTest.keyClick(window, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
    await settle(app, 0.5)


def main() -> int:
    from app.gui import run_scenes
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--out", default=str(ROOT / "docs"))
    parser.add_argument("--only", nargs="*", default=[], help="only these pictures (file names)")
    args = parser.parse_args()
    return run_scenes(lambda app, window: scenes(app, window, args.workspace, Path(args.out), set(args.only)),
                      LocalEngine(data_dir=args.data_dir))


if __name__ == "__main__":
    sys.exit(main())
