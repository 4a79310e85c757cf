"""Informed: the scanner's skips (binary, machine-made, too large, not UTF-8) and the chunker's unique ids.

Sweep large real corpora through the scanner and the chunker (no embedding): files, chunks, files/s,
skips and failures by reason, duplicate chunk ids (must be 0), the largest chunk. With --index, then
index the Sphinx and pytest snapshots for real (embedding included) and print their reports.

    python benchmarks/experiments/real_code_sweep.py [CORPUS ...] [--data DIR] [--keep-machine-made] [--index [--stand-in-embedder]]

--stand-in-embedder indexes with hash vectors instead of the model: every other part (scan, chunk,
Chroma, catalogue, BM25) is real, so it checks that a corpus indexes completely in minutes where the
model on a busy 2-core machine would take hours. Its chunks/s say nothing about embedding speed.

Default corpora: this virtualenv's site-packages and the SWE snapshots under <data>/swe/ (<data>: --data, else
$KE_BENCH_DATA).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import StandInEmbedder, data_root, engine_settings, record  # noqa: E402
from services.core.models import count_by_reason  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.indexing.chunking import chunk_file  # noqa: E402
from services.indexing.scanning import SkipFileError, read_source, scan_workspace  # noqa: E402

SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
SWE = ("sphinx", "pytest")


@dataclass
class Sweep:
    corpus: str
    files: int = 0
    chunks: int = 0
    scan_seconds: float = 0.0
    seconds: float = 0.0
    skipped: Counter = field(default_factory=Counter)
    crashes: Counter = field(default_factory=Counter)  # exception type -> files (must stay empty)
    duplicate_ids: int = 0
    largest: tuple[int, str] = (0, "")


def sweep(root: Path, settings: Settings) -> Sweep:
    result = Sweep(str(root))
    started = time.perf_counter()
    scan = scan_workspace(root, settings.max_file_bytes, settings.skip_machine_made)
    result.scan_seconds = time.perf_counter() - started
    result.skipped.update(count_by_reason(scan.skipped))
    for source in scan.files:
        try:
            text, digest = read_source(source, settings.skip_machine_made)
            chunks = chunk_file(source.path, text, source.language, digest, settings)
        except SkipFileError as skip:
            result.skipped[skip.reason.split(":")[0]] += 1
            continue
        except Exception as error:  # a crash: what this sweep exists to find
            result.crashes[type(error).__name__] += 1
            print(f"CRASH {source.path}: {error}", file=sys.stderr)
            traceback.print_exc()
            continue
        result.files += 1
        result.chunks += len(chunks)
        result.duplicate_ids += len(chunks) - len({c.id for c in chunks})
        for chunk in chunks:
            if len(chunk.content) > result.largest[0]:
                result.largest = (len(chunk.content), f"{chunk.path}:{chunk.start_line}-{chunk.end_line}")
    result.seconds = time.perf_counter() - started
    return result


def print_sweep(sweeps: list[Sweep]) -> None:
    print(f"{'corpus':52} {'files':>7} {'chunks':>8} {'scan s':>7} {'total s':>8} {'files/s':>8} "
          f"{'crashes':>7} {'dup ids':>7} {'largest':>8}")
    for s in sweeps:
        print(f"{s.corpus[-52:]:52} {s.files:7d} {s.chunks:8d} {s.scan_seconds:7.1f} {s.seconds:8.1f} "
              f"{s.files / max(s.seconds, 1e-9):8.0f} {sum(s.crashes.values()):7d} {s.duplicate_ids:7d} "
              f"{s.largest[0]:8d}")
    for s in sweeps:
        print(f"\n{s.corpus}: largest chunk {s.largest[0]} chars at {s.largest[1]}")
        print("  skipped: " + (", ".join(f"{n} {reason}" for reason, n in s.skipped.most_common()) or "none"))
        if s.crashes:
            print("  CRASHES: " + ", ".join(f"{n} {kind}" for kind, n in s.crashes.most_common()))


def sweep_row(s: Sweep) -> dict:
    return {"corpus": s.corpus, "files": s.files, "chunks": s.chunks, "scan s": round(s.scan_seconds, 1),
            "total s": round(s.seconds, 1), "files/s": round(s.files / max(s.seconds, 1e-9)),
            "crashes": sum(s.crashes.values()), "duplicate ids": s.duplicate_ids, "largest chunk chars": s.largest[0],
            "skipped": ", ".join(f"{n} {reason}" for reason, n in s.skipped.most_common()) or "none"}


async def index_snapshots(roots: list[Path], data_dir: Path, stand_in: bool, settings: Settings) -> list[dict]:
    from services.engine.service import LocalEngine

    service = LocalEngine(settings, data_dir=data_dir)
    if stand_in:
        service.index_embedder = StandInEmbedder()
    rows = []
    try:
        await asyncio.to_thread(service.index_embedder.load)
        for root in roots:
            started = time.perf_counter()
            report = await service.index(root, full=True)
            seconds = time.perf_counter() - started
            health = await service.health(root)
            print(f"\nindex {root}: {report.files_indexed} files, {report.chunks_total} chunks in "
                  f"{seconds:.0f} s ({report.chunks_embedded / max(seconds, 1e-9):.1f} chunks/s); "
                  f"{len(report.skipped)} skipped, failed {report.failed or 'none'}; health: {health.message}")
            print("  skipped by reason: " + ", ".join(f"{n} {r}" for r, n in health.skipped_by_reason.items()))
            rows.append({"corpus": str(root), "indexed files": report.files_indexed, "chunks": report.chunks_total,
                         "index s": round(seconds), "chunks/s": round(report.chunks_embedded / max(seconds, 1e-9), 1),
                         "embedder": "stand-in" if stand_in else settings.embedding_model})
    finally:
        service.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--keep-machine-made", action="store_true", help="chunk (and index) minified/generated files too")
    parser.add_argument("--index", action="store_true", help="then index the Sphinx and pytest snapshots")
    parser.add_argument("--stand-in-embedder", action="store_true", help="--index with hash vectors, not the model")
    parser.add_argument("--data-dir", type=Path, help="where --index keeps its index (default: a temp dir)")
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    args = parser.parse_args()
    snapshots = [data_root(args.data) / "swe" / name for name in SWE]
    settings = Settings(skip_machine_made=not args.keep_machine_made)
    corpora = args.corpora or [SITE_PACKAGES, *[p for p in snapshots if p.exists()]]
    sweeps = [sweep(root, settings) for root in corpora]
    print_sweep(sweeps)
    indexed = []
    if args.index:
        roots = [p for p in args.corpora if p in snapshots] or [p for p in snapshots if p.exists()]
        if args.data_dir:
            indexed = asyncio.run(index_snapshots(roots, args.data_dir, args.stand_in_embedder, settings))
        else:
            with tempfile.TemporaryDirectory() as folder:
                indexed = asyncio.run(index_snapshots(roots, Path(folder), args.stand_in_embedder, settings))
    record("real_code_sweep", [sweep_row(s) for s in sweeps], figures={"indexed": indexed}, uses_percentiles=False,
           settings={"corpora": [str(c) for c in corpora], "keep_machine_made": args.keep_machine_made,
                     "index": args.index, "stand_in_embedder": args.stand_in_embedder,
                     "engine": engine_settings(settings)})


if __name__ == "__main__":
    main()
