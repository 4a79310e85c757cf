"""Can the window be left open all day? The real window, under Xvfb, driven by keys for --minutes as a
user reads code: questions, strategy cycling (Ctrl+]), go to symbol / file (Ctrl+T / Ctrl+P, typed key by
key), Used by / Uses (Alt+F7 / Ctrl+Alt+H) and their call trees (a row expanded), Back / Forward (Alt+Left / Alt+Right), scrolling the code
pane, resizing, an edit in the workspace (watched and re-indexed), and a reindex (F5).

It measures what a user would notice: the app stays up, the event loop's longest block (a 50 ms timer's
gaps; goal: never over 1 s), the memory of the window's process and of the engine process over time (goal:
it stops growing), and the reference counts of None / True / False (a Qt binding leaking them aborts
the process). A screenshot of the end state is saved beside the figures.

    xvfb-run -a -s "-screen 0 1440x900x24" python benchmarks/soak.py WORKSPACE --data-dir DIR [--minutes 30]

(openbox, when installed, is started on the display so the window is active and takes shortcuts.)

WORKSPACE: the pytest snapshot (a clone of ../shared/benchmarks/swe/pytest/history.bundle, branch
`snapshot`); the edit is made and undone in one of its files.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil  # noqa: E402
import qasync  # noqa: E402
from PySide6.QtCore import QPoint, QRegularExpression, QSettings, Qt, QTimer  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.gui import prefer_gui_thread  # noqa: E402
from benchmarks.lib import record  # noqa: E402
from services.transport.engine_process import EngineProcess  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.theme import apply_theme  # noqa: E402
from ui.graph_view import LOADING, LinkRole, RowRole  # noqa: E402
from ui.viewmodels.graph import USED_BY, USES, CallRow  # noqa: E402

QUESTIONS = ["where are fixtures finalized", "how does pytest rewrite assert statements",
             "capture stdout of a test", "parametrize ids for a test function", "skip a test on a condition",
             "INTERNALERROR in __repr__ of an object raising an exception", "junit xml report properties",
             "how are conftest files collected", "monkeypatch setattr undo", "tmp_path factory base temp"]
SYMBOLS = ["FixtureManager", "LineMatcher", "saferepr", "Session.perform_collect", "Config.getini",
           "MonkeyPatch", "approx", "CaptureManager", "TerminalReporter", "Node.from_parent"]
FILES = ["saferepr.py", "python.py:120", "fixtures.py", "nodes.py", "terminal.py:300", "main.py"]
EDITED = "src/_pytest/pathlib.py"  # a comment appended, then taken away again
TICK_MS = 50
BLOCK_S = 1.0


class Heartbeat:
    """The event loop's blocks: the gaps between a 50 ms timer's ticks."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.last = time.perf_counter()
        self.longest = 0.0
        self.blocks: list[tuple[float, str]] = []  # (seconds, the step under way) over BLOCK_S
        self.step = "start"

    def _tick(self) -> None:
        now = time.perf_counter()
        gap = now - self.last - TICK_MS / 1000
        self.last = now
        self.longest = max(self.longest, gap)
        if gap > BLOCK_S:
            self.blocks.append((round(gap, 2), self.step))


