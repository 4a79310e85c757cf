"""Write a benchmark's figures as dated JSON: benchmarks/results/<name>-<YYYY-MM-DD>.json.

Every benchmark calls `record(...)` once at the end; `benchmarks/report.py` turns the newest file of
each benchmark into the tables of benchmarks/README.md. A file holds the figures and what they depend
on: the commit (and whether the tree had changes), the machine's load and cores, the settings used,
and how percentiles were computed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
PERCENTILE = ("pXX = linear interpolation between the two closest ranks of the sorted values "
              "(statistics.quantiles(values, n=100, method='inclusive'), numpy's default)")


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (1..99) as PERCENTILE defines it; the value itself for one value."""
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def commit() -> str:
    """HEAD's hash, with "+changes" when the work tree differs from it; "unknown" outside git.
    KE_RECORD_COMMIT names it where the tree travelled without its history (a GPU machine's copy)."""
    if os.environ.get("KE_RECORD_COMMIT"):
        return os.environ["KE_RECORD_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


STARTED_AT = commit()  # the code the run starts with (the tree may change while a long run goes on)


def engine_settings(settings=None) -> dict:
    """The engine's settings as plain values (Settings() when none given)."""
    if settings is None:
        from services.core.settings import Settings
        settings = Settings()
    if hasattr(settings, "model_dump"):
        return settings.model_dump(mode="json")
    import dataclasses
    return json.loads(json.dumps(dataclasses.asdict(settings), default=str))


def machine() -> dict:
    return {"loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()], "nproc": os.cpu_count(),
            "platform": platform.platform(), "python": platform.python_version()}


def portable(value):
    """Paths inside the repository as relative paths, so that results read the same on any checkout."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith(str(ROOT) + os.sep):
        return os.path.relpath(value, ROOT)
    return value


def record(name: str, table: list[dict], *, settings: dict, figures: dict | None = None,
           uses_percentiles: bool = True, note: str = "", folder: Path = RESULTS) -> Path:
    """Write the results of benchmark `name`: `table` (rows of column -> value, shown in the README),
    `figures` (anything else worth keeping) and the `settings` the run used. Returns the file."""
    now = dt.datetime.now(dt.timezone.utc)
    data = {
        "benchmark": name, "measured_at": now.isoformat(timespec="seconds"), "commit": STARTED_AT,
        "machine": machine(), "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "settings": portable(settings), "percentile": PERCENTILE if uses_percentiles else None,
        "note": note, "table": portable(table), "figures": figures or {},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{now.date().isoformat()}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"recorded {portable(str(path))}")
    return path
