"""A file replaced by a symlink leading out of the workspace (issue 31, "stale forever"): its old chunks
leave the index, with `index` and with `index --full`, and `health` is up to date afterwards.

Real parts: `python -m app.cli` processes over a real data dir (real Chroma, the real model).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.engine_server import ROOT, cli, env

pytestmark = pytest.mark.stand_in_encoder  # watching and indexing are tested, not the model

FILES = {"keep.py": "def add(a, b):\n    '''Add two numbers.'''\n    return a + b\n",
         "swap.py": "def zanzibar_quokka(items):\n    '''Count the quokkas of Zanzibar.'''\n    return len(items)\n"}


def run(*args) -> subprocess.CompletedProcess:
    done = subprocess.run(cli(*map(str, args)), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def health(workspace: Path, data: Path) -> dict:
    done = run("health", workspace, "--data-dir", data, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("full", [False, True], ids=["index", "index --full"])
def test_a_file_replaced_by_a_symlink_out_of_the_workspace_leaves_the_index(tmp_path, full):
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    workspace.mkdir()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    assert run("index", workspace, "--data-dir", data).returncode == 0
    assert health(workspace, data)["files"] == 2

    (workspace / "swap.py").unlink()
    (workspace / "swap.py").symlink_to("/etc/passwd")
    assert health(workspace, data)["state"] == "stale"

    done = run("index", workspace, "--data-dir", data, *(["--full"] if full else []))
    assert done.returncode == 0, done.stderr
    after = health(workspace, data)
    assert after["state"] == "ready" and after["files"] == 1 and not after["stale_files"], after
    assert [s["path"] for s in after["skipped"]] == ["swap.py"]  # said, not indexed
    answer = run("query", workspace, "count the quokkas of zanzibar", "--data-dir", data, "--json")
    assert answer.returncode == 0 and "swap.py" not in answer.stdout and "root:x:0" not in answer.stdout
