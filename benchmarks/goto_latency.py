"""Go to symbol / go to file latency over a 40,000-chunk catalogue (issue 30: < 50 ms p95 a keystroke).

    python benchmarks/goto_latency.py [--chunks 40000] [--names 300] [--seed 7]

A catalogue of generated Python-like files (CamelCase classes with snake_case methods, module functions,
paths a few folders deep) is written with the real Catalog; then, as a user typing, every prefix of
sampled names and paths is asked (`F`, `Fi`, `Fix`, ...), plus their camel-hump initials and a dotted
`Class.method`, through services.retrieval.goto with the finders kept per catalogue version, as the
engine keeps them. The first question after a write builds the finders (reads the names, no text):
timed apart as "build".
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import percentile, record  # noqa: E402
from services.core.models import Chunk  # noqa: E402
from services.retrieval.goto import Finders, goto_files, goto_symbols, initials  # noqa: E402
from services.storage.catalog import Catalog, FileRecord  # noqa: E402

BUDGET_MS = 50.0
WORDS = ("fixture manager request node config parser token session cache store index query chunk report "
         "plugin hook item collect runner option path file module test mark capture output error warning "
         "context scope value result loader builder writer reader event handler client server").split()
FOLDERS = ("src", "lib", "core", "utils", "plugins", "tests", "internal", "api", "io", "text")


def generated_files(chunks: int, rng: random.Random):
    """(path, [Chunk]) until `chunks` chunks: per file a module chunk, classes with methods, functions."""
    made, number = 0, 0
    while made < chunks:
        number += 1
        depth = rng.randint(1, 4)
        folder = "/".join(rng.choice(FOLDERS) for _ in range(depth))
        path = f"{folder}/{rng.choice(WORDS)}_{rng.choice(WORDS)}_{number}.py"
        items, line = [], 1
        for _ in range(rng.randint(2, 6)):
            cls = "".join(w.title() for w in rng.sample(WORDS, rng.randint(1, 3)))
            items.append((cls, cls, "class", line, line + 40))
            for _ in range(rng.randint(1, 5)):
                method = "_".join(rng.sample(WORDS, rng.randint(1, 3)))
                line += 6
                items.append((method, f"{cls}.{method}", "method", line, line + 5))
            line += 44
        for _ in range(rng.randint(0, 4)):
            function = "_".join(rng.sample(WORDS, rng.randint(1, 3)))
            items.append((function, function, "function", line, line + 8))
            line += 10
        file_chunks = [chunk(path, "module", "module", 1, line, "")]
        file_chunks += [chunk(path, symbol, kind, start, end, qualified) for symbol, qualified, kind, start, end in items]
        made += len(file_chunks)
        yield path, file_chunks


def chunk(path, symbol, kind, start, end, qualified) -> Chunk:
    content = f"# {kind} {symbol}\n"
    return Chunk(path=path, language="python", start_line=start, end_line=end, content=content, symbol=symbol,
                 qualified_name=qualified or symbol, kind=kind,
                 content_hash=hashlib.blake2b(f"{path}{start}{content}".encode(), digest_size=8).hexdigest())


def build_catalogue(folder: Path, chunks: int, seed: int) -> tuple[Catalog, int, int]:
    catalog = Catalog(folder / "manifest.sqlite")
    rng = random.Random(seed)
    files = made = 0
    for path, file_chunks in generated_files(chunks, rng):
        record_ = FileRecord(path, hashlib.blake2b(path.encode()).hexdigest(), 1000, 0, "python")
        catalog.commit_file(record_, file_chunks)
        files, made = files + 1, made + len(file_chunks)
    return catalog, files, made


def typed(text: str) -> list[str]:
    """What a user types on the way to `text`: each prefix (the first keystroke alone too)."""
    return [text[:n] for n in range(1, len(text) + 1)]


def questions(catalog: Catalog, count: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed + 1)
    definitions = catalog.definition_rows()
    symbols = []
    for row in rng.sample(definitions, count):
        symbol, qualified = row[4], row[5]
        symbols += typed(symbol) + [initials(symbol)]
        if "." in qualified:
            symbols.append(qualified)
    files = []
    for path, _, _ in rng.sample(catalog.file_spans(), count):
        name = path.rsplit("/", 1)[-1]
        files += typed(name) + [path, f"{name}:120"]
    return symbols, files


def timed(ask, finders, catalog, asked: list[str]) -> list[float]:
    out = []
    for text in asked:
        started = time.perf_counter()
        ask(finders, catalog, text, 20)
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=40_000)
    parser.add_argument("--names", type=int, default=300, help="names and paths sampled (each typed out)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ke-goto-") as folder:
        started = time.perf_counter()
        catalog, files, chunks = build_catalogue(Path(folder), args.chunks, args.seed)
        print(f"catalogue: {files:,} files, {chunks:,} chunks ({time.perf_counter() - started:.1f} s to write)")
        symbols, paths = questions(catalog, args.names, args.seed)
        rows, figures = [], {}
        for target, ask, asked in (("symbols", goto_symbols, symbols), ("files", goto_files, paths)):
            finders = Finders()
            started = time.perf_counter()
            ask(finders, catalog, "s", 20)  # a first keystroke: builds the finder of this catalogue version
            build_ms = (time.perf_counter() - started) * 1000
            times = timed(ask, finders, catalog, asked)
            p50, p95 = percentile(times, 50), percentile(times, 95)
            print(f"goto_{target}: {len(asked):,} questions, p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
                  f"max {max(times):.2f} ms; first question (builds the list) {build_ms:.0f} ms")
            rows.append({"method": f"goto_{target}", "questions": len(asked), "p50 ms": round(p50, 2),
                         "p95 ms": round(p95, 2), "max ms": round(max(times), 2),
                         "build ms (once per index version)": round(build_ms, 1), "budget p95 ms": BUDGET_MS})
            figures[target] = {"build_ms": build_ms, "times_ms_sorted": sorted(round(t, 3) for t in times)}
        catalog.close()
    record("goto_latency", rows, settings={"chunks": chunks, "files": files, "names": args.names, "seed": args.seed},
           figures=figures, note="generated catalogue, in-process (no transport)")
    return 0 if all(row["p95 ms"] < BUDGET_MS for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
