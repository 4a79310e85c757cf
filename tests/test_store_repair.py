"""Every store the engine keeps has a check and a repair (issue 50, items 4 and the owner file): a damaged
`history.sqlite` is set aside and read again from git, health names the repair, and nothing answers 500
meanwhile; a busy one is not damage and is left as it is; a garbled owner file never stops the engine.

Real parts: git repositories, the CLI in child processes, the engine served on 127.0.0.1 (httpx), a second
process holding SQLite's lock."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers.engine_server import ROOT, cli, env, index_and_wait, register, start_server, stop_server

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]  # processes and a server; the model is not the point
GARBAGE = b"garbage " * 1000


def commit(folder: Path, message: str) -> None:
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "."], cwd=folder, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", message],
                   cwd=folder, check=True)


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*map(str, args)), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)


def history_file(data: Path) -> Path:
    [found] = data.glob("workspaces/*/history.sqlite")
    return found


@pytest.fixture
def indexed_repository(tmp_path):
    """(workspace, data dir): a git repository of one commit, indexed by the CLI."""
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "a.py").write_text("def add(a, b):\n    return a + b\n")
    commit(workspace, "add numbers")
    done = run("index", workspace, "--data-dir", tmp_path / "data")
    assert done.returncode == 0, done.stderr
    return workspace, tmp_path / "data"


def test_a_damaged_history_is_set_aside_and_read_again_from_git(indexed_repository):
    """`health` exited 1 "DatabaseError: file is not a database", and `index` left it broken."""
    workspace, data = indexed_repository
    history = history_file(data)
    history.write_bytes(GARBAGE)
    health = run("health", workspace, "--data-dir", data)
    assert health.returncode == 0, health.stderr
    assert "history: none (its file was damaged: the next index run reads it again from git)" in health.stdout
    assert ("repaired: history: history.sqlite is not an SQLite database (its header is not SQLite's): set aside "
            "as history.sqlite.damaged; the next index run reads it again from git") in health.stdout
    assert history.with_name("history.sqlite.damaged").read_bytes() == GARBAGE  # proof kept, nothing deleted
    assert run("index", workspace, "--data-dir", data).returncode == 0
    health = run("health", workspace, "--data-dir", data)
    assert "history: 1 commit up to" in health.stdout and "; rebuilt from git" in health.stdout, health.stdout


LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("INSERT OR REPLACE INTO meta VALUES ('held', '1')")
print("locked", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


def test_a_busy_history_is_not_damage_and_is_left_as_it_is(indexed_repository):
    workspace, data = indexed_repository
    history = history_file(data)
    before = history.read_bytes()
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(history)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout.readline() == "locked\n"
        health = run("health", workspace, "--data-dir", data)
    finally:
        locker.stdin.close()
        locker.wait(timeout=60)
    assert health.returncode == 0, health.stderr
    assert "history: cannot be read now (database is locked): nothing was changed" in health.stdout, health.stdout
    assert "repaired" not in health.stdout and not history.with_name("history.sqlite.damaged").exists()
    assert history.read_bytes() == before
    assert "history: 1 commit up to" in run("health", workspace, "--data-dir", data).stdout


def test_a_damaged_history_answers_every_rest_request_and_is_repaired(indexed_repository, tmp_path):
    """REST `health`, `files` and `tuned` queries answered 500 on a damaged history, MCP "Error executing tool"."""
    workspace, data = indexed_repository
    history_file(data).write_bytes(GARBAGE)
    with contextlib.closing(iter(served_on(data, tmp_path))) as server:
        url = next(server)
        with httpx.Client(base_url=url, timeout=300) as http:
            key = register(http, workspace)
            tool = asyncio.run(mcp_call(url, "search", {"question": "add numbers", "workspace": str(workspace),
                                                        "strategy": "tuned"}))
            assert not tool.is_error and "a.py" in tool.content[0].text, tool.content[0].text  # was "Error executing tool"
            answers = [http.post(f"/v1/workspaces/{key}/query", json={"question": "add numbers", "strategy": "tuned"}),
                       http.post(f"/v1/workspaces/{key}/files", json={"question": "add numbers"}),
                       http.get(f"/v1/workspaces/{key}/health")]
            assert [a.status_code for a in answers] == [200, 200, 200], [a.text for a in answers]
            assert answers[0].json()["results"][0]["chunk"]["path"] == "a.py"
            assert answers[2].json()["repaired"] == [
                "history: history.sqlite is not an SQLite database (its header is not SQLite's): set aside as "
                "history.sqlite.damaged; the next index run reads it again from git"]
            assert index_and_wait(http, key)["state"] == "done"
            assert http.get(f"/v1/workspaces/{key}/health").json()["history_commits"] == 1


async def mcp_call(url: str, name: str, arguments: dict):
    from mcp import Client

    async with Client(url + "/mcp", read_timeout_seconds=120) as mcp:
        return await mcp.call_tool(name, arguments)


def served_on(data: Path, root: Path):
    """A real `serve` process on `data` (allowed under `root`): yields its URL."""
    process, url = start_server(data, root / "server.log", "--allow-root", str(root))
    try:
        yield url
    finally:
        stop_server(process)


@pytest.mark.parametrize("garbled", [b"{not json", b"[1, 2, 3]", b'{"pid": 1e999, "since": "x", "kind": "cli"}',
                                     b'{"pid": 99999999999999999999999, "since": "x", "kind": "cli"}', b"\xff\xfe",
                                     b'{"pid": "12", "since": [], "kind": {}}'])
def test_a_garbled_owner_file_is_replaced_and_never_stops_the_engine(tmp_path, garbled):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.py").write_text("def add(a, b):\n    return a + b\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "owner.json").write_bytes(garbled)
    health = run("health", workspace, "--data-dir", data)
    assert health.returncode == 0 and "not indexed" in health.stdout, health.stdout + health.stderr
    assert not (data / "owner.json").exists() or json.loads((data / "owner.json").read_text())["kind"] == "cli"

