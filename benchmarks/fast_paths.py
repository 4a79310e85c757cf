"""Speed of the paths the tests check only for behaviour: scanning 5,000 files, counting references
across 10,000 chunks, the heuristic reranker on 100 candidates (the tests' own fixture shape), and
how soon an index with a missing model fails.

    python benchmarks/fast_paths.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, percentile, record  # noqa: E402
from services.core.errors import ModelLoadError  # noqa: E402
from services.core.models import Chunk  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.service import KnowledgeService  # noqa: E402
from services.indexing.chunking.references import count_references  # noqa: E402
from services.indexing.scanning import scan_workspace  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "sample_workspace"


def timed(action, runs: int) -> list[float]:
    """Milliseconds of `action()` over `runs` runs."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return times


def scan_5000(folder: Path):
    for d in range(50):
        (folder / f"pkg{d}").mkdir()
        for i in range(100):
            (folder / f"pkg{d}" / f"m{i}.py").write_text("x = 1\n")
    return lambda: scan_workspace(folder)


def references_10000():
    many = [Chunk(path=f"f{i}.py", language="python", start_line=1, end_line=3, kind="function",
                  symbol=f"func_{i}", content=f"def func_{i}():\n    return func_{i - 1}() + helper_{i % 7}")
            for i in range(10_000)]
    return lambda: count_references(many)


def missing_model(folder: Path):
    workspace = folder / "workspace"
    shutil.copytree(SAMPLE, workspace, symlinks=True)

    def run():
        service = KnowledgeService(Settings(embedding_model="nobody/no-such-model"), data_dir=folder / "data")
        try:
            asyncio.run(service.index(workspace))
        except ModelLoadError:
            pass
        finally:
            service.close()
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scan_dir, tempfile.TemporaryDirectory() as model_dir:
        cases = {"scan 5,000 files": scan_5000(Path(scan_dir)),
                 "count references, 10,000 chunks": references_10000(),
                 "index with a missing model, until the error": missing_model(Path(model_dir))}
        for name, action in cases.items():
            times = timed(action, args.runs)
            rows.append({"path": name, "runs": args.runs, "p50 ms": round(percentile(times, 50), 1),
                         "max ms": round(max(times), 1)})
            print(f"{name}: p50 {rows[-1]['p50 ms']} ms, max {rows[-1]['max ms']} ms")
    record("fast_paths", rows, settings={"runs": args.runs, "engine": engine_settings()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
