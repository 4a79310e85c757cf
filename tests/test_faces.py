"""Every face answers alike: CLI `--json` = REST JSON, MCP a documented subset of it, and the JSON schema
of every face's output is pinned in tests/snapshots/.

Regenerate the snapshots after a deliberate change of the models:
    PYTHONPATH=. python -m tests.test_faces
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import jsonschema
import pytest

from app.render import MCP_FIELDS, schemas
from tests.helpers.engine_server import ROOT, cli, env, index_and_wait

SNAPSHOTS = Path(__file__).parent / "snapshots"
REGENERATE = "PYTHONPATH=. python -m tests.test_faces"


def snapshot(name: str) -> dict:
    return json.loads((SNAPSHOTS / f"{name}.json").read_text())


def write_snapshots() -> None:
    SNAPSHOTS.mkdir(exist_ok=True)
    for name, schema in schemas().items():
        (SNAPSHOTS / f"{name}.json").write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")


def test_every_output_schema_matches_its_snapshot():
    current = schemas()
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.json")) == sorted(current), f"regenerate: {REGENERATE}"
    for name, schema in current.items():
        assert schema == snapshot(name), f"the JSON of {name} changed; if meant, regenerate: {REGENERATE}"


def subset(data, fields):
    """`data` cut to `fields` (app.render.MCP_FIELDS' form), written here independently of pydantic."""
    if fields is True:
        return data
    if isinstance(data, list):
        return [subset(item, fields["__all__"]) for item in data]
    return {name: subset(data[name], sub) for name, sub in fields.items()}


def without(data: dict, *keys: str) -> dict:
    return {k: v for k, v in data.items() if k not in keys}


def run_cli(*args: str):
    """`knowledge-explorer ARGS --json` in a subprocess; through the running server (it owns the data dir)."""
    done = subprocess.run(cli(*args, "--json"), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_cli_json_is_the_rest_json_for_query_health_index_and_strategies(served_workspace):
    workspace, data_dir, key = str(served_workspace["workspace"]), str(served_workspace["data_dir"]), served_workspace["id"]
    question = "what implements ChunkStore"
    with httpx.Client(base_url=served_workspace["url"], timeout=300) as client:
        # no strategy given on either side: the same default strategy too
        rest = client.post(f"/v1/workspaces/{key}/query", json={"question": question, "top_k": 5}).json()
        mine = run_cli("query", workspace, question, "--top-k", "5", "--data-dir", data_dir)
        assert without(mine, "timings_ms", "cache_hit") == without(rest, "timings_ms", "cache_hit")
        assert rest["results"] and rest["results"][0]["chunk"]["path"] and rest["original"]

        health = run_cli("health", workspace, "--data-dir", data_dir)
        assert health == client.get(f"/v1/workspaces/{key}/health").json() and health["indexed"]

        report = run_cli("index", workspace, "--data-dir", data_dir)
        status = index_and_wait(client, key)
        assert without(report, "seconds") == without(status["report"], "seconds")
        assert report["files_indexed"] == 0 and report["files_unchanged"] == health["files"]

        strategies = run_cli("strategies", "--data-dir", data_dir)
        assert strategies == client.get("/v1/strategies").json()
    for name, value in [("query_result", rest), ("health", health), ("index_report", report),
                        ("strategies", strategies), ("index_status", status)]:
        jsonschema.validate(value, snapshot(name))


@pytest.mark.slow
async def test_mcp_returns_the_documented_subset_of_the_rest_json(served_workspace):
    from mcp import Client

    key, question = served_workspace["id"], "save a note to disk"
    async with httpx.AsyncClient(base_url=served_workspace["url"], timeout=300) as client:
        rest = (await client.post(f"/v1/workspaces/{key}/query", json={"question": question, "top_k": 4})).json()
        health = (await client.get(f"/v1/workspaces/{key}/health")).json()
        strategies = (await client.get("/v1/strategies")).json()
    async with Client(served_workspace["url"] + "/mcp", read_timeout_seconds=300) as mcp:
        found = (await mcp.call_tool("search", {"question": question, "workspace": key, "top_k": 4})).structured_content
        status = (await mcp.call_tool("index_status", {"workspace": key})).structured_content
        listed = (await mcp.call_tool("list_strategies", {})).structured_content
        report = (await mcp.call_tool("reindex", {"workspace": key})).structured_content
    assert found == subset(rest, MCP_FIELDS["search"][1]) and len(found["results"]) == 4
    assert set(found["results"][0]["chunk"]) == {"path", "start_line", "end_line", "symbol", "qualified_name",
                                                 "kind", "language"}
    assert status == health
    assert report["files_indexed"] == 0 and report["files_unchanged"] == health["files"] and not report["failed"]
    assert listed == {"strategies": subset(strategies, MCP_FIELDS["list_strategies"][1])}
    for name, value in [("mcp_search", found), ("mcp_index_status", status), ("mcp_list_strategies", listed),
                        ("mcp_reindex", report)]:
        jsonschema.validate(value, snapshot(name))


if __name__ == "__main__":
    write_snapshots()
    print(f"wrote {len(schemas())} schemas to {SNAPSHOTS}")