async def until(condition, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


class Driver:
    def __init__(self, window: MainWindow, workspace: Path, beat: Heartbeat) -> None:
        self.window, self.workspace, self.beat = window, workspace, beat
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.failures: list[str] = []
        self.began = time.perf_counter()

    def done(self, step: str, ok: bool = True) -> None:
        """A step is over (`ok`: what it waited for came); its count and its time (since the last step's end)."""
        now = time.perf_counter()
        self.seconds[step] = round(self.seconds.get(step, 0.0) + now - self.began, 2)
        self.began = now
        self.counts[step] = self.counts.get(step, 0) + 1
        if not ok:
            self.failures.append(f"{time.strftime('%H:%M:%S')} {step}")

    def key(self, widget, key, modifiers=Qt.KeyboardModifier.NoModifier) -> None:
        QTest.keyClick(widget, key, modifiers)

    async def ask(self, question: str) -> None:
        self.beat.step = "question"
        bar = self.window.query_bar.query
        bar.setFocus()
        bar.selectAll()
        QTest.keyClicks(bar, question)
        self.key(bar, Qt.Key.Key_Return)
        w = self.window
        self.done("question", await until(lambda: w.last_result is not None and w.last_result.question == question
                                          and not w.runner.is_running("query")))

    async def next_strategy(self) -> None:
        self.beat.step = "strategy"
        before = self.window.query_bar.strategy_name()
        self.key(self.window, Qt.Key.Key_BracketRight, Qt.KeyboardModifier.ControlModifier)
        w = self.window
        self.done("strategy", await until(lambda: w.query_bar.strategy_name() != before
                                          and not w.runner.is_running("query")))

    async def go_to(self, target_key, text: str) -> None:
        self.beat.step = "go to"
        w, finder = self.window, self.window.finder
        self.key(w, target_key, Qt.KeyboardModifier.ControlModifier)
        QTest.keyClicks(finder.filter, text)
        answered = await until(lambda: finder.model.answer is not None and finder.model.answer.query == text
                               and not finder.runner.is_running("goto"), 30)
        if answered and finder.list.count():
            shown = w.code.item
            self.key(finder.filter, Qt.Key.Key_Return)
            answered = await until(lambda: w.code.item is not shown, 30)
        else:
            self.key(finder.filter, Qt.Key.Key_Escape)
        self.done("go to" if target_key == Qt.Key.Key_T else "go to file", answered)

    async def graph(self) -> None:
        self.beat.step = "used by / uses"
        w = self.window
        ready = await until(lambda: not w.graph.runner.is_running("graph"), 60)
        self.key(w, Qt.Key.Key_F7, Qt.KeyboardModifier.AltModifier)
        tree = w.graph.lists[USED_BY]
        if ready and tree.currentItem() is not None:
            self.key(tree, Qt.Key.Key_Return)  # open a use
        self.key(w, Qt.Key.Key_H, Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.ControlModifier)
        self.done("used by / uses", ready and w.graph.tabs.currentWidget() is w.graph.lists[USES])

    async def call_tree(self) -> None:
        """Used by and Uses as call trees (issue 52): the first row that expands, in each, expanded with Right
        (its callers / callees asked of the engine), then Enter on its first child."""
        self.beat.step = "call tree"
        w = self.window
        ok = await until(lambda: not w.graph.runner.is_running("graph"), 60)
        for direction in (USED_BY, USES):
            w.graph.show_list(direction)
            tree = w.graph.lists[direction]
            row = next((r for r in expandable_rows(tree)), None)
            if row is None:
                continue
            tree.setCurrentItem(row)
            self.key(tree, Qt.Key.Key_Right)
            ok = ok and await until(lambda: row.childCount() and row.child(0).text(0) != LOADING, 60)
            if ok and row.child(0).data(0, LinkRole) is not None:
                tree.setCurrentItem(row.child(0))
                self.key(tree, Qt.Key.Key_Return)
        self.done("call tree", bool(ok))

    async def walk(self) -> None:
        self.beat.step = "back / forward"
        for key in (Qt.Key.Key_Left, Qt.Key.Key_Left, Qt.Key.Key_Right):
            self.key(self.window, key, Qt.KeyboardModifier.AltModifier)
            await asyncio.sleep(0.05)
        self.done("back / forward")

    async def scroll(self) -> None:
        self.beat.step = "scrolling"
        editor = self.window.code.editor
        editor.setFocus()
        for key in [Qt.Key.Key_PageDown] * 8 + [Qt.Key.Key_PageUp] * 4 + [Qt.Key.Key_End, Qt.Key.Key_Home]:
            self.key(editor, key, Qt.KeyboardModifier.ControlModifier if key in (Qt.Key.Key_End, Qt.Key.Key_Home)
                     else Qt.KeyboardModifier.NoModifier)
            await asyncio.sleep(0.03)
        self.done("scrolling")

    async def read(self) -> None:
        """The code pane as an editor (issue 52): Alt+F12 (peek), Escape, then F12 on a capitalised name in view, Ctrl+F and Enter, Ctrl+F12
        and Enter on the outline's first chunk."""
        self.beat.step = "read"
        w, code = self.window, self.window.code
        editor = code.editor
        editor.setFocus()
        top = editor.cursorForPosition(QPoint(0, 0))
        found = editor.document().find(QRegularExpression(r"\b[A-Z][A-Za-z0-9_]{3,}\b"), top)
        defined = True
        if not found.isNull():
            found.setPosition(found.selectionStart())
            editor.setTextCursor(found)
            self.key(editor, Qt.Key.Key_F12, Qt.KeyboardModifier.AltModifier)  # peek first, Escape leaves it
            peeked = await until(lambda: not w.runner.is_running("peek"), 30)
            if code.peek.isVisible():
                self.key(code.peek.code, Qt.Key.Key_Escape)
            self.key(editor, Qt.Key.Key_F12)
            defined = peeked and await until(lambda: not w.runner.is_running("definition"), 30)
        self.key(code.editor, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        QTest.keyClicks(code.find_bar.text, "self")
        self.key(code.find_bar.text, Qt.Key.Key_Return)
        self.key(code.find_bar.text, Qt.Key.Key_Escape)
        self.key(code.editor, Qt.Key.Key_F12, Qt.KeyboardModifier.ControlModifier)
        outlined = await until(lambda: not w.runner.is_running("outline"), 30)
        if w.outline.isVisible():
            self.key(w.outline.filter, Qt.Key.Key_Return)
        self.done("read", defined and outlined)

    async def resize(self, size: tuple[int, int]) -> None:
        self.beat.step = "resize"
        self.window.resize(*size)
        await asyncio.sleep(0.2)
        self.done("resize")

    async def edit(self, undo: bool) -> None:
        """A line appended to a file, or taken away again: the watcher sees it and the index follows."""
        self.beat.step = "edit"
        path = self.workspace / EDITED
        text = path.read_text(encoding="utf-8")
        marker = "# soak: an edit made while the window is open\n"
        path.write_text(text.replace(marker, "") if undo else text + marker, encoding="utf-8")
        self.done("edit")

    async def reindex(self) -> None:
        self.beat.step = "reindex"
        w = self.window
        await until(lambda: not w.health_panel.running, 300)
        self.key(w, Qt.Key.Key_F5)
        started = await until(lambda: bool(w.health_panel.running), 30)
        self.done("reindex", started and await until(lambda: not w.health_panel.running, 600))


def expandable_rows(tree):
    """The rows of a call tree not expanded yet that can be (their children asked when expanded)."""
    for top in range(tree.topLevelItemCount()):
        heading = tree.topLevelItem(top)
        for index in range(heading.childCount()):
            row = heading.child(index)
            if isinstance(row.data(0, RowRole), CallRow):
                yield row


def memory(process: psutil.Process) -> dict[str, float]:
    """RSS in MiB of the window's process and of its children (the engine process)."""
    children = process.children(recursive=True)
    return {"window_mib": round(process.memory_info().rss / 2**20, 1),
            "engine_mib": round(sum(c.memory_info().rss for c in children if c.is_running()) / 2**20, 1)}


async def soak(window: MainWindow, workspace: Path, minutes: float, screenshot: Path, beat: Heartbeat) -> dict:
    process = psutil.Process()
    window.activateWindow()
    if not await until(window.isActiveWindow, 10):
        print("warning: the window is not active: shortcuts may not reach it (is a window manager running?)")
    health = await window.open_workspace(str(workspace))
    if not health.indexed or health.needs_reindex or health.stale_files:
        task = window.start_index(full=health.needs_reindex)
        if task is not None:
            await task
    await asyncio.wait([window.strategies_loaded])
    driver = Driver(window, workspace, beat)
    started = time.monotonic()
    samples: list[dict] = []
    cycle = 0
    while time.monotonic() - started < minutes * 60:
        await driver.ask(QUESTIONS[cycle % len(QUESTIONS)])
        await driver.next_strategy()
        await driver.go_to(Qt.Key.Key_T, SYMBOLS[cycle % len(SYMBOLS)])
        await driver.graph()
        await driver.call_tree()
        await driver.go_to(Qt.Key.Key_P, FILES[cycle % len(FILES)])
        await driver.scroll()
        await driver.read()
        await driver.walk()
        if cycle % 4 == 3:
            await driver.resize((1024, 700) if cycle % 8 == 3 else (1440, 900))
        if cycle % 10 == 5:
            await driver.edit(undo=cycle % 20 == 15)
        if cycle % 25 == 24:
            await driver.reindex()
        gc.collect()
        samples.append({"minute": round((time.monotonic() - started) / 60, 2), **memory(process),
                        "none_refs": sys.getrefcount(None)})
        cycle += 1
    await driver.edit(undo=True)
    window.resize(1440, 900)
    await asyncio.sleep(0.5)
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    window.grab().save(str(screenshot))
    return {"cycles": cycle, "counts": driver.counts, "seconds": driver.seconds, "failures": driver.failures, "samples": samples,
            "minutes": round((time.monotonic() - started) / 60, 1)}


def growth(samples: list[dict], key: str) -> tuple[float, float, float]:
    """(MiB after the first tenth, at the end, the least-squares slope over the second half in MiB per 10
    minutes: a steady growth shows, a spike does not decide it)."""
    if len(samples) < 4:
        return 0.0, 0.0, 0.0
    half = samples[len(samples) // 2:]
    minutes = [s["minute"] for s in half]
    values = [s[key] for s in half]
    mean_m, mean_v = sum(minutes) / len(half), sum(values) / len(half)
    spread = sum((m - mean_m) ** 2 for m in minutes) or 1e-9
    slope = sum((m - mean_m) * (v - mean_v) for m, v in zip(minutes, values)) / spread
    return samples[max(1, len(samples) // 10)][key], samples[-1][key], round(slope * 10, 1)


def window_manager():
    """openbox on the Xvfb display, so the window is activated and takes keys as on a desktop."""
    import shutil
    import subprocess

    if not os.environ.get("DISPLAY") or shutil.which("openbox") is None:
        return None
    manager = subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # it takes the display before the window maps (a benchmark, not a test)
    return manager


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--screenshot", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "soak-end.png")
    args = parser.parse_args()
    import faulthandler

    faulthandler.enable()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_theme(app)
    prefer_gui_thread()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    scratch = tempfile.TemporaryDirectory(prefix="ke-soak-")
    settings = QSettings(str(Path(scratch.name) / "settings.ini"), QSettings.Format.IniFormat)
    engine = EngineProcess(data_dir=args.data_dir)
    manager = window_manager()
    window = MainWindow(engine, settings)
    window.resize(1440, 900)
    window.show()
    beat = Heartbeat()
    beat.timer.start()
    none_before = sys.getrefcount(None)
    with loop:
        result = loop.run_until_complete(soak(window, args.workspace.resolve(), args.minutes, args.screenshot, beat))
    window.shutdown()
    engine.close()
    if manager is not None:
        manager.terminate()
    samples = result["samples"]
    window_early, window_end, window_slope = growth(samples, "window_mib")
    engine_early, engine_end, engine_slope = growth(samples, "engine_mib")
    steps = sum(result["counts"].values())
    row = {"minutes": result["minutes"], "steps": steps, "failed steps": len(result["failures"]),
           "crashed": "no", "longest block (s)": round(beat.longest, 2), f"blocks over {BLOCK_S:g} s": len(beat.blocks),
           "window MiB (early → end)": f"{window_early} → {window_end}", "window MiB / 10 min (2nd half)": window_slope,
           "engine MiB (early → end)": f"{engine_early} → {engine_end}", "engine MiB / 10 min (2nd half)": engine_slope,
           "None refs (start → end; rising is harmless, dropping fatal)":
               f"{none_before} → {samples[-1]['none_refs'] if samples else none_before}"}
    for key, value in row.items():
        print(f"{key}: {value}")
    print("steps:", ", ".join(f"{k} {v} ({result['seconds'][k]:.0f} s)" for k, v in sorted(result["counts"].items())))
    if result["failures"]:
        print("failed steps:", "; ".join(result["failures"][:20]))
    if beat.blocks:
        print("blocks:", "; ".join(f"{s} s in {step}" for s, step in beat.blocks[:20]))
    record("soak", [row], settings={"workspace": str(args.workspace), "minutes": args.minutes,
                                    "qt": __import__("PySide6").__version__},
           figures={"counts": result["counts"], "seconds": result["seconds"], "failures": result["failures"], "blocks": beat.blocks,
                    "samples": samples, "screenshot": str(args.screenshot)}, uses_percentiles=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
