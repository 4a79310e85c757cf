"""A big real repository, end to end: indexing speed per backend against the bare encoder (the limit), index
size against the source and where its bytes go, the encoder files the machine keeps, peak memory, time to the
first answer, query latency per strategy at top_k 10 and 100, and cold CLI questions (p50 of --cold-runs).

    pip download sympy --no-deps -d $KE_BENCH_DATA/wheels
    unzip -q $KE_BENCH_DATA/wheels/sympy-*.whl -d $KE_BENCH_DATA/sympy-src
    nice -n 10 python benchmarks/big_repo.py $KE_BENCH_DATA/sympy-src [--backends onnx-int8,torch]
        [--questions queries.jsonl] [--queries 60] [--bare-sample 2000] [--cold-runs 5]

Questions default to the first sentences of the repository's docstrings; `--questions` takes a JSONL
of {"text": ...} (e.g. the issue-length SWE-bench questions in ../shared/benchmarks/swe/).
Each backend indexes into its own temporary data dir. Load on a shared machine skews every figure:
the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, percentile, record, sample_queries  # noqa: E402
from services.core.errors import IndexMissingError  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.encoders.embedder import chunk_text  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.storage.workspace_index import WorkspaceIndex, workspace_root  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STRATEGIES = ("none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata")
FIRST_QUESTION = "solve a system of linear equations"
COLD_QUESTIONS = {"name": "solveset", "dotted name": "sympy.solvers.solveset", "words": FIRST_QUESTION}
# the catalogue's tables, grouped by what they are for (sqlite's dbstat names tables and their indexes)
CATALOGUE_PARTS = {"chunk keywords": ("chunk_words",), "file keywords and names": ("file_words", "file_names"),
                   "code graph": ("ref",), "texts": ("texts",), "chunk rows and indexes": ("chunks",)}


def folder_mb(folder: Path) -> float:
    """MB of a folder's files, or of one file."""
    if folder.is_file():
        return folder.stat().st_size / 1e6
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def index_parts(folder: Path) -> dict[str, float]:
    """MB of each part of a workspace's index: Chroma's HNSW files and its SQLite, the catalogue's tables by
    group (and its free pages), the history and the projection."""
    parts = {"HNSW (Chroma)": sum(folder_mb(p) for p in (folder / "chroma").iterdir() if p.is_dir()),
             "Chroma SQLite": folder_mb(folder / "chroma") - sum(folder_mb(p) for p in (folder / "chroma").iterdir()
                                                                   if p.is_dir())}
    with closing(sqlite3.connect(f"file:{folder / 'manifest.sqlite'}?mode=ro", uri=True)) as db:
        tables = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0] * page_size
    grouped = {name: 0.0 for name in CATALOGUE_PARTS}
    other = 0.0
    for table, size in tables:
        group = next((g for g, prefixes in CATALOGUE_PARTS.items() if table.startswith(prefixes)), None)
        if group:
            grouped[group] += size / 1e6
        else:
            other += size / 1e6
    parts.update({f"catalogue: {name}": mb for name, mb in grouped.items()})
    parts["catalogue: other tables"] = other
    parts["catalogue: free pages"] = free / 1e6
    parts["catalogue write-ahead log"] = sum(p.stat().st_size for p in folder.glob("manifest.sqlite-*")) / 1e6
    for name in ("history.sqlite", "projection.npy"):
        parts[name] = (folder / name).stat().st_size / 1e6 if (folder / name).exists() else 0.0
    return parts


def machine_encoders_mb() -> float:
    """The exported encoders this machine keeps for every data dir (services/encoders/export.py)."""
    from services.encoders.export import default_cache_dir

    folder = default_cache_dir()
    return folder_mb(folder) if folder.exists() else 0.0


def indexed_mb(workspace: Path, data_dir: Path) -> float:
    """Bytes of the files the index holds (the denominator of "index ÷ source")."""
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    size = sum(record.size for record in index.catalog().files().values()) / 1e6
    index.close()
    return size


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


