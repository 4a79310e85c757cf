"""Go to symbol / file through the real faces: `knowledge-explorer goto` (its --json is the REST JSON), the
REST routes of a real `serve` process, and MCP's find_symbol, find_file and open_file in a real client session."""

from __future__ import annotations

import subprocess

import httpx
import jsonschema
import pytest

from app.render import MCP_FIELDS
from tests.helpers.engine_server import ROOT, cli, env
from tests.test_faces import run_cli, snapshot, subset, without

pytestmark = pytest.mark.slow


def goto_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(cli("goto", *args), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)


def test_cli_goto_json_is_the_rest_json(served_workspace):
    workspace, data_dir, key = str(served_workspace["workspace"]), str(served_workspace["data_dir"]), served_workspace["id"]
    with httpx.Client(base_url=served_workspace["url"], timeout=300) as client:
        for name, target in [("Note", "symbols"), ("NoteStore.save", "symbols"), ("store.py:40", "files")]:
            rest = client.get(f"/v1/workspaces/{key}/goto/{target}", params={"q": name, "limit": 10}).json()
            mine = run_cli("goto", workspace, name, "--data-dir", data_dir)  # a path-like name goes to files
            assert without(mine, "timings_ms") == without(rest, "timings_ms") and rest["target"] == target
            jsonschema.validate(rest, snapshot("goto_answer"))
        bad = client.get(f"/v1/workspaces/{key}/goto/symbols", params={"q": " "})
        assert bad.status_code == 400 and bad.json()["error"]["message"] == "Type a name to go to: the name is empty."


def test_cli_goto_text_lists_each_definition_with_its_path(served_workspace):
    workspace, data_dir = str(served_workspace["workspace"]), str(served_workspace["data_dir"])
    twice = goto_cli(workspace, "Note", "--limit", "2", "--data-dir", data_dir)
    assert twice.returncode == 0, twice.stderr
    assert twice.stdout.splitlines()[:2] == ["  1. class Note  notes/models.py:12-29  (python)",
                                             "  2. class Note  java/src/main/java/notes/Note.java:3-10  (java)"]
    opened = goto_cli(workspace, "store.py:40", "--data-dir", data_dir)
    assert opened.stdout.splitlines()[0] == "  1. notes/store.py:40  (python)"
    missing = goto_cli(workspace, "Frobnicate", "--data-dir", data_dir)
    assert missing.returncode == 1 and missing.stdout.strip() == "No symbol named 'Frobnicate'."


async def test_mcp_find_symbol_find_file_and_open_file(served_workspace):
    from mcp import Client

    key = served_workspace["id"]
    async with httpx.AsyncClient(base_url=served_workspace["url"], timeout=300) as client:
        rest = (await client.get(f"/v1/workspaces/{key}/goto/symbols", params={"q": "Note", "limit": 5})).json()
        rest_files = (await client.get(f"/v1/workspaces/{key}/goto/files", params={"q": "store.py:40",
                                                                                  "limit": 5})).json()
    async with Client(served_workspace["url"] + "/mcp", read_timeout_seconds=300) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        symbol = (await mcp.call_tool("find_symbol", {"name": "Note", "workspace": key, "limit": 5})).structured_content
        file = (await mcp.call_tool("find_file", {"path": "store.py:40", "workspace": key, "limit": 5})).structured_content
        hit = symbol["hits"][0]
        opened = (await mcp.call_tool("open_file", {"path": hit["path"], "workspace": key,
                                                    "start_line": hit["start_line"], "end_line": hit["end_line"]}))
        escape = await mcp.call_tool("open_file", {"path": "../../etc/passwd", "workspace": key})
        nothing = (await mcp.call_tool("find_symbol", {"name": "Frobnicate", "workspace": key})).structured_content
    assert {"find_symbol", "find_file", "open_file"} <= names
    assert symbol == subset(rest, MCP_FIELDS["find_symbol"][1]) and file == subset(rest_files, MCP_FIELDS["find_file"][1])
    assert [(h["path"], h["language"]) for h in symbol["hits"][:2]] == [("notes/models.py", "python"),
                                                                       ("java/src/main/java/notes/Note.java", "java")]
    text = opened.structured_content
    assert (text["start_line"], text["end_line"]) == (12, 29) and text["text"].startswith("@dataclass")
    assert "class Note" in text["text"] and len(text["text"].splitlines()) == 18
    assert escape.is_error and "not a relative path inside the workspace" in escape.content[0].text
    assert nothing["hits"] == [] and nothing["message"] == "No symbol named 'Frobnicate'."
    for name, value in [("mcp_find_symbol", symbol), ("mcp_find_file", file)]:
        jsonschema.validate(value, snapshot(name))
