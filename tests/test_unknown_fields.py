"""A field a request does not take is refused by name, with the nearest it takes, never dropped (issue 42):
every REST body field and query parameter, every MCP tool argument.

Real parts: the app served by uvicorn on 127.0.0.1 in a thread, httpx, the MCP SDK's client over /mcp.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.helpers.engine_server import one_file_server

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, workspace id, workspace folder) on an un-warmed engine (no model: every refusal comes first)."""
    with one_file_server(tmp_path_factory.mktemp("unknown-fields"), "a.py", "def a():\n    return 1\n") as (
            url, key, _service, workspace):
        yield url, key, workspace


def refused(response: httpx.Response) -> str:
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    return response.json()["error"]["message"]


@pytest.mark.parametrize("method, path, body, message", [
    ("POST", "query", {"question": "add", "topk": 3}, "unknown field 'topk'; did you mean 'top_k'?"),
    ("POST", "files", {"question": "add", "max_file": 3}, "unknown field 'max_file'; did you mean 'max_files'?"),
    ("POST", "index", {"full": False, "paths": ["/etc"]}, "unknown field 'paths'; known: full."),
    ("PUT", "reranking/config", {"score_treshold": 0.5}, "unknown field 'score_treshold'; did you mean 'score_threshold'?"),
    ("PUT", "watch", {"auto_reindx": False}, "unknown field 'auto_reindx'; did you mean 'auto_reindex'?"),
])
def test_rest_refuses_an_unknown_body_field_naming_the_nearest(server, method, path, body, message):
    url, key, _workspace = server
    response = httpx.request(method, f"{url}/v1/workspaces/{key}/{path}", json=body, timeout=60)
    assert refused(response) == message


def test_rest_refuses_an_unknown_body_field_of_a_route_without_a_workspace(server):
    url, _key, _workspace = server
    response = httpx.post(f"{url}/v1/rerank", json={"query": "q", "documents": ["d"], "topk": 1}, timeout=60)
    assert refused(response) == "unknown field 'topk'; did you mean 'top_k'?"


@pytest.mark.parametrize("path, params, message", [
    ("goto/symbols", {"q": "a", "limt": 3}, "unknown field 'limt'; did you mean 'limit'?"),
    ("graph/references", {"q": "a", "name": "a"}, "unknown field 'name'; known: q."),
    ("health", {"verbose": "1"}, "unknown field 'verbose'; known: none."),
])
def test_rest_refuses_an_unknown_query_parameter(server, path, params, message):
    url, key, _workspace = server
    assert refused(httpx.get(f"{url}/v1/workspaces/{key}/{path}", params=params, timeout=60)) == message


def test_mcp_refuses_an_unknown_argument_naming_the_nearest_and_says_so_in_its_schema(server):
    from mcp import Client

    url, _key, workspace = server

    async def session():
        async with Client(url + "/mcp", read_timeout_seconds=60) as mcp:
            tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
            answers = [await mcp.call_tool(tool, {"workspace": str(workspace), **arguments}) for tool, arguments in
                       [("search", {"question": "add", "topk": 3}), ("reindex", {"paths": ["/etc"]}),
                        ("find_symbol", {"name": "a", "limt": 3})]]
            return tools, answers

    tools, answers = asyncio.run(session())
    assert all(tool.input_schema.get("additionalProperties") is False for tool in tools.values())
    assert [a.is_error for a in answers] == [True, True, True]
    assert [a.content[0].text.split(": ", 1)[1] for a in answers] == [
        "unknown field 'topk'; did you mean 'top_k'?", "unknown field 'paths'; known: full, workspace.",
        "unknown field 'limt'; did you mean 'limit'?"]
