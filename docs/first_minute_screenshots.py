"""The window during a first index's step 2 (issue #51): names, files and references answer while the vectors
are being made, the health panel counts them, the title and the bar show the whole run's share.

    QT_QPA_PLATFORM=offscreen python docs/first_minute_screenshots.py [--workspace DIR] [--out docs]

A fresh data dir; step 2 is held at its first encoder call (a gate, as in tests/ui/test_first_minute_window.py)
while the pictures are taken, then released.
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


async def scenes(app, window, workspace: str, out: Path, held: threading.Event, release: threading.Event) -> None:
    def shot(name: str) -> None:
        window.grab().save(str(out / name))
        print(f"saved {out / name}")

    try:
        await window.open_workspace(workspace)
        window.start_index(False)
        await wait_for(held.is_set, 600)
        await wait_for(lambda: window.health_panel.values["Files"].text() not in ("—", "0"), 60)
        await settle(app, 1.0)
        shot("first-minute-step-2.png")
        window.query_bar.query.setText("save a note to the store")
        window.run_query()
        await wait_for(lambda: not window.runner.is_running("query"), 120)
        await settle(app, 0.5)
        shot("first-minute-answer.png")
    finally:
        release.set()  # before the window and the engine shut down
    await wait_for(lambda: window.health_panel.badge.text() == "up to date", 600)


def main() -> int:
    from app.gui import run_scenes
    from services.encoders.embedder import Embedder
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default=str(ROOT / "tests" / "sample_workspace"))
    parser.add_argument("--out", default=str(ROOT / "docs"))
    args = parser.parse_args()
    held, release = threading.Event(), threading.Event()
    encode = Embedder.encode_chunks

    def gated(self, chunks):
        held.set()
        release.wait(600)
        return encode(self, chunks)

    Embedder.encode_chunks = gated  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="ke-docs-") as scratch:
        return run_scenes(lambda app, window: scenes(app, window, args.workspace, Path(args.out), held, release),
                          LocalEngine(data_dir=Path(scratch) / "data"), (1440, 900))


if __name__ == "__main__":
    sys.exit(main())
