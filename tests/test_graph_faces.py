"""Find references / uses through the real faces: `knowledge-explorer refs` and `uses` (their --json is the REST
JSON), the REST routes of a real `serve` process, and MCP's find_references and find_uses in a real client session."""

from __future__ import annotations

import subprocess

import httpx
import jsonschema
import pytest

from app.render import MCP_FIELDS
from tests.helpers.engine_server import ROOT, cli, env
from tests.test_faces import run_cli, snapshot, subset, without

pytestmark = pytest.mark.slow


def test_cli_refs_and_uses_json_is_the_rest_json_and_the_text_lists_each_use(served_workspace):
    workspace, data_dir, key = str(served_workspace["workspace"]), str(served_workspace["data_dir"]), served_workspace["id"]
    with httpx.Client(base_url=served_workspace["url"], timeout=300) as client:
        for command, direction, name in [("refs", "references", "tokenize_query"), ("uses", "uses", "SearchEngine.score")]:
            rest = client.get(f"/v1/workspaces/{key}/graph/{direction}", params={"q": name}).json()
            mine = run_cli(command, workspace, name, "--data-dir", data_dir)
            assert without(mine, "timings_ms") == without(rest, "timings_ms") and rest["direction"] == direction
            jsonschema.validate(rest, snapshot("graph_answer"))
        bad = client.get(f"/v1/workspaces/{key}/graph/references", params={"q": " "})
        assert bad.status_code == 400 and bad.json()["error"]["message"] == "Type a name to go to: the name is empty."
    text = subprocess.run(cli("refs", workspace, "tokenize_query", "--data-dir", data_dir), cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == ["function tokenize_query (notes/search.py:16)", "notes/__init__.py",
                                        "       4  import    in __init__",
                                        "       7  text      in __init__",  # a mention: the name in `__all__`
                                        "notes/search.py",
                                        "      38  call      in SearchEngine.search",
                                        "      47  call      in SearchEngine.score",
                                        "      48  call      in SearchEngine.score", "(5 uses in 2 files)"]
    missing = subprocess.run(cli("refs", workspace, "Frobnicate", "--data-dir", data_dir), cwd=ROOT, env=env(),
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1 and missing.stdout.strip() == "No symbol named 'Frobnicate' in the index."


async def test_mcp_find_references_and_find_uses_return_the_documented_subset(served_workspace):
    from mcp import Client

    key = served_workspace["id"]
    async with httpx.AsyncClient(base_url=served_workspace["url"], timeout=300) as client:
        refs = (await client.get(f"/v1/workspaces/{key}/graph/references", params={"q": "tokenize_query"})).json()
        uses = (await client.get(f"/v1/workspaces/{key}/graph/uses", params={"q": "SearchEngine.score"})).json()
    async with Client(served_workspace["url"] + "/mcp", read_timeout_seconds=300) as mcp:
        found = (await mcp.call_tool("find_references", {"name": "tokenize_query", "workspace": key})).structured_content
        used = (await mcp.call_tool("find_uses", {"name": "SearchEngine.score", "workspace": key})).structured_content
    assert found == subset(refs, MCP_FIELDS["find_references"][1]) and found["total"] == 5
    assert used == subset(uses, MCP_FIELDS["find_uses"][1])
    assert "tokenize_query" in {link["qualified_name"] for group in used["files"] for link in group["links"]}
    jsonschema.validate(found, snapshot("mcp_find_references"))
    jsonschema.validate(used, snapshot("mcp_find_uses"))
