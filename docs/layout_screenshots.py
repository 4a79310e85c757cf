"""Regenerate the pictures in docs/layout/ (the window at small sizes, the why panel, the Compare tab).

    xvfb-run -a python docs/layout_screenshots.py [--data-dir DIR] [--out docs/layout]

Runs the real window on an in-process LocalEngine over the sample workspace (indexed if
needed), with a throwaway settings file; see docs/layout.md for what each picture shows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs.screenshots import settle, wait_for  # noqa: E402

TRACEBACK = '''SearchEngine.score crashes when a note has no tags

Searching for anything after adding an untagged note fails:

Traceback (most recent call last):
  File "/home/me/app/notes/search.py", line 47, in score
    hits = sum(1 for k in keywords if k in note.tags)
TypeError: 'NoneType' object is not iterable
'''


async def ask(app, window, question: str, strategy: str) -> None:
    window.query_bar.select_strategy(strategy)
    before = window.last_result
    window.run_query(question)
    await wait_for(lambda: window.last_result is not before and window.last_result.strategy == strategy)
    window.results.select_first()
    await settle(app, 0.5)


async def scenes(app, window, workspace: str, out: Path, only: str) -> None:
    from app.gui import take_screenshot

    def shot(name: str, widget=None) -> None:
        if only and only not in name:
            return
        path = out / name
        (widget or window).grab().save(str(path))
        print(f"saved {path}")

    warm = Path(tempfile.mkdtemp(prefix="ke-warm-")) / "warm.png"
    await take_screenshot(window, workspace, str(warm), "where are notes deleted", "hybrid")

    window.resize(1024, 700)
    await ask(app, window, "save a note to disk", "hybrid")
    shot("1024x700-hybrid.png")
    await ask(app, window, TRACEBACK, "bug-report")
    shot("1024x700-bug-report-traceback.png")
    await ask(app, window, "what layers does the application have", "none")
    shot("1024x700-text-chunks.png")
    await ask(app, window, "save a note to disk", "tuned")
    shot("1024x700-tuned-fallback.png")

    window.resize(window.minimumSize())
    await ask(app, window, "save a note to disk", "rrf")
    shot("minimum-size-rrf.png")

    if window.compare_view is not None and (not only or "compare" in only):
        window.resize(1024, 700)
        window.show_tab(window.compare_view)
        await compare_scene(app, window, out, shot)


async def compare_scene(app, window, out: Path, shot) -> None:
    import json

    from tests.test_adapter import LABELS

    view = window.compare_view
    view.question.setText("save a note to disk")
    task = view.run_question()
    await wait_for(task.done, 300)
    await settle(app, 0.5)
    shot("compare-rankings.png")
    queries = Path(tempfile.mkdtemp(prefix="ke-queries-")) / "sample-questions.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": text, "relevant": [{"path": path}]}) + "\n"
                               for i, (text, path) in enumerate(LABELS)))
    view.load_query_set(queries)
    computing = []
    view.stage_changed.connect(lambda stage: computing.append(stage) if stage == "computing" else None)
    task = view.run_query_set()
    await wait_for(lambda: computing or task.done(), 600)
    app.processEvents()
    shot("compare-computing.png")
    await wait_for(task.done, 600)
    await settle(app, 0.5)
    shot("compare-metrics.png")
    view.tabs.setCurrentWidget(view.report_panel.per_query)
    await settle(app, 0.3)
    shot("compare-per-query.png")


def main() -> int:
    from app.gui import run_scenes
    from services.engine.service import LocalEngine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--workspace", default=str(ROOT / "tests" / "sample_workspace"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "layout"))
    parser.add_argument("--only", default="", help="save only pictures whose name contains this")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return run_scenes(lambda app, window: scenes(app, window, args.workspace, out, args.only),
                      LocalEngine(data_dir=args.data_dir), (1024, 700))


if __name__ == "__main__":
    sys.exit(main())
