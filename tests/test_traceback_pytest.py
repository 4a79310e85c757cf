"""Issue 41 on the real engine and the real pytest snapshot: two bug reports pasted as they were filed, answered
as files by the default strategy with the repository's history cut at each report's `before`.

pytest-dev__pytest-7168 (INTERNALERROR in `__repr__`): its traceback names `src/_pytest/_io/saferepr.py` in 7
frames, the innermost project frames, through an installed copy's path; the fix is there. pytest-dev__pytest-7220
(paths shown relative to a changed directory): no frame names the fix, `src/_pytest/nodes.py` (not yet found: an
expected failure). The snapshot is cloned from /work/shared/benchmarks/swe/pytest/history.bundle (skipped
where that data is absent) and indexed whole with the default encoder: this takes minutes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from services.core.models import QueryOptions
from services.core.settings import DEFAULT_STRATEGY
from services.engine.service import LocalEngine

DATA = Path("/work/shared/benchmarks/swe/pytest")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (DATA / "history.bundle").exists(),
                                                   reason="the SWE pytest data is not on this machine")]


@pytest.fixture(scope="module")
def pytest_snapshot(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    folder = root / "pytest"
    subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(DATA / "history.bundle"), str(folder)], check=True)
    service = LocalEngine(data_dir=root / "data")
    try:
        yield service, folder
    finally:
        service.close()


def report(issue: str) -> dict:
    for line in (DATA / "queries.jsonl").read_text().splitlines():
        if json.loads(line)["id"] == issue:
            return json.loads(line)
    raise KeyError(issue)


async def answer(service, folder: Path, issue: str):
    await service.index(folder)
    asked = report(issue)
    options = QueryOptions(workspace=str(folder), strategy=DEFAULT_STRATEGY)  # what every face asks with
    return await service.find_files(asked["text"], options, 10, asked["before"])


async def test_a_traceback_s_innermost_project_file_comes_first(pytest_snapshot):
    service, folder = pytest_snapshot
    files = await answer(service, folder, "pytest-dev__pytest-7168")
    assert files.strategy == DEFAULT_STRATEGY == "auto"
    assert files.strategy_note.startswith("a traceback of 44 frames: ranking by bug-report")
    assert files.strategy_note.endswith("fused by rank with metadata's (20%)")
    first = files.files[0]
    assert first.path == "src/_pytest/_io/saferepr.py"
    notes = {s.name: s.note for s in first.signals}
    assert notes["traceback"] == "named in 7 traceback frames, innermost"


@pytest.mark.xfail(strict=True, reason="issue 41's goal not met: no frame names nodes.py and no shipped signal finds it "
                   "(crediting a test file's score to the module it tests put it first here, but cost Sphinx and "
                   "xarray 0.02-0.03 MRR@10: every leave-one-repository-out fold chose weight 0)")
async def test_a_report_whose_fix_no_frame_names_finds_nodes_py_in_the_top_3(pytest_snapshot):
    service, folder = pytest_snapshot
    files = await answer(service, folder, "pytest-dev__pytest-7220")
    top = [f.path for f in files.files[:3]]
    assert "src/_pytest/nodes.py" in top, top
