"""Informed: issue 22's fixes for a million chunks (batched reference counts, per-result stale marks, bounded keywords).

A very big index of real code: scan and chunk time, keyword-searchable time, peak memory, index size,
open time and query latency per non-neural strategy.

    python benchmarks/experiments/million.py                    # about 1,000,000 chunks
    python benchmarks/experiments/million.py --chunks 200000    # a smaller size (the figures say which)

The workspace is built by benchmarks/lib.py: the pytest and Sphinx snapshots, then this project's
site-packages packages, copied again under copyN/ folders when they run out (the result says how often).
**The indexing encoder is a stand-in** (hash vectors, benchmarks/corpus.StandInEmbedder): every stage it does
not touch runs for real (scan, chunking, the catalogue and its FTS5 keyword table, Chroma, the projection);
the real encoder's speed is in benchmarks/index_throughput.py. Questions are embedded by the real model.

Keyword-searchable: the first run makes every chunked file keyword-searchable before embedding (a
provisional table); the time is from the run's start until that table answers. Open: a new engine on the
finished index, until its first answer (the query model loaded beforehand). Peak RSS: this process's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import STARTED_AT, StandInEmbedder, build_corpus, engine_settings, percentile, record  # noqa: E402
from services.core.models import QueryOptions  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402

STRATEGIES = ("none", "keyword-boost", "heuristic", "metadata", "rrf", "hybrid")
QUESTIONS = ("parse command line arguments", "fixture teardown order", "render the html template",
             "read configuration from an ini file", "retry a failed http request", "sort items by date",
             "cache results in memory", "convert a tensor to numpy", "validate a json schema",
             "open a sqlite database connection", "format a log message", "compare two version strings")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def build(workspace: Path, data_dir: Path, settings: Settings) -> dict:
    service = LocalEngine(settings, data_dir=data_dir)
    service.index_embedder = StandInEmbedder()
    marks: dict[str, float] = {}
    started = time.perf_counter()

    def progress(event) -> None:
        if event.phase == "chunking" and "keyword index first" in event.message:
            marks.setdefault("chunked", time.perf_counter() - started)

    def watch_keywords(index, stop: threading.Event) -> None:
        while not stop.is_set():
            if index.keywords._provisional is not None and index.keywords.search("def", 1):
                marks.setdefault("keyword_searchable", time.perf_counter() - started)
                return
            time.sleep(0.05)

    try:
        index = service.workspace_index(workspace)
        stop = threading.Event()
        watcher = threading.Thread(target=watch_keywords, args=(index, stop), daemon=True)
        watcher.start()
        report = await service.index(workspace, progress=progress)
        stop.set()
        total = time.perf_counter() - started
        size = index.size_bytes()
        manifest = (index.folder / "manifest.sqlite").stat().st_size
    finally:
        service.close()
    print(f"indexed {report.files_indexed:,} files, {report.chunks_total:,} chunks in {total:.0f} s "
          f"(stand-in encoder); scan+chunk {marks.get('chunked', float('nan')):.0f} s, keyword-searchable after "
          f"{marks.get('keyword_searchable', float('nan')):.0f} s; index {size / 2**30:.2f} GiB "
          f"(manifest with its keyword table {manifest / 2**30:.2f} GiB); peak RSS {peak_rss_mb():.0f} MB")
    return {"files": report.files_indexed, "chunks": report.chunks_total, "index_seconds": round(total),
            "scan_chunk_seconds": round(marks.get("chunked", -1)),
            "keyword_searchable_seconds": round(marks.get("keyword_searchable", -1)),
            "index_bytes": size, "manifest_bytes": manifest, "peak_rss_mb_indexing": round(peak_rss_mb()),
            "built_at_commit": STARTED_AT}


def upgrade(workspace: Path, data_dir: Path, settings: Settings) -> dict:
    """Open the kept index once, untimed by `open`: a manifest from older code gets its newer tables filled
    (once); then its size again."""
    service = LocalEngine(settings, data_dir=data_dir)
    try:
        index = service.workspace_index(workspace)
        started = time.perf_counter()
        filled = index.catalog().keywords_filled
        upgraded = time.perf_counter() - started
        size, manifest = index.size_bytes(), (index.folder / "manifest.sqlite").stat().st_size
    finally:
        service.close()
    print(f"opened the kept index: {'filled its keyword tables in %.0f s; ' % upgraded if filled else ''}"
          f"index {size / 2**30:.2f} GiB (manifest {manifest / 2**30:.2f} GiB)")
    return {"index_bytes": size, "manifest_bytes": manifest,
            **({"keyword_tables_filled_seconds": round(upgraded)} if filled else {})}


async def open_and_query(workspace: Path, data_dir: Path, settings: Settings, rounds: int) -> dict:
    service = LocalEngine(settings, data_dir=data_dir)
    try:
        await asyncio.to_thread(service.embedder.load)
        started = time.perf_counter()
        await service.query(QUESTIONS[0], QueryOptions(workspace=str(workspace), strategy="hybrid",
                                                        use_cache=False, top_k=10))
        opened = time.perf_counter() - started
        latencies: dict[str, list[float]] = {s: [] for s in STRATEGIES}
        for _ in range(rounds):
            for question in QUESTIONS:
                for strategy in STRATEGIES:
                    options = QueryOptions(workspace=str(workspace), strategy=strategy, use_cache=False, top_k=10)
                    began = time.perf_counter()
                    await service.query(question, options)
                    latencies[strategy].append(time.perf_counter() - began)
    finally:
        service.close()
    figures = {"open_seconds": round(opened, 2), "peak_rss_mb": round(peak_rss_mb())}
    for strategy, values in latencies.items():
        figures[f"{strategy}_p50_ms"] = round(percentile(values, 50) * 1000)
        figures[f"{strategy}_p95_ms"] = round(percentile(values, 95) * 1000)
        print(f"{strategy:14} p50 {figures[f'{strategy}_p50_ms']} ms  p95 {figures[f'{strategy}_p95_ms']} ms")
    print(f"open to first answer {opened:.2f} s; peak RSS {figures['peak_rss_mb']} MB")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--chunks", type=int, default=1_000_000, help="about this many chunks of real code")
    parser.add_argument("--rounds", type=int, default=2, help="times each question is asked per strategy")
    parser.add_argument("--scratch", type=Path, help="folder for the corpus and index (default: a temporary one)")
    parser.add_argument("--keep", type=Path, help="an empty folder for the corpus and index, kept afterwards")
    parser.add_argument("--reuse", type=Path, help="a folder kept by --keep: time only opening and questions")
    args = parser.parse_args()
    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="ke-million-", dir=args.scratch) as folder:
        folder = Path(args.reuse or args.keep or folder)
        workspace = folder / "workspace"
        if args.reuse:
            corpus, figures = json.loads((folder / "build.json").read_text())
            figures.update(upgrade(workspace, folder / "data", settings))
        else:
            started = time.perf_counter()
            corpus = build_corpus(workspace, args.chunks)  # counted by chunking: byte estimates were 2.4x off here
            print(f"corpus: {corpus['sources']} (~{corpus['chunks']:,} chunks estimated) in "
                  f"{time.perf_counter() - started:.0f} s")
            figures = asyncio.run(build(workspace, folder / "data", settings))
            (folder / "build.json").write_text(json.dumps([corpus, figures]))
        figures.update(asyncio.run(open_and_query(workspace, folder / "data", settings, args.rounds)))
    figures["corpus"] = corpus["sources"]
    rows = [{"chunks": f"{figures['chunks']:,}", "files": f"{figures['files']:,}",
             "scan+chunk s": figures["scan_chunk_seconds"],
             "keyword-searchable s": figures["keyword_searchable_seconds"],
             "whole index s (stand-in encoder)": figures["index_seconds"],
             "peak RSS MB": max(figures["peak_rss_mb"], figures["peak_rss_mb_indexing"]),
             "index GiB": round(figures["index_bytes"] / 2**30, 2), "open s": figures["open_seconds"],
             **{f"{s} p50/p95 ms": f"{figures[f'{s}_p50_ms']} / {figures[f'{s}_p95_ms']}" for s in STRATEGIES}}]
    record("million", rows, settings={"chunks": args.chunks, "rounds": args.rounds, "top_k": 10,
                                      "encoder": "stand-in hash vectors (indexing); the real model (questions)",
                                      "engine": engine_settings(settings)},
           figures=figures, note=f"Indexing encoder: a stand-in (hash vectors). Index built at commit {figures['built_at_commit']}; "
                f"opened and asked at this record's commit. Corpus: " + corpus["sources"])


if __name__ == "__main__":
    main()
