"""Informed: keywords written with each file's commit (FTS5); watcher runs scan only the reported paths.

How soon an edit is keyword-searchable in a big index: save a file, run the watcher's incremental run
(Indexer.run(quick=True, paths=the saved file), what the engine starts after its debounce), and poll the
keyword index until the new function is found. For comparison, the same with a run that scans the whole
tree (what the run catching up on opening, or F5, does).

    python benchmarks/experiments/keyword_freshness.py                      # ~36,000 chunks of real code
    python benchmarks/experiments/keyword_freshness.py --chunks 100000 --edits 20
    python benchmarks/experiments/keyword_freshness.py --corpus /tmp/million1m/workspace \
        --data-dir /tmp/million1m/data --no-old-rebuild --name keyword_freshness_million

The workspace is built by benchmarks/lib.py (pytest and Sphinx snapshots, then site-packages
packages). The ENCODER IS A STAND-IN (hash vectors, benchmarks/corpus.StandInEmbedder): it encodes the
edited file's few chunks in microseconds where the model takes ~0.1 s; everything else is real (scan,
chunking, Chroma, the catalogue and its FTS5 keyword table). The watcher's 1 s debounce is not counted.
For comparison it also times what each edit cost before: a full bm25s rebuild over every chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import StandInEmbedder, build_corpus, engine_settings, percentile, record  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.indexing.indexer import Indexer  # noqa: E402
from services.storage.keyword_index import chunk_words  # noqa: E402

QUESTIONS = ("parse command line arguments", "fixture teardown order", "render the html template",
             "caplog get_records clear", "Sphinx autodoc typehints", "monkeypatch setattr",
             "read configuration from ini file", "tokenize source into words")


def edit_once(index, embedder, settings, path: Path, name: str, whole_scan: bool = False) -> tuple[float, float]:
    """(seconds from saving to a keyword hit, seconds of the whole run). The run is told the saved path,
    as the watcher tells it; `whole_scan`: it is not, so it scans the tree."""
    with path.open("a") as handle:
        handle.write(f"\n\ndef {name}(herd):\n    \"\"\"Count the {name} herd.\"\"\"\n    return len(herd)\n")
    saved = time.perf_counter()
    run_done = [0.0]
    relative = path.relative_to(index.root).as_posix()

    def run() -> None:
        Indexer(index, embedder, settings).run(quick=True, paths=None if whole_scan else {relative})
        run_done[0] = time.perf_counter() - saved

    worker = threading.Thread(target=run)
    worker.start()
    while True:
        hits = index.keywords.search(name, 3)
        if hits and hits[0][0].startswith(relative + ":"):
            found = time.perf_counter() - saved
            break
        if not worker.is_alive() and time.perf_counter() - saved > run_done[0] + 5:
            raise RuntimeError(f"{name} never became searchable")
        time.sleep(0.002)
    worker.join()
    return found, run_done[0]


def old_rebuild_seconds(catalog) -> float:
    """What a full bm25s rebuild over every chunk took (the step each run ended with before)."""
    import bm25s

    started = time.perf_counter()
    corpus = [chunk_words(c).split() or [""] for c in catalog.chunks()]
    bm25s.BM25().index(corpus, show_progress=False)
    return time.perf_counter() - started


async def measure(workspace: Path, data_dir: Path, edits: int, old_rebuild: bool = True) -> dict:
    settings = Settings()
    service = LocalEngine(settings, data_dir=data_dir)
    service.index_embedder = StandInEmbedder()
    try:
        started = time.perf_counter()
        report = await service.index(workspace)
        first = time.perf_counter() - started
        print(f"workspace {workspace}: {report.files_indexed:,} files indexed, {report.chunks_total:,} chunks, "
              f"index run {first:.0f} s (stand-in encoder)")
        index = service.workspace_index(workspace)
        known = index.catalog().files()
        files = sorted(workspace / path for path in known if path.endswith(".py"))
        rng = random.Random(5)
        token = f"{time.time_ns():x}"  # names no earlier run on this corpus left in its files
        found, runs = [], []
        for number in range(edits):
            seconds, run = await asyncio.to_thread(edit_once, index, service.index_embedder, settings,
                                                   rng.choice(files), f"okapi_probe_{token}_{number}")
            found.append(seconds)
            runs.append(run)
            print(f"edit {number + 1}: keyword-searchable after {seconds * 1000:.0f} ms (its run: {run * 1000:.0f} ms)")
        whole = []
        for number in range(edits):
            seconds, _run = await asyncio.to_thread(edit_once, index, service.index_embedder, settings,
                                                    rng.choice(files), f"okapi_whole_scan_probe_{token}_{number}", True)
            whole.append(seconds)
            print(f"edit {number + 1}, a run that scans the whole tree: keyword-searchable after {seconds * 1000:.0f} ms")
        latencies = []
        for question in QUESTIONS * 5:
            began = time.perf_counter()
            index.keywords.search(question, 10)
            latencies.append(time.perf_counter() - began)
        rebuild = await asyncio.to_thread(old_rebuild_seconds, index.catalog()) if old_rebuild else None
        chunks = index.catalog().counts()[1]
    finally:
        service.close()
    figures = {
        "chunks": chunks, "files": len(files), "edits": edits, "first_index_seconds": round(first, 1),
        "searchable_p50_ms": round(percentile(found, 50) * 1000), "searchable_p95_ms": round(percentile(found, 95) * 1000),
        "searchable_max_ms": round(max(found) * 1000), "run_p50_ms": round(percentile(runs, 50) * 1000),
        "whole_scan_searchable_p50_ms": round(percentile(whole, 50) * 1000),
        "whole_scan_searchable_p95_ms": round(percentile(whole, 95) * 1000),
        "keyword_query_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "keyword_query_p95_ms": round(percentile(latencies, 95) * 1000, 1),
        "old_full_bm25s_rebuild_seconds": None if rebuild is None else round(rebuild, 1),
    }
    print(f"\n{chunks:,} chunks: an edit is keyword-searchable after p50 {figures['searchable_p50_ms']} ms, "
          f"p95 {figures['searchable_p95_ms']} ms, max {figures['searchable_max_ms']} ms (stand-in encoder; "
          f"watcher debounce not counted); keyword query p50 {figures['keyword_query_p50_ms']} ms, "
          f"p95 {figures['keyword_query_p95_ms']} ms; with a run that scans the whole tree: p50 "
          f"{figures['whole_scan_searchable_p50_ms']} ms; the full bm25s rebuild each edit ended with before: "
          f"{'not timed' if rebuild is None else f'{rebuild:.1f} s'}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--chunks", type=int, default=36_000, help="about this many chunks of real code")
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--corpus", type=Path, help="an existing corpus folder to use (it is edited!)")
    parser.add_argument("--data-dir", type=Path, help="an existing data dir (its index of --corpus is reused)")
    parser.add_argument("--no-old-rebuild", action="store_true",
                        help="do not time the full bm25s rebuild of before (minutes and gigabytes at a million chunks)")
    parser.add_argument("--name", default="keyword_freshness", help="the record's name (benchmarks/results)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ke-keyword-fresh-") as folder:
        workspace = args.corpus or Path(folder) / "workspace"
        built = {} if args.corpus else build_corpus(workspace, args.chunks)
        figures = asyncio.run(measure(workspace, args.data_dir or Path(folder) / "data", args.edits,
                                      not args.no_old_rebuild))
    figures["corpus"] = built.get("sources", str(args.corpus))
    rebuild = figures["old_full_bm25s_rebuild_seconds"]
    record(args.name, [{
        "chunks": f"{figures['chunks']:,}", "edit → keyword-searchable p50": f"{figures['searchable_p50_ms']} ms",
        "p95": f"{figures['searchable_p95_ms']} ms", "max": f"{figures['searchable_max_ms']} ms",
        "keyword query p50 / p95": f"{figures['keyword_query_p50_ms']} / {figures['keyword_query_p95_ms']} ms",
        "a run scanning the whole tree: p50 / p95": (f"{figures['whole_scan_searchable_p50_ms']} / "
                                                      f"{figures['whole_scan_searchable_p95_ms']} ms"),
        "before: full bm25s rebuild per edit": "not timed" if rebuild is None else f"{rebuild} s",
    }], settings={"chunks": None if args.corpus else args.chunks, "edits": args.edits, "encoder": "stand-in hash vectors",
                  "engine": engine_settings()},
        figures=figures, note="Encoder: a stand-in (hash vectors) for the edited file's chunks; the watcher's 1 s "
                              "debounce is not counted. Corpus: " + figures["corpus"])


if __name__ == "__main__":
    main()
