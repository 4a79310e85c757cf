"""Informed: CI tests every feature at 40,400 chunks and 40,000 commits (tests/test_scale.py); this times each step.

The CI scale test's scenario, timed (issue 33): a generated git repository of 40,400 chunks and 40,000 commits
(tests/helpers/big_repo.py) indexed with the stand-in encoder of tests/test_scale.py (hash vectors of 32
dimensions: the model is not what this measures), then each feature once, as a user would ask: every strategy
(chunks, then file answers with history), `tuned` trained on the history at another cut-off, `eval --level
file`, a question over the big repository and two small workspaces, go to symbol, find references.

    python benchmarks/experiments/scale.py [--root /tmp/ke-scale]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import shutil
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import StandInEmbedder, record  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from tests.helpers.big_repo import HOUR, START, make_big_repo, path_of, topic  # noqa: E402
from tests.helpers.workspaces import small_workspaces  # noqa: E402

QUESTION = "fix the matrix determinant handling"


async def timed(rows: list[dict], what: str, work) -> object:
    started = time.perf_counter()
    answer = await work
    rows.append({"step": what, "seconds": round(time.perf_counter() - started, 3)})
    print(rows[-1], flush=True)
    return answer


async def scenario(root: Path) -> tuple[list[dict], dict]:
    rows: list[dict] = []
    started = time.perf_counter()
    repo = make_big_repo(root / "repo")
    others = small_workspaces(root / "small")
    rows.append({"step": "generate the repository (git fast-import)", "seconds": round(time.perf_counter() - started, 2)})
    service = LocalEngine(data_dir=root / "data")
    service.embedder = service.index_embedder = service.document_embedder = StandInEmbedder(dimension=32)
    try:
        await timed(rows, "index it (stand-in encoder) with its history", service.index(repo))
        for folder in others:
            await service.index(folder)
        health = await service.health(repo)
        workspace = str(repo)
        for strategy in [s.name for s in await service.strategies() if s.available]:
            options = QueryOptions(workspace=workspace, strategy=strategy, top_k=10, use_cache=False)
            await timed(rows, f"`{strategy}`: chunks", service.query(QUESTION, options))
            await timed(rows, f"`{strategy}`: file answers with history", service.find_files(QUESTION, options, 10))
        early = QueryOptions(workspace=workspace, strategy="tuned", top_k=5, use_cache=False, before=START + 20_000 * HOUR)
        await timed(rows, "`tuned` trained again at another cut-off", service.query(QUESTION, early))
        await timed(rows, "eval --level file, 3 questions, every strategy", file_eval(service, repo, root))
        merged = QueryOptions(workspace=workspace, top_k=10, use_cache=False, strategy="none")
        await timed(rows, "one question over it and two small workspaces",
                    service.query_many(QUESTION, [workspace, *map(str, others)], merged))
        words = topic(250).split()
        name = f"{words[0]}_{words[-1]}_250_7"
        await timed(rows, "go to symbol", service.goto_symbols(name, workspace))
        await timed(rows, "find references", service.references(name, workspace))
    finally:
        service.close()
    return rows, {"chunks": health.chunks, "commits": health.history_commits, "files": health.files}


async def file_eval(service, repo: Path, root: Path) -> int:
    from app.eval_command import run_eval_command
    from tests.test_evaluation import _eval_args

    queries = root / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{f}", "text": f"the {topic(f)} of module {f} is wrong",
                                           "relevant": [{"path": path_of(f)}]}) + "\n" for f in (3, 77, 250)))
    with redirect_stdout(io.StringIO()):
        return await run_eval_command(_eval_args("--queries", str(queries), "--workspace", str(repo), "--level",
                                                 "file", "--top-k", "10", "--json"), service)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=None)
    args = parser.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="ke-scale-"))
    try:
        rows, size = asyncio.run(scenario(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    record("scale", rows, settings={"encoder": "stand-in (hash vectors, 32 dimensions)"} | size,
           uses_percentiles=False,
           note=f"{size['files']:,} files, {size['chunks']:,} chunks, {size['commits']:,} commits; each step once, "
                "cold caches (use_cache off); the stand-in encoder of tests/test_scale.py")


if __name__ == "__main__":
    main()
