"""Regenerate the pictures in docs/ (the main states of the window) on the sample workspace.

    xvfb-run -a python docs/screenshots.py [--data-dir DIR] [--out docs]

Runs the real window on an in-process LocalEngine (indexing the workspace if needed), with
a throwaway settings file so the user's own window state is left alone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def settle(app, seconds: float = 0.3) -> None:
    await asyncio.sleep(seconds)
    app.processEvents()


async def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the window did not reach the expected state")
        await asyncio.sleep(0.05)


async def scenes(app, window, workspace: str, out: Path) -> None:
    from app.gui import take_screenshot

    def shot(name: str) -> None:
        path = out / name
        window.grab().save(str(path))
        print(f"saved {path}")

    warm = Path(tempfile.mkdtemp(prefix="ke-warm-")) / "warm.png"  # the first query pays for warming up
    await take_screenshot(window, workspace, str(warm), "where are notes deleted", "hybrid")
    await take_screenshot(window, workspace, str(out / "screenshot.png"), "save a note to disk", "hybrid")

    before_files = window.files_view.answer
    window.show_tab(window.files_view)  # the same question answered as ranked files
    await wait_for(lambda: window.files_view.answer is not None and window.files_view.answer is not before_files)
    await settle(app)
    shot("files.png")
    window.show_tab(window.explore)
    window.palette.open()
    window.palette.filter.setText("")
    await settle(app)
    shot("palette.png")
    window.palette.hide()
    await goto_scenes(app, window, out)

    before = window.last_result
    window.query_bar.set_filters(["java"], "swift/*")
    window.run_query("save a note to disk")
    await wait_for(lambda: window.last_result is not before)
    await settle(app)
    shot("empty-answer.png")
    window.query_bar.clear_filters()
    await wait_for(lambda: bool(window.last_result.results))

    window.request_index(True)
    await settle(app)
    shot("confirm-rebuild.png")
    window.messages.hide()

    window.resize(window.minimumSizeHint().expandedTo(window.minimumSize()))
    await settle(app, 0.5)
    shot("minimum-size.png")


async def only_goto(app, window, workspace: str, out: Path) -> None:
    from app.gui import take_screenshot

    await take_screenshot(window, workspace, str(Path(tempfile.mkdtemp(prefix="ke-warm-")) / "warm.png"),
                          "save a note to disk", "hybrid")  # opens (and indexes) the workspace
    await goto_scenes(app, window, out)


async def goto_scenes(app, window, out: Path) -> None:
    """The go to symbol (Ctrl+T) and go to file (Ctrl+P) finder, over an open, indexed workspace."""
    from ui.goto_dialog import FILES, SYMBOLS

    finder = window.finder
    for target, text, name in ((SYMBOLS, "store", "goto-symbol.png"), (FILES, "store.py:40", "goto-file.png")):
        finder.open(target)
        finder.filter.setText(text)
        await wait_for(lambda: finder.model.answer is not None and finder.model.answer.query == text
                       and finder.previewed is not None)
        await settle(app)
        window.grab().save(str(out / name))
        print(f"saved {out / name}")
        finder.hide()


def main() -> int:
    from app.gui import run_scenes
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--workspace", default=str(ROOT / "tests" / "sample_workspace"))
    parser.add_argument("--out", default=str(ROOT / "docs"))
    parser.add_argument("--only-goto", action="store_true", help="only the go to finder's pictures")
    args = parser.parse_args()
    chosen = only_goto if args.only_goto else scenes
    return run_scenes(lambda app, window: chosen(app, window, args.workspace, Path(args.out)),
                      LocalEngine(data_dir=args.data_dir), (1440, 900))


if __name__ == "__main__":
    sys.exit(main())