class FirstAnswer:
    """Asks a question (hybrid: BM25 and vectors) every 0.5 s while indexing runs; records when the
    first results come back."""

    def __init__(self, service: LocalEngine, workspace: Path) -> None:
        self.service, self.workspace = service, workspace
        self.seconds: float | None = None
        self.done = threading.Event()

    def run(self, started: float) -> None:
        options = QueryOptions(workspace=str(self.workspace), strategy="hybrid", min_relevance=0.0,
                               use_cache=False, expand_context=False)
        while not self.done.is_set() and self.seconds is None:
            try:
                if asyncio.run(self.service.query(FIRST_QUESTION, options)).results:
                    self.seconds = time.perf_counter() - started
            except IndexMissingError:
                pass
            self.done.wait(0.5)


class Steps:
    """Seconds from one kind of progress event to the next: where a run's time goes (the embedding step
    holds the encoder and, overlapped with it, the writes)."""

    def __init__(self, started: float) -> None:
        self.last, self.current, self.seconds = started, "starting", {}

    def see(self, event) -> None:
        now = time.perf_counter()
        step = "end" if event is None else step_of(event)
        if step != self.current:
            self.seconds[self.current] = self.seconds.get(self.current, 0.0) + now - self.last
            self.current, self.last = step, now


def step_of(event) -> str:
    if event.phase == "embedding":
        return "embedding: fitting the projection" if event.message.startswith("fitting") else "embedding"
    if event.phase in ("chunking", "finalizing") and event.message:
        return f"{event.phase}: {event.message.split(';')[0][:40]}"
    return event.phase


async def index_once(backend: str, workspace: Path, data_dir: Path) -> dict:
    service = LocalEngine(Settings(embedding_backend=backend), data_dir=data_dir)
    load_started = time.perf_counter()
    await asyncio.to_thread(service.index_embedder.load)  # export (first time) and model load: not indexing
    load_seconds = time.perf_counter() - load_started
    watcher = FirstAnswer(service, workspace)
    started = time.perf_counter()
    thread = threading.Thread(target=watcher.run, args=(started,), daemon=True)
    thread.start()
    steps = Steps(started)
    report = await service.index(workspace, full=True, progress=steps.see)
    wall = time.perf_counter() - started
    steps.see(None)
    watcher.done.set()
    thread.join()
    figures = {"backend": service.index_embedder.backend_used, "load_s": load_seconds, "wall_s": wall,
               "files": report.files_indexed, "chunks": report.chunks_total,
               "first_answer_s": watcher.seconds, "steps": steps.seconds,
               "note": service.index_embedder.note}
    figures["bare_rate"] = bare_rate(service, workspace, data_dir)
    figures["rate"] = report.chunks_embedded / wall
    service.close()
    return figures


