"""How fast the watched index follows the files: edit -> searchable, a checkout-sized burst, and the
no-change reconcile when a workspace is opened.

    python benchmarks/freshness.py                       # a generated 1,000-file workspace
    python benchmarks/freshness.py --workspace ~/sympy   # a copy of a real tree (it is edited!)

Uses the real LocalEngine, watcher, model and embedded Chroma, in a temporary data dir.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, percentile, record  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.indexing.scanning import SkipFileError, read_source, scan_workspace  # noqa: E402
from services.indexing.watcher import REINDEX_FINISHED  # noqa: E402

TOPICS = ["invoice", "parser", "cache", "socket", "matrix", "render", "schedule", "encrypt", "upload", "graph"]


def generate(root: Path, files: int) -> None:
    rng = random.Random(7)
    for number in range(files):
        topic = TOPICS[number % len(TOPICS)]
        folder = root / f"pkg{number % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        body = [f'"""Helpers for {topic} number {number}."""\n']
        for fn in range(3):
            body.append(f"\n\ndef {topic}_step_{number}_{fn}(value, limit={rng.randint(1, 99)}):\n"
                        f'    """Apply {topic} step {fn} to the value, at most limit times."""\n'
                        f"    for _ in range(limit):\n        value = value * {fn + 2} % 1000003\n"
                        f"    return value\n")
        (folder / f"{topic}_{number}.py").write_text("".join(body))


def unique_function(tag: str) -> tuple[str, str]:
    name = f"zebra_quasar_{tag}"
    return name, (f"\n\ndef {name}(herd):\n    \"\"\"Count the zebras of quasar {tag} in the herd.\"\"\"\n"
                  f"    return sum(1 for animal in herd if animal == '{tag}')\n")


async def wait_until(condition, timeout: float = 600.0) -> float:
    started = time.perf_counter()
    while not await condition():
        if time.perf_counter() - started > timeout:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.05)
    return time.perf_counter() - started


async def measure(workspace: Path, data_dir: Path, edits: int, burst: int) -> dict:
    """Prints the figures and returns them for the record."""
    service = LocalEngine(data_dir=data_dir)
    try:
        started = time.perf_counter()
        report = await service.index(workspace)
        print(f"workspace: {workspace} ({report.files_indexed} files, {report.chunks_total:,} chunks, "
              f"first index {time.perf_counter() - started:.0f} s)")
        events = []
        started = time.perf_counter()
        await service.watch(workspace, on_event=events.append)
        await wait_until(lambda: _true(any(e.kind == REINDEX_FINISHED for e in events)))
        reconcile = time.perf_counter() - started
        print(f"no-change reconcile on open: {reconcile:.2f} s")

        files = [f.abs_path for f in scan_workspace(workspace).files if f.language == "python" and indexed(f)]
        rng = random.Random(11)
        latencies = []
        for number in range(edits):
            name, code = unique_function(f"e{number}")
            target = rng.choice(files)
            with target.open("a") as handle:
                handle.write(code)
            rel = target.relative_to(workspace).as_posix()
            latencies.append(await wait_until(lambda: _found(service, workspace, name, rel)))
        p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
        print(f"edit -> searchable, {edits} one-file edits: p50 {p50:.2f} s, "
              f"p95 {p95:.2f} s, max {max(latencies):.2f} s (target p95 < 3 s)")

        names = []
        started = time.perf_counter()
        for number, target in enumerate(rng.sample(files, min(burst, len(files)))):
            name, code = unique_function(f"b{number}")
            names.append(name)
            with target.open("a") as handle:
                handle.write(code)
        written = time.perf_counter() - started
        seconds = await wait_until(lambda: _all_symbols(service, workspace, names))
        print(f"burst of {len(names)} changed files (written in {written:.2f} s): all searchable "
              f"{seconds:.1f} s after the last write; {sum(e.kind == REINDEX_FINISHED for e in events)} "
              f"automatic runs in all")
    finally:
        service.close()
    return {"files": report.files_indexed, "chunks": report.chunks_total, "reconcile on open s": round(reconcile, 2),
            "edit -> searchable p50 s": round(p50, 2), "p95 s": round(p95, 2), "max s": round(max(latencies), 2),
            "burst files": len(names), "burst -> all searchable s": round(seconds, 1)}


def indexed(source) -> bool:
    """Not a file the index skips (e.g. sympy's generated polyquinticconst.py): an edit there never shows."""
    try:
        read_source(source)
        return True
    except SkipFileError:
        return False


async def _true(value: bool) -> bool:
    return value


async def _found(service, workspace: Path, name: str, path: str) -> bool:
    """A real query (limited to the edited file) returns the new function."""
    options = QueryOptions(workspace=str(workspace), top_k=10, use_cache=False, expand_context=False,
                           path_glob=path, min_relevance=0.0, strategy="none")
    result = await service.query(f"count the zebras of quasar {name.rsplit('_', 1)[-1]} in the herd", options)
    return any(r.chunk.symbol == name for r in result.results)


async def _all_symbols(service, workspace: Path, names: list[str]) -> bool:
    return set(names) <= set(await service.symbol_names(workspace))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", help="copy this tree and measure on the copy (default: generate one)")
    parser.add_argument("--files", type=int, default=1000, help="files in the generated workspace")
    parser.add_argument("--edits", type=int, default=20, help="one-file edits to time")
    parser.add_argument("--burst", type=int, default=200, help="files changed at once")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ke-freshness-"))
    try:
        workspace = scratch / "workspace"
        if args.workspace:
            shutil.copytree(args.workspace, workspace, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        else:
            generate(workspace, args.files)
        row = asyncio.run(measure(workspace, scratch / "data", args.edits, args.burst))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record("freshness", [{"workspace": args.workspace or f"generated, {args.files} files", **row}],
           settings={"workspace": args.workspace, "files": args.files, "edits": args.edits, "burst": args.burst,
                     "engine": engine_settings()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
