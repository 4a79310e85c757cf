"""One workspace's reranker settings cannot take the server down (issue 31, item 4): a model the server may not
read is refused with one clear message, a configured model that goes bad fails that workspace's cross-encoder
alone (said in its answers), the strategy list and the other workspaces are untouched, and the PUT that undoes
it works.

Real parts: the app served by uvicorn in a thread, httpx, the MCP SDK's client over /mcp, the real embedding
model, a tiny real cross-encoder saved to a folder (tests/helpers/tiny_cross_encoder.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import httpx
import pytest

from app.server import build_app
from services.core.settings import Settings
from services.engine.service import LocalEngine
from tests.helpers.engine_server import app_in_thread, index_and_wait, register
from tests.helpers.tiny_cross_encoder import build_tiny_cross_encoder

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

FILES = {"notes.py": "def save_note(text):\n    '''Save a note to the store.'''\n    return store.save(text)\n",
         "tags.py": "def find_by_tag(tag):\n    '''Search notes by tag.'''\n    return [n for n in notes if tag in n]\n"}


def project(path: Path) -> Path:
    path.mkdir(parents=True)
    for name, text in FILES.items():
        (path / name).write_text(text)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(client, url, {name: id}, tiny model folder): two indexed workspaces on one served engine."""
    root = tmp_path_factory.mktemp("config")
    service = LocalEngine(data_dir=root / "data", kind="server")
    app = build_app(service, root / "data", warm=False, allowed_roots=[str(root / "projects")])
    with contextlib.closing(service), app_in_thread(app) as url, httpx.Client(base_url=url, timeout=300) as client:
        keys = {name: register(client, project(root / "projects" / name)) for name in ("a", "b")}
        for key in keys.values():
            assert index_and_wait(client, key)["state"] == "done"
        yield client, url, keys, build_tiny_cross_encoder(root / "tiny-model")


def rerank(client: httpx.Client, key: str) -> dict:
    answer = client.post(f"/v1/workspaces/{key}/search/rerank",
                         json={"query_text": "save a note", "final_top_k": 2, "strategy": "cross-encoder"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def strategies_answer(client: httpx.Client, url: str) -> None:
    """/v1/strategies and MCP's list_strategies both answer."""
    from mcp import Client

    assert client.get("/v1/strategies").status_code == 200

    async def listed():
        async with Client(url + "/mcp", read_timeout_seconds=60) as mcp:
            return await mcp.call_tool("list_strategies", {})

    got = asyncio.run(listed())
    assert not got.is_error and "cross-encoder" in got.content[0].text


@pytest.mark.parametrize("model_name", ["/tmp/model\x00name", "/tmp/" + "m" * 300, "/proc/1/root/none"])
def test_a_model_the_server_cannot_read_is_refused_and_breaks_nothing(server, model_name):
    client, url, keys, _ = server
    put = client.put(f"/v1/workspaces/{keys['a']}/reranking/config",
                     json={"strategy": "cross-encoder", "model_name": model_name})
    assert put.status_code == 400 and "reranker model cannot be used" in put.json()["error"]["message"], put.text
    assert "Traceback" not in put.text and "\x00" not in put.json()["error"]["message"]
    strategies_answer(client, url)
    for key in keys.values():
        query = client.post(f"/v1/workspaces/{key}/query", json={"question": "save a note", "strategy": "cross-encoder"})
        assert query.status_code == 200, query.text


def test_a_workspaces_model_is_its_own_and_a_bad_one_can_be_undone(server):
    client, url, keys, tiny = server
    default = Settings().cross_encoder_model
    put = client.put(f"/v1/workspaces/{keys['a']}/reranking/config",
                     json={"strategy": "cross-encoder", "model_name": str(tiny)})
    assert put.status_code == 200, put.text
    assert rerank(client, keys["a"])["model"] == str(tiny)
    assert rerank(client, keys["b"])["model"] == default  # the other workspace keeps the server's model

    model = shutil.copytree(tiny, tiny.parent / "tiny-copy")
    assert client.put(f"/v1/workspaces/{keys['a']}/reranking/config",
                      json={"strategy": "cross-encoder", "model_name": str(model)}).status_code == 200
    (model / "config.json").unlink()  # the configured model goes bad after the PUT, before it was loaded
    broken = rerank(client, keys["a"])
    assert not broken["reranked"] and "config.json" in broken["fallback_reason"]
    strategies_answer(client, url)
    assert client.post(f"/v1/workspaces/{keys['b']}/query", json={"question": "save a note"}).status_code == 200

    undo = client.put(f"/v1/workspaces/{keys['a']}/reranking/config", json={"strategy": "cross-encoder"})
    assert undo.status_code == 200, undo.text
    assert rerank(client, keys["a"])["model"] == default
