"""Render the index's states in the real window (docs/states/*.png, listed in docs/states.md).

    xvfb-run -a -s "-screen 0 1440x900x24" python docs/states.py [--out docs/states]

A copy of the sample workspace plus generated files (so a run lasts long enough to be seen) in a
scratch folder, a scratch data dir and settings file: the user's own index and window are left alone.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def wait_for(condition, timeout: float = 600.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the window did not reach the expected state")
        await asyncio.sleep(0.05)


def grow(workspace: Path, files: int) -> None:
    extra = workspace / "generated"
    extra.mkdir()
    for n in range(files):
        (extra / f"stage_{n}.py").write_text("\n\n".join(
            f"def step_{n}_{k}(value):\n    \"\"\"Step {k} of stage {n}: scale the note count.\"\"\"\n"
            f"    return value * {k} + {n}\n" for k in range(8)))


async def scenes(app, window, scratch: Path, out: Path) -> None:
    from PySide6.QtWidgets import QApplication

    async def shot(name: str, screen: bool = False) -> None:
        await asyncio.sleep(0.3)
        app.processEvents()
        image = QApplication.primaryScreen().grabWindow(0) if screen else window.grab()
        image.save(str(out / name))
        print(f"saved {out / name}")

    out.mkdir(parents=True, exist_ok=True)
    await shot("first-window-1440x900-screen.png", screen=True)  # the whole screen: the status bar is on it

    empty = scratch / "empty"
    empty.mkdir()
    await window.open_workspace(str(empty))
    await window.start_index(False)
    await wait_for(lambda: window.health is not None and window.health.state == "empty")
    await shot("empty.png")

    workspace = scratch / "sample"
    shutil.copytree(ROOT / "tests" / "sample_workspace", workspace)
    grow(workspace, 90)
    await window.open_workspace(str(workspace))
    window.start_index(False)
    await wait_for(lambda: any(e.phase == "embedding" and e.files_done for e in window.progress_events))
    await shot("indexing.png")
    window.cancel_index()
    await shot("cancelling.png")
    await wait_for(lambda: not window.runner.is_running("index"))
    await wait_for(lambda: window.health is not None and window.health.state == "interrupted")
    await shot("interrupted.png")

    await window.open_workspace(str(workspace))  # opened again: the catch-up run resumes the first index
    await wait_for(lambda: window.health_panel.running == "auto" and "Embedding" in window.index_status.text())
    window.run_query("scale the note count")
    await wait_for(lambda: window.last_result is not None)
    await shot("resuming-partial-results.png")
    await wait_for(lambda: window.health_panel.running == "" and window.health.state == "ready")
    await shot("ready.png")

    moved = scratch / "renamed"
    workspace.rename(moved)
    await wait_for(lambda: window.health is not None and window.health.state == "folder-missing", 60)
    await shot("folder-missing.png")
    with (moved / "generated" / "stage_0.py").open("a") as handle:
        handle.write("\n# one more line\n")
    moved.rename(workspace)
    await wait_for(lambda: window.health.state == "ready" and window.health_panel.running == ""
                   and "1 updated, 0 removed" in window.health_panel.progress_label.text(), 300)
    await shot("folder-back.png")


def main() -> int:
    from app.gui import run_scenes
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "states"))
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ke-states-"))
    try:  # no size: its first size, fitted to the screen
        return run_scenes(lambda app, window: scenes(app, window, scratch, Path(args.out)),
                          LocalEngine(data_dir=scratch / "data"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
