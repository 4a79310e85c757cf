"""The window during a first index (issue #51): in step 1, go to symbol says how many files it does not see yet;
in step 2, names, files and references answer while the vectors are being made, the health panel counts them, the
title and the bar show the whole run's share.

    QT_QPA_PLATFORM=offscreen python docs/first_minute_screenshots.py [--workspace DIR] [--out docs]

A fresh data dir; step 1 is held after its first commit (as in tests/test_first_minute.py), then step 2 at its first
encoder call (a gate, as in tests/ui/test_first_minute_window.py), while the pictures are taken, then released.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.screenshots import settle, wait_for  # noqa: E402


async def scenes(app, window, workspace: str, out: Path, gates: dict[str, threading.Event]) -> None:
    committed, go_on, held, release = (gates[name] for name in ("committed", "go_on", "held", "release"))
    from ui.goto_dialog import SYMBOLS

    def shot(name: str) -> None:
        window.grab().save(str(out / name))
        print(f"saved {out / name}")

    try:
        await window.open_workspace(workspace)
        window.start_index(False)
        await wait_for(committed.is_set, 600)
        finder = window.finder
        finder.open(SYMBOLS)
        finder.filter.setText("NoteStore")
        await wait_for(lambda: finder.model.answer is not None and finder.model.answer.query == "NoteStore", 60)
        await settle(app, 0.5)
        shot("first-minute-step-1.png")
        finder.hide()
        go_on.set()  # step 1 goes on
        await wait_for(held.is_set, 600)
        window.health_panel.show_action.setChecked(True)  # Index health (Ctrl+Shift+H): hidden by default
        await wait_for(lambda: window.health_panel.values["Files"].text() not in ("—", "0"), 60)
        await settle(app, 1.0)
        shot("first-minute-step-2.png")
        window.query_bar.query.setText("save a note to the store")
        window.run_query()
        await wait_for(lambda: not window.runner.is_running("query"), 120)
        await settle(app, 0.5)
        shot("first-minute-answer.png")
    finally:
        go_on.set()
        release.set()  # before the window and the engine shut down
    await wait_for(lambda: window.health_panel.badge.text() == "up to date", 600)


def main() -> int:
    from app.gui import run_scenes
    from services.encoders.embedder import Embedder
    from services.engine.service import LocalEngine
    from services.storage.catalog import Catalog

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=str(ROOT / "tests" / "sample_workspace"))
    parser.add_argument("--out", default=str(ROOT / "docs"))
    args = parser.parse_args()
    gates = {name: threading.Event() for name in ("committed", "go_on", "held", "release")}
    committed, go_on, held, release = (gates[name] for name in ("committed", "go_on", "held", "release"))
    encode, commit = Embedder.encode_chunks, Catalog.commit_file

    def step_1_held(self, *args, **kwargs):
        if committed.is_set():  # the next file waits until the picture is taken
            go_on.wait(600)
        result = commit(self, *args, **kwargs)
        committed.set()
        return result

    def gated(self, chunks):
        held.set()
        release.wait(600)
        return encode(self, chunks)

    Embedder.encode_chunks = gated  # type: ignore[method-assign]
    Catalog.commit_file = step_1_held  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="ke-docs-") as scratch:
        return run_scenes(lambda app, window: scenes(app, window, args.workspace, Path(args.out), gates),
                          LocalEngine(data_dir=Path(scratch) / "data"), (1440, 900))


if __name__ == "__main__":
    sys.exit(main())
