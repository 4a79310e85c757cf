"""Find references against `grep -w` (issue 35): precision and recall over 50 names, and what the graph costs.

    python benchmarks/refs_accuracy.py --workspace $KE_BENCH_DATA/swe/pytest --data-dir /tmp/graph-data \
        [--names 50] [--seed 35] [--index-seconds S]

The workspace must be indexed into --data-dir already (`knowledge-explorer --data-dir D index W`); pass the
wall time that run took as --index-seconds to get the graph's share of it. Names are picked at random (fixed
seed) among the distinct names of the Python definitions (functions, classes, methods) the index holds.
For each, `grep -nw NAME` over the indexed Python files gives the lines that mention it; a definition's own
`def NAME` / `class NAME` line is not a use and is left out. Python's own tokenizer then marks which of those
lines have NAME as code (not only in a string or a comment): "grep, code only". Find references
(`Engine.references(NAME)`, every definition of the name) gives lines too. precision: its lines grep also
finds; recall: grep's lines it finds. Cost: the time services/indexing/chunking/graph.py takes over every
indexed file (the work the graph adds to an index run: one more parse and a walk), and the bytes of the
code graph's tables (the manifest copied, measured with and without them, after VACUUM).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import record  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.indexing.chunking.graph import file_uses  # noqa: E402
from services.storage import code_graph  # noqa: E402
from services.storage.workspace_index import WorkspaceIndex, workspace_root  # noqa: E402

DEFINED = "^\\s*(?:async\\s+)?(?:def|class)\\s+{}\\b"


def grep_lines(root: Path, files: list[str], name: str) -> set[tuple[str, int]]:
    """(path, line) of every line `grep -nw NAME` finds in the files."""
    found = set()
    for start in range(0, len(files), 500):
        done = subprocess.run(["grep", "-nwH", "-F", "--", name, *files[start:start + 500]], cwd=root,
                              capture_output=True, text=True)
        for line in done.stdout.splitlines():
            path, number, _ = line.split(":", 2)
            found.add((path, int(number)))
    return found


class CodeNames:
    """Per file and line, the names Python's tokenizer reads as code there (NAME tokens)."""

    def __init__(self, root: Path) -> None:
        self.root, self.cache = root, {}

    def lines(self, path: str) -> dict[int, set[str]]:
        if path not in self.cache:
            names: dict[int, set[str]] = {}
            text = (self.root / path).read_text(encoding="utf-8-sig", errors="replace")
            try:
                for token in tokenize.generate_tokens(io.StringIO(text).readline):
                    if token.type == tokenize.NAME:
                        names.setdefault(token.start[0], set()).add(token.string)
            except (tokenize.TokenError, SyntaxError, IndentationError):
                pass
            self.cache[path] = names
        return self.cache[path]

    def has(self, path: str, line: int, name: str) -> bool:
        return name in self.lines(path).get(line, set())


def definition_lines(root: Path, found: set[tuple[str, int]], name: str) -> set[tuple[str, int]]:
    pattern = re.compile(DEFINED.format(re.escape(name)))
    texts: dict[str, list[str]] = {}
    out = set()
    for path, line in found:
        lines = texts.setdefault(path, (root / path).read_text(encoding="utf-8-sig", errors="replace").split("\n"))
        if line <= len(lines) and pattern.match(lines[line - 1]):
            out.add((path, line))
    return out


def ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 1.0


async def accuracy(service, root: Path, names: list[str], defined: dict[str, int], files: list[str]):
    code = CodeNames(root)
    rows, misses = [], {}
    for name in names:
        answer = await service.references(name, root)
        ours = {(g.path, link.line) for g in answer.files for link in g.links if g.path.endswith(".py")}
        grep = grep_lines(root, files, name)
        grep -= definition_lines(root, grep, name)
        in_code = {(p, n) for p, n in grep if code.has(p, n, name)}
        rows.append({"name": name, "definitions": defined[name], "ours": len(ours), "grep": len(grep),
                     "code": len(in_code), "ours_in_grep": len(ours & grep), "found_grep": len(grep & ours),
                     "found_code": len(in_code & ours)})
        missed = sorted(in_code - ours)
        if missed:
            misses[name] = [f"{p}:{n}" for p, n in missed[:5]]
    return rows, misses


