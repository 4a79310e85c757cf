"""Every face refuses the same bad input the same way, and the CLI prints file names safely (issue 31, item 7).

Real parts: the app served by uvicorn in a thread, httpx, the MCP SDK's client over /mcp, `python -m app.cli`
processes (the real model and Chroma where they index).
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.helpers.engine_server import ROOT, cli, env, one_file_server

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, workspace id, workspace folder) on an un-warmed engine (no model: every refusal comes first)."""
    with one_file_server(tmp_path_factory.mktemp("refusals"), "a.py", "def a():\n    return 1\n") as (
            url, key, _service, workspace):
        yield url, key, workspace


def refusal(response: httpx.Response) -> tuple[int, str]:
    assert "Traceback" not in response.text
    return response.status_code, response.json()["error"]["code"]


def test_files_refuses_an_unknown_language_as_query_and_mcp_do(server):
    from mcp import Client

    url, key, workspace = server
    body = {"question": "add numbers", "languages": ["klingon"]}
    query = httpx.post(f"{url}/v1/workspaces/{key}/query", json=body)
    files = httpx.post(f"{url}/v1/workspaces/{key}/files", json=body)
    assert refusal(files) == refusal(query) == (400, "bad_request")
    assert files.json()["error"]["message"] == query.json()["error"]["message"]

    async def tool():
        async with Client(url + "/mcp", read_timeout_seconds=60) as mcp:
            return await mcp.call_tool("find_files", {"question": "add numbers", "workspace": str(workspace),
                                                      "languages": ["klingon"]})

    answer = asyncio.run(tool())
    assert answer.is_error and answer.content[0].text.endswith(query.json()["error"]["message"])


@pytest.mark.parametrize("path", ["a\x00b.py", "../../etc/passwd", "/etc/passwd", "a/" * 450_000])
def test_a_label_path_is_refused_as_file_refuses_it(server, path):
    url, key, _ = server
    label = httpx.put(f"{url}/v1/workspaces/{key}/labels", json={"question": "add", "path": path})
    read = httpx.get(f"{url}/v1/workspaces/{key}/file", params={"path": path}) if len(path) < 4096 else label
    assert refusal(label) == refusal(read) == (400, "path_escape")
    assert httpx.get(f"{url}/v1/workspaces/{key}/labels", params={"question": "add"}).json()["labels"] == []


def test_a_label_symbol_with_control_characters_is_refused(server):
    url, key, _ = server
    label = httpx.put(f"{url}/v1/workspaces/{key}/labels",
                      json={"question": "add", "path": "a.py", "symbol": "a\x00\x1b]0;x\x07"})
    assert refusal(label) == (400, "bad_request") and "control characters" in label.json()["error"]["message"]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run(cli(*map(str, args)), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=600)


def test_the_cli_prints_file_names_with_their_control_characters_escaped(tmp_path):
    workspace, data = tmp_path / "workspace", tmp_path / "data"
    workspace.mkdir()
    title = "title\x1b]0;pwned\x07.py"  # an OSC sequence that sets the terminal's title
    fake = "fake\n  1.   0.999 (orig 0.999, was      1)  passwords.py:1-9  function steal.py"
    for name in (title, fake):
        (workspace / name).write_text("def zanzibar_quokka(items):\n    '''Count the quokkas.'''\n    return items\n")
    assert run("index", workspace, "--data-dir", data).returncode == 0
    for args in (("query", workspace, "count the quokkas"), ("goto", workspace, "zanzibar_quokka"),
                 ("query", workspace, "count the quokkas", "--files")):
        done = run(*args, "--data-dir", data)
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout
        assert "title\\x1b]0;pwned\\x07.py" in done.stdout and "fake\\n  1." in done.stdout
        assert not any(line.startswith("  1.   0.999") for line in done.stdout.splitlines())


@pytest.mark.parametrize("arguments", [["query"], ["query", ".", "q", "--top-k", "many"], ["index", "--bogus", "."],
                                       ["health", ".", "--json", "extra"]])
def test_an_argument_error_is_one_line_and_exit_2(tmp_path, arguments):
    done = run(*arguments, "--data-dir", tmp_path / "data")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and " -h)" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout
