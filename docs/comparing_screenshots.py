"""Pictures of the window as a place to compare rankings and read code (issue 52): the two rankings beside
the code pane at 1280×800 and 1440×900, below it at 1024×700, every row's whole name readable; then, at
1280×800, reading: the call tree expanded (reading-call-tree.png) and a peek at a definition with the
breadcrumbs above the pane (reading-peek.png).

    python docs/comparing_screenshots.py --data-dir DIR --workspace /path/to/pytest [--out docs]

The workspace must be indexed in DIR already (`knowledge-explorer --data-dir DIR index PATH`). A throwaway
settings file keeps the user's own window state alone. Prints each ranking row as painted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.screenshots import settle, wait_for  # noqa: E402

QUESTION = "where are fixture definitions parsed from a plugin"
SIZES = ((1024, 700), (1280, 800), (1440, 900))


async def scenes(app, window, workspace: str, out: Path, question: str) -> None:
    from ui.results_view import row_lines

    await wait_for(lambda: window.strategies_loaded.done())
    await window.open_workspace(workspace)
    for width, height in SIZES:
        window.resize(width, height)
        before = window.last_result
        window.query_bar.select_strategy("hybrid")
        window.run_query(question)
        await wait_for(lambda: window.last_result is not before)
        window.results.select_first()
        await settle(app, 1.0)
        print(f"{width}×{height}:")
        for table in (window.results.original_table, window.results.reranked_table):
            print("   ", [" | ".join(row_lines(table, row)) for row in range(table.model().rowCount())])
        name = out / f"comparing-{width}x{height}.png"
        window.grab().save(str(name))
        print(f"saved {name}")
    await reading(app, window, out)


async def reading(app, window, out: Path) -> None:
    """The call tree's first expandable row of Used by expanded; a peek at the first name the code pane
    resolves, its breadcrumbs above."""
    from PySide6.QtGui import QTextCursor

    window.resize(1280, 800)
    tree = window.graph.lists["references"]
    window.graph.show_list("references")
    await wait_for(lambda: tree.topLevelItemCount() > 0)
    rows = [tree.topLevelItem(n).child(c) for n in range(tree.topLevelItemCount())
            for c in range(tree.topLevelItem(n).childCount())]
    row = next((r for r in rows if r.childIndicatorPolicy().name == "ShowIndicator"), None)
    if row is not None:
        row.setExpanded(True)
        await wait_for(lambda: row.childCount() > 0 and "Loading" not in row.child(0).text(0))
    await settle(app, 1.0)
    window.grab().save(str(out / "reading-call-tree.png"))
    code = window.code
    for word in ("self.", "("):
        found = code.editor.document().find(word, code.editor.textCursor())
        if not found.isNull():
            cursor = QTextCursor(found)
            cursor.setPosition(found.selectionStart() + 5 if word == "self." else max(found.selectionStart() - 1, 0))
            code.editor.setTextCursor(cursor)
            code.request_peek()
            try:
                await wait_for(code.peek.isVisible, timeout=20)
                break
            except TimeoutError:
                continue
    await settle(app, 1.0)
    window.grab().save(str(out / "reading-peek.png"))
    print("saved reading-call-tree.png, reading-peek.png;", "breadcrumbs:", code.breadcrumb_texts())


def main() -> int:
    from app.gui import run_scenes
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--out", default=str(ROOT / "docs"))
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    return run_scenes(lambda app, window: scenes(app, window, args.workspace, Path(args.out), args.question),
                      LocalEngine(data_dir=args.data_dir))


if __name__ == "__main__":
    sys.exit(main())
