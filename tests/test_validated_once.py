"""A question is parsed once at its face's edge and its rules checked once, by the engine (issue #53): over
REST (FastAPI parses the body), MCP and the CLI (app.limits.query_request parses the arguments) and the
window's view-model (it builds the engine's options itself), each question reaches LocalEngine.validate
exactly once, and a bad one gets the same one line from every face.

Real parts: a LocalEngine (stand-in encoder) behind the FastAPI app on a real uvicorn server, a real MCP
client session, the CLI's `main` (it finds the server owning the data dir and asks through it), the window's
WorkspaceViewModel over the engine."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx
import pytest

import app.limits
from app.cli import main
from services.core.messages import QueryRequest
from services.engine.service import LocalEngine
from tests.conftest import copy_sample
from tests.helpers.engine_server import app_in_thread
from tests.helpers.stand_in_encoder import stand_in_settings
from ui.viewmodels.preferences import Preferences
from ui.viewmodels.workspace import WorkspaceViewModel

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]
QUESTION = "save a note to the store"


class DictStore(dict):
    """The preferences' store (QSettings' value/setValue) over a dict."""

    def value(self, key: str, default=None):
        return self.get(key, default)

    def setValue(self, key: str, value) -> None:  # noqa: N802
        self[key] = value


class Counted:
    """Calls of a function, counted (the function still runs)."""

    def __init__(self, function) -> None:
        self.function, self.calls = function, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch):
    validate, parse = Counted(LocalEngine.validate), Counted(app.limits.query_request)
    monkeypatch.setattr(LocalEngine, "validate", lambda self, *a: validate(self, *a))
    monkeypatch.setattr(app.limits, "query_request", parse)
    monkeypatch.setattr("app.operations.query_request", parse)

    def take() -> tuple[int, int]:
        found = (validate.calls, parse.calls)
        validate.calls = parse.calls = 0
        return found
    return take


async def test_each_face_checks_a_question_once(tmp_path, counted):
    from mcp import Client

    from app.server import build_app

    workspace, data = copy_sample(tmp_path / "workspace"), tmp_path / "data"
    service = LocalEngine(stand_in_settings(), data_dir=data, kind="server")
    app = build_app(service, data, warm=False, allowed_roots=[str(workspace.parent)])
    try:
        await service.index(workspace)
        with app_in_thread(app) as url:
            await service.set_owner_url(url)  # as `serve` does: the CLI finds the server owning the data dir
            async with httpx.AsyncClient(base_url=url, timeout=300) as client:
                key = (await client.post("/v1/workspaces", json={"path": str(workspace)})).json()["id"]
                counted()
                for path, body in ((f"/v1/workspaces/{key}/query", {"question": QUESTION}),
                                   (f"/v1/workspaces/{key}/files", {"question": QUESTION}),
                                   ("/v1/query", {"question": QUESTION, "workspaces": [key]})):
                    answer = await client.post(path, json=body)
                    assert answer.status_code == 200, answer.text
                    assert counted() == (1, 0), path  # FastAPI parsed the body; the engine checked it
                bad = await client.post(f"/v1/workspaces/{key}/query",
                                        json={"question": QUESTION, "languages": ["klingon"]})
                assert bad.status_code == 400 and "Unknown language 'klingon'" in bad.text
                counted()

            async with Client(url + "/mcp", read_timeout_seconds=300) as mcp:
                for tool, arguments in (("search", {"question": QUESTION, "workspace": key}),
                                        ("find_files", {"question": QUESTION, "workspace": key})):
                    assert (await mcp.call_tool(tool, arguments)).structured_content
                    assert counted() == (1, 1), tool

            for extra in ((), ("--files",)):
                code = await asyncio.to_thread(main, ["query", str(workspace), QUESTION, *extra, "--data-dir",
                                                      str(data), "--json"])
                assert code == 0 and counted() == (1, 1), extra  # parsed by the CLI, checked by the engine
            code = await asyncio.to_thread(main, ["query", str(workspace), QUESTION, "--language", "klingon",
                                                  "--data-dir", str(data)])
            assert code != 0 and counted() == (1, 1)

        window = WorkspaceViewModel(service, Preferences(DictStore()))
        window.open(str(workspace))
        answer = await window.query(QUESTION, window.options(10, "auto", (), ""))
        assert answer.results and counted() == (1, 0)  # the window asks the engine directly
    finally:
        service.close()


def test_the_window_asks_with_the_defaults_rest_and_mcp_ask_with(tmp_path):
    """The window builds its options itself: for the fields it sets, and every field it leaves, they are
    what REST makes of a body with the same fields (one question type's defaults)."""
    window = WorkspaceViewModel(None, Preferences(DictStore()))
    window.workspace = str(tmp_path)
    mine = window.options(7, "hybrid", ("python",), "src/*")
    rest = QueryRequest(question=QUESTION, top_k=7, strategy="hybrid", languages=("python",),
                        path_glob="src/*").options(str(tmp_path))
    assert mine == rest
    plain = QueryRequest(question=QUESTION).options(str(tmp_path))
    assert window.options(plain.top_k, plain.strategy, (), "") == plain
    assert {f.name for f in dataclasses.fields(QueryRequest)} - {"question"} == \
        {f.name for f in dataclasses.fields(type(mine))} - {"workspace"}
