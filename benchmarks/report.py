"""Regenerate the tables of benchmarks/README.md and benchmarks/experiments/README.md from the newest recorded runs.

    python benchmarks/report.py           # rewrite the tables in place
    python benchmarks/report.py --check   # exit 1 when a README is not what the results give

A table lives between `<!-- results: NAME -->` and `<!-- /results: NAME -->`; NAME's newest
benchmarks/results/NAME-<date>.json (benchmarks/lib.record) fills it. Text outside the markers is kept.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
READMES = (HERE / "README.md", HERE / "experiments" / "README.md")
RESULTS = HERE / "results"
BLOCK = re.compile(r"(<!-- results: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results: (?P=name) -->)", re.S)


def newest(name: str, folder: Path = RESULTS) -> dict | None:
    runs = [json.loads(p.read_text()) for p in folder.glob(f"{name}-*.json")]
    runs = [r for r in runs if r.get("benchmark") == name]
    return max(runs, key=lambda r: r["measured_at"]) if runs else None


def cell(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "\\|")


def table(rows: list[dict]) -> list[str]:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return lines


def tables(rows: list[dict]) -> list[str]:
    """One table, or, when every row names its `table`, one per name under it as a heading."""
    if not rows or not all("table" in row for row in rows):
        return table(rows)
    lines: list[str] = []
    for name in dict.fromkeys(row["table"] for row in rows):
        group = [{k: v for k, v in row.items() if k != "table" and v is not None} for row in rows if row["table"] == name]
        lines += ["", f"**{name}**", ""] + table(group)
    return lines[1:]


def caption(run: dict) -> str:
    machine = run["machine"]
    load = "/".join(f"{x:g}" for x in machine["loadavg_1_5_15"])
    settings = ", ".join(f"{k} {v}" for k, v in run["settings"].items() if k != "engine" and v not in (None, ""))
    commit = run["commit"][:12] + (" with uncommitted changes" if run["commit"].endswith("+changes") else "")
    parts = [f"measured {run['measured_at'][:10]} at commit {commit}",
             f"load {load} (1/5/15 min) on {machine['nproc']} cores", f"`{run['command']}`"]
    if settings:
        parts.append(settings)
    if run.get("percentile"):
        parts.append("percentiles interpolated (benchmarks/lib.py)")
    return "_" + "; ".join(parts) + "._"


def render(name: str, folder: Path = RESULTS) -> str:
    run = newest(name, folder)
    if run is None:
        return f"_No recorded run of `{name}` yet._\n"
    lines = [caption(run), ""]
    if run.get("note"):
        lines[0] = lines[0][:-2] + f"; {run['note']}._"
    lines += tables(run["table"])
    return "\n".join(lines) + "\n"


def regenerate(text: str, folder: Path = RESULTS) -> str:
    """`text` with every marked table filled from the newest run in `folder`."""
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("name"), folder) + m.group(4), text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the README is up to date")
    args = parser.parse_args()
    stale = []
    for readme in READMES:
        current = readme.read_text()
        wanted = regenerate(current)
        if wanted == current:
            continue
        stale.append(readme.relative_to(HERE.parent))
        if not args.check:
            readme.write_text(wanted)
            print(f"wrote {readme} ({len(BLOCK.findall(wanted))} tables)")
    if args.check and stale:
        print(f"{', '.join(map(str, stale))} out of date: run python benchmarks/report.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