def summary(label: str, rows: list[dict]) -> dict:
    total = {k: sum(r[k] for r in rows) for k in ("ours", "grep", "code", "ours_in_grep", "found_grep", "found_code")}
    return {"names": label, "count": len(rows), "grep lines": total["grep"], "grep, code only": total["code"],
            "references": total["ours"], "precision": ratio(total["ours_in_grep"], total["ours"]),
            "recall (grep)": ratio(total["found_grep"], total["grep"]),
            "recall (grep, code only)": ratio(total["found_code"], total["code"]),
            "names with recall (code) < 0.95": sum(1 for r in rows if ratio(r["found_code"], r["code"]) < 0.95)}


def graph_bytes(manifest: Path) -> tuple[int, int]:
    """(manifest bytes, bytes the code graph's tables take), both after VACUUM of a copy."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "manifest.sqlite"
        with sqlite3.connect(manifest) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        db = sqlite3.connect(copy, isolation_level=None)
        db.execute("VACUUM")
        whole = copy.stat().st_size
        for table in code_graph.TABLES:
            db.execute(f"DROP TABLE {table}")
        db.execute("VACUUM")
        db.close()
        return whole, whole - copy.stat().st_size


def extraction_seconds(root: Path, records) -> float:
    started = time.perf_counter()
    for record_ in records:
        try:
            text = (root / record_.path).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
        file_uses(text, record_.language)
    return time.perf_counter() - started


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--names", type=int, default=50)
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--index-seconds", type=float, default=None, help="the wall time of the index run")
    parser.add_argument("--name", default="refs_accuracy", help="the results name (one per repository)")
    args = parser.parse_args()
    root = workspace_root(args.workspace)
    service = LocalEngine(data_dir=args.data_dir)
    try:
        index = WorkspaceIndex(root, Path(args.data_dir))
        catalog = index.catalog()
        assert catalog.graph.graph_ready(), "index the workspace first (knowledge-explorer --data-dir D index W)"
        records = list(catalog.files().values())
        files = sorted(r.path for r in records if r.language == "python")
        defined: dict[str, int] = {}
        seen = set()
        for path, language, _s, _e, symbol, qualified, kind in catalog.graph.definition_rows():
            if language == "python" and (path, qualified) not in seen:
                seen.add((path, qualified))
                defined[symbol] = defined.get(symbol, 0) + 1
        names = random.Random(args.seed).sample(sorted(n for n in defined if len(n) >= 2), args.names)
        rows, misses = await accuracy(service, root, names, defined, files)
        manifest_bytes, refs_bytes = graph_bytes(index.folder / "manifest.sqlite")
        index_bytes = index.size_bytes()
        seconds = extraction_seconds(root, records)
        graph_rows = catalog.graph.graph_rows()
    finally:
        service.close()
    once = [r for r in rows if r["definitions"] == 1]
    table = [summary("defined once", once), summary("defined more than once", [r for r in rows if r not in once]),
             summary("all", rows)]
    share_time = f"{seconds / args.index_seconds:.1%} of the {args.index_seconds:,.0f} s index run" \
        if args.index_seconds else "index run time not given"
    note = (f"graph: {graph_rows:,} rows, {refs_bytes / 2**20:.1f} MiB ({refs_bytes / index_bytes:.1%} of the "
            f"{index_bytes / 2**20:.0f} MiB index); extracting it {seconds:.1f} s ({share_time}); "
            f"{len(files):,} Python files")
    for row in table:
        print(row)
    print(note)
    record(args.name, table, settings={"workspace": str(root), "names": args.names, "seed": args.seed},
           figures={"per_name": rows, "missed_code_lines": misses, "graph_rows": graph_rows,
                    "graph_bytes": refs_bytes, "manifest_bytes": manifest_bytes, "index_bytes": index_bytes,
                    "extraction_seconds": round(seconds, 2), "index_seconds": args.index_seconds,
                    "files": len(records), "python_files": len(files)},
           uses_percentiles=False, note=note)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
