"""Useful in the first minute (issue 51): how soon a new repository answers, and how good its answers are
while its vectors are still being made.

    python benchmarks/first_minute.py [--repos pytest] [--orders path,useful] [--data DIR]
    python benchmarks/first_minute.py --repos "" --folder WORKSPACE  # only the seconds to the first answers (sympy)

For each SWE repository (its snapshot with history, benchmarks/lib.swe_snapshot) and each vector order, from a
fresh data dir (the encoder already exported: the first run of the script pays that, once):
- the seconds from the start of the first index until go to symbol, go to file and references answer for the
  whole repository (step 1 committed every file: the run is stopped there, then each is asked about a
  symbol of the last file committed);
- the default strategy's (`auto`) file-level MRR@10 over the repository's judged issues (find_files, each issue's
  `before`: no commit at or after it is used) at step 1's end and once 10 %, 25 %, 50 % and 100 % of the
  chunks have their vectors (the run is cancelled at each mark, measured, and resumed).
Orders: `path` (the files by path, as before issue 51) and `useful` (services/indexing/vector_order.py: source
first, then tests, docs, examples, generated; within each, the files the history changed most, counting only
commits before the earliest issue's `before`).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import data_root, engine_settings, judged, record, shared, swe_snapshot  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.evaluation.formats import file_qrels, load_qrels  # noqa: E402
from services.indexing import indexer, vector_order  # noqa: E402

MARKS = (0.10, 0.25, 0.50, 1.0)


def ordered(name: str, before: int):
    """The vector order to measure, in place of the indexer's."""
    if name == "path":
        return lambda paths, commits=(), _before=None: sorted(paths)
    return lambda paths, commits=(), _before=None: vector_order.vector_order(paths, commits, before)


async def file_mrr(service: LocalEngine, folder: Path, queries, qrels) -> float:
    """`auto`'s file-level MRR@10 over the judged issues, each with its `before`."""
    total = 0.0
    for query in queries:
        options = QueryOptions(workspace=str(folder), strategy="auto", min_relevance=0.0, use_cache=False,
                               expand_context=False, before=query.before)
        answer = await service.find_files(query.text, options, max_files=10, before=query.before)
        relevant = {path for path, grade in qrels[query.id].items() if grade > 0}
        total += next((1.0 / rank for rank, f in enumerate(answer.files[:10], 1) if f.path in relevant), 0.0)
    return total / len(queries)


async def run_until(service: LocalEngine, folder: Path, share: float | None) -> tuple[float, int, int]:
    """Index until at least `share` of the chunks have their vectors stored (None: until step 2 starts);
    (seconds, with vectors, chunks). A cancel keeps only the files of its window it finished, so the run is
    resumed (its first windows are small) until the share is stored."""
    seconds, passes = 0.0, 0
    while True:
        cancel = threading.Event()

        def progress(event) -> None:
            if event.phase != "embedding" or not event.index_total:
                return
            if share is None or (share < 1.0 and event.index_done >= share * event.index_total):
                cancel.set()

        started = time.monotonic()
        await service.index(folder, progress=progress, cancel=cancel)
        seconds += time.monotonic() - started
        health = await service.health(folder)
        stored, passes = health.chunks_embedded or 0, passes + 1
        if share is None or stored >= share * health.chunks or passes == 20:
            return seconds, stored, health.chunks


async def first_answers(service: LocalEngine, folder: Path) -> dict:
    """Go to symbol, go to file and references on the last file step 1 committed: seconds each took."""
    index = service.workspace_index(str(folder))
    last = max(index.catalog().files())  # by path: the last file of the repository
    symbol = next((row[4] for row in index.catalog().graph.definition_rows() if row[0] == last), "")
    took = {}
    for name, ask in (("symbol", lambda: service.goto_symbols(symbol or "main", folder)),
                      ("file", lambda: service.goto_files(last, folder)),
                      ("references", lambda: service.references(symbol or "main", folder))):
        started = time.monotonic()
        answer = await ask()
        assert getattr(answer, "hits", None) or getattr(answer, "targets", None) or name == "references", name
        took[name] = time.monotonic() - started
    return took


async def measure(repo: str, order: str, data: Path) -> dict:
    folder = swe_snapshot(repo, data)
    qrels = file_qrels(load_qrels(shared("swe", repo, "qrels.tsv")))
    queries = judged(load_queries(shared("swe", repo, "queries.jsonl")), qrels)
    before = min(q.before for q in queries)
    data_dir = data / "first_minute" / f"{repo}-{order}"
    shutil.rmtree(data_dir, ignore_errors=True)
    indexer.vector_order = ordered(order, before)
    service = LocalEngine(Settings(), data_dir=data_dir)
    try:
        step_1, _, chunks = await run_until(service, folder, None)
        took = await first_answers(service, folder)
        row = {"repository": repo, "order": order, "chunks": chunks, "step 1 s": round(step_1, 1),
               **{f"{name} s": round(step_1 + s, 1) for name, s in took.items()}}
        row["MRR@10 step 1"] = round(await file_mrr(service, folder, queries, qrels), 3)
        spent = step_1
        for share in MARKS:
            seconds, vectors, chunks = await run_until(service, folder, share)
            spent += seconds
            row[f"MRR@10 {share:.0%}"] = round(await file_mrr(service, folder, queries, qrels), 3)
            row[f"vectors at {share:.0%}"] = f"{vectors / chunks:.0%}"
            print(f"{repo} {order}: {vectors:,} of {chunks:,} vectors, {spent:.0f} s: {row}", flush=True)
        row["index s"] = round(spent, 1)
        return with_ratio(row)
    finally:
        service.close()


def with_ratio(row: dict) -> dict:
    """The row with the goal's figure: the MRR@10 at 25 % of the vectors over the final one."""
    final = row["MRR@10 100%"]
    return row | {"25% ÷ 100%": round(row["MRR@10 25%"] / final, 3) if final else None}


async def first_minute(folder: Path, data: Path) -> dict:
    """A plain folder (no judged issues): the seconds until step 1 is over and go to answers."""
    data_dir = data / "first_minute" / f"{folder.name}-step-1"
    shutil.rmtree(data_dir, ignore_errors=True)
    service = LocalEngine(Settings(), data_dir=data_dir)
    try:
        step_1, _, chunks = await run_until(service, folder, None)
        took = await first_answers(service, folder)
        files = (await service.health(folder)).files
        return {"repository": folder.name, "order": "-", "files": files, "chunks": chunks, "step 1 s": round(step_1, 1),
                **{f"{name} s": round(step_1 + s, 1) for name, s in took.items()}}
    finally:
        service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos", default="pytest")
    parser.add_argument("--orders", default="path,useful")
    parser.add_argument("--data", default=None)
    parser.add_argument("--folder", default=None, help="also: a plain folder's seconds to the first answers")
    args = parser.parse_args()
    data = data_root(args.data)
    table = [asyncio.run(measure(repo, order, data)) for repo in args.repos.split(",") if repo
             for order in args.orders.split(",")]
    if args.folder:
        table.append(asyncio.run(first_minute(Path(args.folder).resolve(), data)))
    record("first_minute" if args.repos else "first_minute_big", table, settings=engine_settings(Settings()), uses_percentiles=False,
           note=("auto's file-level MRR@10 on the judged SWE issues at step 1's end and at each share of vectors; "
                 "seconds from a fresh data dir") if args.repos else
                "seconds from a fresh data dir until step 1 is over and go to symbol / file / references answer")
    for row in table:
        print(row)


if __name__ == "__main__":
    main()
