"""Benchmark figures: a run is recorded as dated JSON and the README's tables are generated from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.lib import PERCENTILE, percentile, record
from benchmarks.report import regenerate

ROOT = Path(__file__).resolve().parents[1]
README = """# Notes
Written by hand.
<!-- results: demo -->
stale table
<!-- /results: demo -->
<!-- results: never_run -->
<!-- /results: never_run -->
"""


def test_a_recorded_run_says_what_it_depends_on(tmp_path):
    path = record("demo", [{"strategy": "none", "p95 ms": 12.5}], settings={"top_k": 10}, folder=tmp_path)
    data = json.loads(path.read_text())
    assert path.name.startswith("demo-20") and path.suffix == ".json"
    assert data["machine"]["nproc"] == os.cpu_count() and len(data["machine"]["loadavg_1_5_15"]) == 3
    assert len(data["commit"].split("+")[0]) == 40  # this checkout's HEAD
    assert data["settings"] == {"top_k": 10} and data["percentile"] == PERCENTILE
    assert data["table"] == [{"strategy": "none", "p95 ms": 12.5}]


def test_the_readme_table_comes_from_the_newest_run_and_the_text_around_it_stays(tmp_path):
    record("demo", [{"strategy": "none", "p95 ms": 99}], settings={}, folder=tmp_path)
    newer = tmp_path / "demo-2999-01-01.json"
    data = json.loads(next(tmp_path.glob("demo-*.json")).read_text())
    newer.write_text(json.dumps({**data, "measured_at": "2999-01-01T00:00:00+00:00",
                                 "table": [{"strategy": "none", "p95 ms": 12.5}]}))
    text = regenerate(README, tmp_path)
    assert "stale table" not in text and "| none | 12.5 |" in text and "| none | 99 |" not in text
    assert "measured 2999-01-01" in text and text.startswith("# Notes\nWritten by hand.\n")
    assert "_No recorded run of `never_run` yet._" in text


def test_percentiles_interpolate_between_ranks():
    assert percentile([10.0, 20.0], 50) == 15.0
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_benchmarks_readme_shows_the_recorded_results():
    checked = subprocess.run([sys.executable, "benchmarks/report.py", "--check"], cwd=ROOT,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert checked.returncode == 0, checked.stderr
