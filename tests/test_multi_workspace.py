"""One question over several workspaces: the merge by evidence (real indexes of a related and an unrelated
workspace), and every face answering it
with labelled, merged results (CLI through a real server, REST on that uvicorn server, MCP through a real
MCP client session). The window's face is in tests/ui/test_workspace_set.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import replace

import httpx
import jsonschema
import pytest

from app.render import MCP_FIELDS
from services.core.errors import QueryError
from services.core.models import Chunk, QueryOptions, QueryResult, ResultChunk
from services.retrieval.multi import check_workspaces, display_names, merge
from tests.helpers.engine_server import ROOT, cli, env, index_and_wait, register
from tests.conftest import indexed_sample
from tests.helpers.workspaces import QUESTION, UNRELATED_QUESTION, small_workspaces, unrelated_workspace
from tests.test_faces import snapshot, subset, without


def answer(*scores: float, path: str = "a.py") -> QueryResult:
    results = [ResultChunk(Chunk(path, "python", i, i, "x"), i, s, i, s) for i, s in enumerate(scores, 1)]
    return QueryResult("q", "none", results, results, [], 10, len(results), False, None, False, {"total": 1.0})


def test_merge_orders_by_evidence_and_keeps_each_workspaces_own_order():
    # a strategy scales every workspace's best to 1.0: the cosines, not those scores, decide the merged order
    low, reranked = answer(0.31, 0.30, 0.29), answer(0.5, 0.9, 0.8)  # the strategy put a 0.5 cosine first
    merged = merge("q", "hybrid", [("/x/low", low), ("/x/high", reranked)], top_k=4)
    assert [(h.name, h.result.rank) for h in merged.results] == [("high", 1), ("high", 2), ("high", 3), ("low", 1)]
    assert [h.evidence for h in merged.results] == [0.9, 0.8, 0.5, 0.31] and merged.searched["/x/low"] == 3


def test_a_keyword_only_hit_is_worth_its_stored_vectors_cosine():
    keyword_only = replace(answer(0.4).results[0], original_rank=None, original_score=None, score=1.0)
    merged = merge("q", "hybrid", [("/x/a", answer(0.5, 0.45)), ("/x/b", replace(answer(), results=[keyword_only]))],
                   top_k=3, cosines={"/x/b": {keyword_only.chunk.id: 0.7}})
    assert [h.name for h in merged.results] == ["b", "a", "a"] and merged.results[0].evidence == 0.7


@pytest.fixture(scope="module")
def related_and_unrelated(tmp_path_factory):
    """(service, notes workspace, shop workspace): the sample workspace (notes) and a shop, indexed."""
    root = tmp_path_factory.mktemp("evidence")
    for service, notes in indexed_sample(root):
        shop = unrelated_workspace(root)
        asyncio.run(service.index(shop))
        yield service, notes, shop


@pytest.mark.parametrize("strategy", ["none", "hybrid", "heuristic"])
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_an_unrelated_workspace_does_not_take_every_second_place(related_and_unrelated, strategy):
    service, notes, shop = related_and_unrelated
    options = QueryOptions(workspace=str(notes), strategy=strategy, top_k=10)
    alone = asyncio.run(service.query(UNRELATED_QUESTION, replace(options, workspace=str(shop))))
    assert alone.results, "the shop's chance hits pass the threshold on their own"
    merged = asyncio.run(service.query_many(UNRELATED_QUESTION, [str(shop), str(notes)], options))
    names = [h.name for h in merged.results]
    # the unrelated shop is named first, yet the notes fill the top; each row says its workspace
    assert names[:6] == ["workspace"] * 6, names
    assert all(h.workspace == str(notes) for h in merged.results if h.name == "workspace")
    assert [h.evidence for h in merged.results] == sorted((h.evidence for h in merged.results), reverse=True)
    mine = [h.result.rank for h in merged.results if h.name == "workspace"]
    assert mine == sorted(mine), "the notes keep their own strategy's order"


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
    # one merged ranking by evidence, each result labelled with its workspace
    assert [h["evidence"] for h in rest["results"]] == sorted((h["evidence"] for h in rest["results"]), reverse=True)
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