def bare_rate(service: LocalEngine, workspace: Path, data_dir: Path, sample: int | None = None) -> float:
    """The same encoder alone on a sample of the same chunks (chunks/s, the median of three runs)."""
    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    texts = [chunk_text(c) for c in index.catalog().chunks()]
    index.close()
    sample = sample or ARGS.bare_sample
    texts = random.Random(0).sample(texts, min(sample, len(texts)))
    rates = []
    for _ in range(3):  # the same work varies by ±6% from run to run on this VM: the median of three
        started = time.perf_counter()
        service.index_embedder.encode(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    print(f"  bare encoder, {len(texts):,} chunks three times: " + ", ".join(f"{r:.1f}" for r in rates) + " chunks/s",
          flush=True)
    return sorted(rates)[1]


def questions(workspace: Path, data_dir: Path, count: int) -> list[str]:
    if ARGS.questions:
        lines = Path(ARGS.questions).read_text().splitlines()
        return [json.loads(line)["text"] for line in lines if line.strip()][:count]
    return sample_queries(workspace, data_dir, count)


async def latencies(workspace: Path, data_dir: Path, backend: str) -> dict:
    service = LocalEngine(Settings(embedding_backend=backend), data_dir=data_dir)
    await service.warm_up()
    asked = questions(workspace, data_dir, ARGS.queries)
    out = {}
    for top_k in (10, 100):
        times = {name: [] for name in STRATEGIES}
        for question in asked:  # interleaved, so background load hits every strategy alike
            for name in STRATEGIES:
                options = QueryOptions(workspace=str(workspace), strategy=name, top_k=top_k, use_cache=False)
                started = time.perf_counter()
                await service.query(question, options)
                times[name].append((time.perf_counter() - started) * 1000)
        out[top_k] = {name: (percentile(v, 50), percentile(v, 95)) for name, v in times.items()}
    service.close()
    return out


def cold_cli(workspace: Path, data_dir: Path) -> list[dict]:
    """Each kind of question asked --cold-runs times by `knowledge-explorer query --json` in a new process."""
    from benchmarks.latency import cold_run, mcp_first_answer

    rows = []
    for kind, question in COLD_QUESTIONS.items():
        walls = [cold_run(workspace, data_dir, question)[0] for _ in range(ARGS.cold_runs)]
        rows.append({"table": "cold CLI question", "question": kind, "asked": question, "runs": len(walls),
                     "wall p50 s": round(percentile(walls, 50), 2), "wall min s": round(min(walls), 2),
                     "wall max s": round(max(walls), 2)})
        print(f"cold CLI, {kind} ({question!r}): p50 {rows[-1]['wall p50 s']} s wall "
              f"(min {rows[-1]['wall min s']}, max {rows[-1]['wall max s']})", flush=True)
    for kind in ("name", "words"):  # a new `mcp` process per run, its first search (a real MCP client session)
        runs = [mcp_first_answer(workspace, data_dir, COLD_QUESTIONS[kind]) for _ in range(ARGS.cold_runs)]
        walls = [wall for wall, _ready in runs]
        rows.append({"table": "cold CLI question", "question": f"{kind}, MCP's first answer",
                     "asked": COLD_QUESTIONS[kind], "runs": len(walls), "wall p50 s": round(percentile(walls, 50), 2),
                     "wall min s": round(min(walls), 2), "wall max s": round(max(walls), 2),
                     "MCP handshake p50 s": round(percentile([ready for _w, ready in runs], 50), 2)})
        print(f"MCP stdio, first answer to a {kind} ({COLD_QUESTIONS[kind]!r}): p50 {rows[-1]['wall p50 s']} s from "
              f"the process's start (handshake done at {rows[-1]['MCP handshake p50 s']} s)", flush=True)
    return rows


async def main() -> None:
    workspace = Path(ARGS.workspace).resolve()
    python_mb = sum(p.stat().st_size for p in workspace.rglob("*.py")) / 1e6
    print(f"workspace {workspace}: {python_mb:.1f} MB of Python source; load {load()}")
    print("(× source: index MB ÷ MB of the files indexed)")
    print("| backend | files | chunks | wall s | chunks/s | bare encoder chunks/s | ratio | first answer s |"
          " index MB | × source |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    last, loads, rows = None, [], []
    for backend in ARGS.backends.split(","):
        data_dir = Path(tempfile.mkdtemp(prefix=f"big-repo-{backend}-", dir=ARGS.scratch))
        f = await index_once(backend, workspace, data_dir)
        size = folder_mb(WorkspaceIndex(workspace_root(workspace), data_dir).folder)
        source_mb = indexed_mb(workspace, data_dir)
        print(f"| {f['backend']} | {f['files']} | {f['chunks']} | {f['wall_s']:.0f} | {f['rate']:.1f} | "
              f"{f['bare_rate']:.1f} | {f['rate'] / f['bare_rate']:.2f} | {f['first_answer_s'] or 0:.1f} | "
              f"{size:.0f} | {size / source_mb:.2f} |" + (f" note: {f['note']}" if f["note"] else ""))
        loads.append(f"{f['backend']} {f['load_s']:.1f} s")
        print("where the run's time goes: " + ", ".join(f"{k} {v:.1f} s" for k, v in f["steps"].items()), flush=True)
        rows += [{"table": "run steps", "backend": f["backend"], "step": k, "seconds": round(v, 1),
                  "share": round(v / f["wall_s"], 3)} for k, v in f["steps"].items()]
        rows.append({"table": "indexing", "backend": f["backend"], "files": f["files"], "chunks": f["chunks"],
                     "wall s": round(f["wall_s"]), "chunks/s": round(f["rate"], 1),
                     "bare encoder chunks/s": round(f["bare_rate"], 1), "ratio": round(f["rate"] / f["bare_rate"], 2),
                     "first answer s": round(f["first_answer_s"] or 0, 1), "index MB": round(size),
                     "x source": round(size / source_mb, 2), "encoder load s": round(f["load_s"], 1)})
        last = (backend, data_dir)
    print("encoder load (an ONNX export on first use included): " + ", ".join(loads))
    backend, data_dir = last
    folder = WorkspaceIndex(workspace_root(workspace), data_dir).folder
    source_mb = indexed_mb(workspace, data_dir)
    parts = index_parts(folder)
    print(f"\nwhere the index's bytes go ({source_mb:.2f} MB of files indexed):")
    for name, mb in parts.items():
        print(f"  {name}: {mb:.2f} MB ({mb / source_mb:.2f} x source)")
        rows.append({"table": "index parts", "backend": backend, "part": name, "MB": round(mb, 2),
                     "x source": round(mb / source_mb, 3)})
    shared = {"vector cache (per data dir, outside workspaces/)": folder_mb(data_dir / "vector-cache.sqlite")
              if (data_dir / "vector-cache.sqlite").exists() else 0.0,  # a file: it was counted as an empty folder
              "encoder exports (per machine)": machine_encoders_mb()}
    for name, mb in shared.items():
        print(f"  {name}: {mb:.1f} MB")
        rows.append({"table": "index parts", "backend": backend, "part": name, "MB": round(mb, 1), "x source": None})
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"engine peak RSS: {peak_mb:.0f} MB; load {load()}")
    lat = await latencies(workspace, data_dir, backend)
    print(f"\nquery latency, ms end to end ({ARGS.queries} questions, backend {backend}; load {load()})")
    print("| strategy | top_k 10 p50 | p95 | top_k 100 p50 | p95 |")
    print("|---|---|---|---|---|")
    for name in STRATEGIES:
        (a, b), (c, d) = lat[10][name], lat[100][name]
        print(f"| {name} | {a:.0f} | {b:.0f} | {c:.0f} | {d:.0f} |")
        rows.append({"table": "query latency ms", "backend": backend, "strategy": name, "top_k 10 p50": round(a),
                     "top_k 10 p95": round(b), "top_k 100 p50": round(c), "top_k 100 p95": round(d)})
    print()
    cold = cold_cli(workspace, data_dir)
    rows += cold
    record("big_repo", rows, figures={"peak_rss_mb": round(peak_mb), "python_source_mb": round(python_mb, 1),
                                      "indexed_mb": round(source_mb, 2)},
           settings={"workspace": str(workspace), "backends": ARGS.backends, "questions": ARGS.questions,
                     "queries": ARGS.queries, "bare_sample": ARGS.bare_sample, "cold_runs": ARGS.cold_runs,
                     "engine": engine_settings()})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace")
    parser.add_argument("--backends", default=Settings().embedding_backend, help="comma-separated (default: the default)")
    parser.add_argument("--questions", help="JSONL of {\"text\": question}")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--bare-sample", type=int, default=2000, help="chunks the bare encoder is timed on")
    parser.add_argument("--scratch", default=None, help="where the temporary data dirs go")
    parser.add_argument("--cold-runs", type=int, default=5, help="new processes per kind of cold CLI question")
    ARGS = parser.parse_args()
    asyncio.run(main())
