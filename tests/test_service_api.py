"""The engine as a service, on real parts: `knowledge-explorer serve` on 127.0.0.1 driven with httpx,
the warm CLI, MCP over stdio (the SDK's own client spawning `python -m app.cli mcp`) and over /mcp."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from services.core.codec import decode
from services.core.models import QueryResult
from tests.conftest import copy_sample
from tests.helpers.engine_server import ROOT, app_in_thread, cli, env, register

pytestmark = pytest.mark.slow


@pytest.fixture
def client(engine_server):
    with httpx.Client(base_url=engine_server["url"], timeout=120) as http:
        yield http


def test_query_returns_both_rankings_with_timings_and_health_and_strategies(client, served_workspace):
    key = served_workspace["id"]
    response = client.post(f"/v1/workspaces/{key}/query",
                           json={"question": "what implements ChunkStore", "strategy": "metadata", "top_k": 3})
    assert response.status_code == 200, response.text
    result = decode(QueryResult, response.json())
    assert result.reranked and result.results[0].chunk.symbol in {"MemoryChunkStore", "DiskChunkStore"}
    assert result.original and [r.original_rank for r in result.original] == [1, 2, 3]
    assert {"embed", "search", "rerank", "total"} <= set(result.timings_ms)
    assert all(r.stale == "" for r in result.results)
    health = client.get(f"/v1/workspaces/{key}/health").json()
    assert health["indexed"] and health["chunks"] > 50 and not health["stale_files"]
    strategies = {s["name"]: s for s in client.get("/v1/strategies").json()}
    assert strategies["hybrid"]["available"] and not strategies["cross-encoder"]["available"]
    assert client.get("/docs").status_code == 200 and "/v1/rerank" in client.get("/openapi.json").json()["paths"]


def test_spec_rerank_endpoints_score_documents_and_search_results(client, served_workspace):
    key = served_workspace["id"]
    documents = ["How to make authentic Neapolitan pizza at home", "History of the Roman empire",
                 "Pizza delivery services in New York"]
    boosted = client.post("/v1/rerank", json={"query": "make pizza at home", "documents": documents,
                                              "strategy": "keyword-boost", "top_k": 2}).json()
    assert [r["index"] for r in boosted["results"]] == [0, 2] and boosted["reranked"]
    assert boosted["results"][0]["score"] > boosted["results"][0]["original_score"]
    assert boosted["model"] and boosted["reranking_time_ms"] >= 0
    fallback = client.post("/v1/rerank", json={"query": "pizza", "documents": documents}).json()
    assert not fallback["reranked"] and "cross-encoder" in fallback["strategy"] and fallback["fallback_reason"]

    configured = client.put(f"/v1/workspaces/{key}/reranking/config",
                            json={"strategy": "heuristic", "score_threshold": 0.1})
    assert configured.status_code == 200 and client.get(f"/v1/workspaces/{key}/reranking/config").json()[
        "strategy"] == "heuristic"
    searched = client.post(f"/v1/workspaces/{key}/search/rerank",
                           json={"query_text": "save a note", "final_top_k": 3}).json()
    assert searched["strategy"] == "heuristic" and searched["total_returned"] == len(searched["results"]) == 3
    assert {"search_time_ms", "reranking_time_ms", "total_time_ms", "model"} <= set(searched)
    hit = searched["results"][0]
    assert hit["metadata"]["path"] and hit["original_score"] is not None and hit["vector_id"].startswith(
        hit["metadata"]["path"])


def test_the_spec_search_reranks_initial_top_k_candidates(client, served_workspace):
    key = served_workspace["id"]
    for pool in (4, 12):
        body = {"query_text": "save a note", "initial_top_k": pool, "final_top_k": 3, "strategy": "keyword-boost"}
        searched = client.post(f"/v1/workspaces/{key}/search/rerank", json=body).json()
        assert searched["total_candidates"] == pool and searched["total_returned"] == 3, searched


def test_index_runs_report_progress_by_server_sent_events_and_cancel(client, tmp_path):
    fresh = copy_sample(tmp_path / "fresh")
    for i in range(300):  # thousands of chunks: the run cannot end in the time a cancel takes to arrive
        (fresh / f"generated_{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n" for j in range(8)))
    key = register(client, fresh)
    assert client.post(f"/v1/workspaces/{key}/index", json={}).status_code == 202
    busy = client.post(f"/v1/workspaces/{key}/index", json={})
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "index_running"
    states, cancelled = [], False
    with client.stream("GET", f"/v1/workspaces/{key}/index/events") as events:
        for line in events.iter_lines():
            if not line.startswith("data: "):
                continue
            status = json.loads(line[6:])
            states.append(status)
            progress = status["progress"] or {}
            if not cancelled and progress.get("phase") == "embedding" and progress.get("chunks_done"):
                cancelled = client.delete(f"/v1/workspaces/{key}/index").status_code == 200
    assert cancelled and states[-1]["state"] == "cancelled" and states[-1]["report"]["cancelled"]
    assert len(states) > 2
    step_2 = [s["progress"] for s in states if s["progress"] and s["progress"]["step"] == 2]
    assert step_2 and all(0 <= p["run_percent"] <= 100 for p in step_2)  # the whole run's share, step 2 named
    # never ahead of the vectors: 100 % only once every chunk has one (a cancel that lands late may see that)
    assert all(p["run_percent"] < 100 for p in step_2 if p["chunks_done"] < p["chunks_total"])
    health, report = client.get(f"/v1/workspaces/{key}/health").json(), states[-1]["report"]
    # every file committed (step 1); the vectors the run says it made are those the index holds (health's None:
    # all of them), the rest await theirs
    assert health["chunks"] == report["chunks_total"] and (health["chunks_embedded"] or health["chunks"]) == report["chunks_embedded"]


def snapshot(folder) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_bad_inputs_get_clear_errors_with_the_right_status_and_change_nothing(client, served_workspace, tmp_path):
    key = served_workspace["id"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "escape").symlink_to(outside)
    linked_key = register(client, linked)
    before = snapshot(served_workspace["data_dir"])
    query = f"/v1/workspaces/{key}/query"
    cases = [
        (client.post(query, content=b'{"question": ', headers={"content-type": "application/json"}),
         400, "malformed_json"),
        (client.post("/v1/rerank", content=b"x" * (2 * 1024 * 1024), headers={"content-type": "application/json"}),
         413, "body_too_large"),
        (client.post("/v1/workspaces/nope-123/query", json={"question": "x"}), 404, "unknown_workspace"),
        (client.post(query, json={"question": "x", "path_glob": "../*"}), 400, "path_escape"),
        (client.post(query, json={"question": "x", "path_glob": "/etc/*"}), 400, "path_escape"),
        (client.get(f"/v1/workspaces/{key}/file", params={"path": "../../outside/secret.txt"}), 400, "path_escape"),
        (client.get(f"/v1/workspaces/{linked_key}/file", params={"path": "escape/secret.txt"}), 400, "path_escape"),
        (client.post(query, json={"question": "x", "top_k": 1000}), 422, "invalid_request"),
        (client.post(query, json={"question": ""}), 422, "invalid_request"),
        (client.post("/v1/rerank", json={"query": "x", "documents": ["d"] * 201}), 422, "invalid_request"),
        (client.post(query, json={"question": "x", "strategy": "bogus"}), 400, "bad_request"),
        (client.put(f"/v1/workspaces/{key}/labels", json={"question": "", "path": "a.py"}), 422, "invalid_request"),
        (client.get("/v1/workspaces/nope-123/labels", params={"question": "x"}), 404, "unknown_workspace"),
        (client.post("/v1/workspaces", json={"path": str(tmp_path / "missing")}), 400, "bad_workspace"),
        (client.post(f"/v1/workspaces/{linked_key}/query", json={"question": "x"}), 409, "not_indexed"),
    ]
    for response, status, code in cases:
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), response.text
        assert response.json()["error"]["message"] and "Traceback" not in response.text
    assert snapshot(served_workspace["data_dir"]) == before
    inside = client.get(f"/v1/workspaces/{key}/file", params={"path": "notes/models.py"})
    assert inside.status_code == 200 and "class Note" in inside.json()["text"]


def test_a_token_is_required_when_the_app_is_built_with_one(tmp_path, capfd):
    from app.server import build_app
    from services.engine.service import LocalEngine

    token = "s3cret-token-for-tests"
    service = LocalEngine(data_dir=tmp_path / "data")
    app = build_app(service, tmp_path / "data", token=token, warm=False)
    with app_in_thread(app, "127.0.0.2") as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            refused = httpx.get(f"{url}/v1/strategies", headers=headers)
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        assert httpx.post(f"{url}/mcp", json={}).status_code == 401
        assert httpx.get(f"{url}/v1/strategies", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert not (tmp_path / "data" / "server-workspaces.json").exists()
        # the CLI against it: a clear one-line error without the token, the answer with it
        from app.cli import main

        assert main(["strategies", "--engine-url", url, "--json"]) == 1
        assert "a valid token is required" in capfd.readouterr().err
        (tmp_path / "token").write_text(token + "\n")
        assert main(["strategies", "--engine-url", url, "--token-file", str(tmp_path / "token"), "--json"]) == 0
        assert "hybrid" in {s["name"] for s in json.loads(capfd.readouterr().out)}
    service.close()


def test_serve_refuses_a_public_address_without_a_token(tmp_path):
    done = subprocess.run(cli("serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "data")), cwd=ROOT,
                          env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("error: Refusing to serve on 0.0.0.0 without a token")
    assert "Traceback" not in done.stderr and not (tmp_path / "data").exists()


WARM = ("import sys, app.cli; rc = app.cli.main(sys.argv[1:]); "
        "print('LOADED', [m for m in ('torch', 'chromadb', 'sentence_transformers') if m in sys.modules]); "
        "sys.exit(rc)")


def run_warm(*args: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", WARM, *args], cwd=ROOT, env=env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    output, loaded = done.stdout.rsplit("LOADED", 1)
    return json.loads(output), loaded.strip()


def test_the_cli_goes_through_the_running_server_without_loading_the_engine(served_workspace):
    workspace, data_dir = str(served_workspace["workspace"]), str(served_workspace["data_dir"])
    result, loaded = run_warm("query", workspace, "save a note", "--data-dir", data_dir, "--json", "--top-k", "3")
    assert loaded == "[]" and len(result["results"]) == 3 and result["results"][0]["chunk"]["path"]
    health, loaded = run_warm("health", workspace, "--data-dir", data_dir, "--json")
    assert loaded == "[]" and health["indexed"]
    report, loaded = run_warm("index", workspace, "--data-dir", data_dir, "--json")
    assert loaded == "[]" and report["files_unchanged"] == health["files"] and report["files_indexed"] == 0


async def test_mcp_over_stdio_calls_every_tool(served_workspace, tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    workspace = str(served_workspace["workspace"])
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "app.cli", "mcp", "--data-dir", str(served_workspace["data_dir"])],
                                   cwd=str(ROOT), env=env())
    with open(tmp_path / "mcp-stderr.log", "w") as errlog:  # a real file: pytest's capture has no fileno
        await call_every_tool(Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120), workspace)


async def call_every_tool(client, workspace: str) -> None:
    async with client as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == {"search", "find_files", "index_status",
                                                                   "reindex", "list_strategies", "find_symbol",
                                                                   "find_file", "open_file", "find_references",
                                                                   "find_uses"}
        found = await mcp.call_tool("search", {"question": "save a note", "workspace": workspace, "top_k": 3,
                                               "strategy": "hybrid"})
        assert not found.is_error
        first = found.structured_content["results"][0]
        assert first["chunk"]["path"] and first["chunk"]["start_line"] <= first["chunk"]["end_line"]
        assert first["stale"] == "" and {"score", "original_score"} <= set(first) and "symbol" in first["chunk"]
        status = await mcp.call_tool("index_status", {"workspace": workspace})
        assert status.structured_content["indexed"] and status.structured_content["chunks"] > 50
        report = await mcp.call_tool("reindex", {"workspace": workspace})
        assert report.structured_content["files_indexed"] == 0
        assert report.structured_content["files_unchanged"] == status.structured_content["files"]
        names = (await mcp.call_tool("list_strategies", {})).structured_content["strategies"]
        assert {"none", "hybrid", "cross-encoder"} <= {s["name"] for s in names}
        symbol = (await mcp.call_tool("find_symbol", {"name": "NoteStore.save", "workspace": workspace}))
        assert symbol.structured_content["hits"][0]["path"] == "notes/store.py"
        file = (await mcp.call_tool("find_file", {"path": "store.py:20", "workspace": workspace})).structured_content
        opened = await mcp.call_tool("open_file", {"path": file["hits"][0]["path"], "workspace": workspace,
                                                   "start_line": 19, "end_line": 21})
        assert "def save(self, note: Note)" in opened.structured_content["text"]
        callers = (await mcp.call_tool("find_references", {"name": "tokenize_query", "workspace": workspace}))
        assert [g["path"] for g in callers.structured_content["files"]] == ["notes/__init__.py", "notes/search.py"]
        callees = (await mcp.call_tool("find_uses", {"name": "SearchEngine.search", "workspace": workspace}))
        assert "tokenize_query" in {link["qualified_name"] for g in callees.structured_content["files"]
                                    for link in g["links"]}
        escape = await mcp.call_tool("search", {"question": "x", "workspace": workspace, "path_glob": "../*"})
        assert escape.is_error and "outside the workspace" in escape.content[0].text


async def test_mcp_over_http_on_the_server(served_workspace):
    from mcp import Client

    async with Client(served_workspace["url"] + "/mcp", read_timeout_seconds=120) as mcp:
        found = await mcp.call_tool("search", {"question": "what implements ChunkStore",
                                               "workspace": served_workspace["id"], "strategy": "metadata"})
        assert not found.is_error and found.structured_content["reranked"]
        unknown = await mcp.call_tool("index_status", {"workspace": "/etc"})
        assert unknown.is_error and "registered on this server" in unknown.content[0].text
