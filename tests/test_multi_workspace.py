"""One question over several workspaces: the fair merge (reciprocal rank), and every face answering it
with labelled, merged results (CLI through a real server, REST on that uvicorn server, MCP through a real
MCP client session). The window's face is in tests/ui/test_workspace_set.py."""

from __future__ import annotations

import json
import subprocess

import httpx
import jsonschema
import pytest

from app.render import MCP_FIELDS
from services.core.errors import QueryError
from services.core.models import Chunk, QueryResult, ResultChunk
from services.retrieval.multi import check_workspaces, display_names, merge
from tests.helpers.engine_server import ROOT, cli, env, index_and_wait, register
from tests.helpers.workspaces import QUESTION, small_workspaces
from tests.test_faces import snapshot, subset, without


def answer(*scores: float, path: str = "a.py") -> QueryResult:
    results = [ResultChunk(Chunk(path, "python", i, i, "x"), i, s, i, s) for i, s in enumerate(scores, 1)]
    return QueryResult("q", "none", results, results, [], 10, len(results), False, None, False, {"total": 1.0})


def test_merge_interleaves_by_rank_whatever_each_index_scores():
    # a projected index's cosines run low, another's high: ranks, not scores, decide
    merged = merge("q", "none", [("/x/low", answer(0.31, 0.30, 0.29)), ("/x/high", answer(0.9, 0.8))], top_k=4)
    assert [(h.name, h.result.rank) for h in merged.results] == [("high", 1), ("low", 1), ("high", 2), ("low", 2)]
    assert [h.rank for h in merged.results] == [1, 2, 3, 4] and merged.searched == {"/x/low": 3, "/x/high": 2}
    assert merged.results[0].fused_score == round(1 / 61, 6)


def test_a_workspace_with_nothing_above_its_threshold_leaves_the_list_to_the_others():
    merged = merge("q", "none", [("/x/a", answer()), ("/x/b", answer(0.5, 0.4, 0.3))], top_k=3)
    assert [h.name for h in merged.results] == ["b", "b", "b"] and merged.searched["/x/a"] == 0


def test_names_tell_apart_folders_of_the_same_name_and_bad_lists_are_refused():
    assert display_names(["/a/src", "/b/src", "/c/lib"]) == {"/a/src": "a/src", "/b/src": "b/src", "/c/lib": "lib"}
    for bad in ([], "one/folder", [f"/w{i}" for i in range(21)]):
        with pytest.raises(QueryError):
            check_workspaces(bad)


def run_cli_json(*args: str):
    done = subprocess.run(cli(*args, "--json"), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def three_served(served_workspace, tmp_path_factory):
    """The served sample workspace plus two small ones registered and indexed on the same server:
    (served_workspace, [ids], [folders])."""
    backend, frontend = small_workspaces(tmp_path_factory.mktemp("multi"))
    with httpx.Client(base_url=served_workspace["url"], timeout=300) as client:
        keys = [served_workspace["id"]] + [register(client, f) for f in (backend, frontend)]
        for key in keys[1:]:
            assert index_and_wait(client, key)["state"] == "done"
    return served_workspace, keys, [served_workspace["workspace"], backend, frontend]


@pytest.mark.slow
async def test_one_question_over_three_workspaces_in_the_cli_rest_and_mcp(three_served):
    from mcp import Client

    served, keys, (first, backend, frontend) = three_served
    url, data_dir = served["url"], str(served["data_dir"])
    with httpx.Client(base_url=url, timeout=300) as client:
        rest = client.post("/v1/query", json={"question": QUESTION, "workspaces": keys, "top_k": 5}).json()
        refused = client.post("/v1/query", json={"question": QUESTION, "workspaces": [keys[0], "/etc"]})
        none = client.post("/v1/query", json={"question": QUESTION, "workspaces": []})
        many = client.post("/v1/query", json={"question": QUESTION, "workspaces": keys * 7})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "unknown_workspace"
    assert none.status_code == 400 and "at least one workspace" in none.json()["error"]["message"]
    assert many.status_code in (400, 422) and "workspaces" in many.json()["error"]["message"]
    # one merged ranking: each workspace's best first, each result labelled with its workspace
    assert {h["name"] for h in rest["results"][:3]} == {"workspace", "backend", "frontend"}
    assert {(h["name"], h["result"]["chunk"]["path"]) for h in rest["results"]} >= {("backend", "store.py"),
                                                                                   ("frontend", "notes.js")}
    assert rest["workspaces"] == [str(first), str(backend), str(frontend)] and len(rest["results"]) == 5
    jsonschema.validate(rest, snapshot("multi_query_result"))

    mine = run_cli_json("query", str(first), QUESTION, "--workspace", str(backend), "--workspace", str(frontend),
                        "--top-k", "5", "--data-dir", data_dir)
    assert without(mine, "timings_ms") == without(rest, "timings_ms")

    async with Client(url + "/mcp", read_timeout_seconds=300) as mcp:
        found = (await mcp.call_tool("search", {"question": QUESTION, "workspace": keys[0], "top_k": 5,
                                                "workspaces": [str(backend), keys[2]]})).structured_content
    assert found == subset(rest, MCP_FIELDS["search_many"][1])
    jsonschema.validate(found, snapshot("mcp_search_many"))


@pytest.mark.slow
def test_the_cli_text_names_each_results_workspace(three_served):
    served, _, (first, backend, frontend) = three_served
    done = subprocess.run(cli("query", str(first), QUESTION, "--workspace", str(backend),
                              "--workspace", str(frontend), "--data-dir", str(served["data_dir"])),
                          cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    files = subprocess.run(cli("query", str(first), QUESTION, "--workspace", str(backend), "--files",
                               "--data-dir", str(served["data_dir"])),
                           cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert files.returncode == 2 and files.stderr.startswith("error: --files answers one workspace")
    lines = done.stdout.splitlines()
    assert "over 3 workspaces" in lines[0]
    assert any("[backend" in line and "store.py" in line for line in lines)
    assert any("[frontend" in line and "notes.js" in line for line in lines)
