"""The server lets no one out of bounds (issue 20): registrable roots, Host and Origin checks, JSON-only
state changes, malformed paths, MCP and CLI with REST's limits, a big rerank neither starving queries nor
outliving its client.

Real parts: the app served by uvicorn in a thread (tests.helpers.engine_server.app_in_thread), httpx with
forged headers, the MCP SDK's client over /mcp, `python -m app.cli` subprocesses, the real model where
a test embeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from app.server import build_app
from services.core.messages import MAX_QUESTION_CHARS
from services.engine.service import LocalEngine
from services.transport.remote import RemoteEngine
from services.transport.roots import record_owner_folder
from tests.helpers.engine_server import ROOT, app_in_thread, cli, env

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

SAMPLE = ROOT / "tests" / "sample_workspace"


@contextlib.contextmanager
def served(tmp_path: Path, **options):
    """An un-warmed engine (no model loaded) served on 127.0.0.1: (url, service, data_dir)."""
    data_dir = tmp_path / "data"
    service = LocalEngine(data_dir=data_dir, kind="server")
    with contextlib.closing(service), app_in_thread(build_app(service, data_dir, warm=False, **options)) as url:
        yield url, service, data_dir


def folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "a.py").write_text("def a():\n    return 1\n")
    return path


def error(response: httpx.Response) -> tuple[int, str]:
    assert "Traceback" not in response.text
    return response.status_code, response.json()["error"]["code"]


# --- registrable roots ---
def test_only_allowed_roots_and_the_owners_folders_can_be_registered(tmp_path):
    allowed = tmp_path / "projects"
    inside, outside, owned = folder(allowed / "one"), folder(tmp_path / "elsewhere"), folder(tmp_path / "owned")
    with served(tmp_path, allowed_roots=[str(allowed)], mcp=False) as (url, service, data_dir):
        post = lambda path: httpx.post(f"{url}/v1/workspaces", json={"path": str(path)})  # noqa: E731
        assert post(inside).status_code == 201
        refused = post(outside)
        assert error(refused) == (403, "forbidden_workspace") and "--allow-root" in refused.json()["error"]["message"]
        for never in ("/", "/etc", "/proc/self", Path.home(), "/usr/lib"):
            response = post(never)
            assert error(response) == (403, "forbidden_workspace"), never
            assert "cannot be served" in response.json()["error"]["message"]
        record_owner_folder(data_dir, owned)  # what the owner's CLI or window does through its own server
        assert post(owned).status_code == 201
        listed = {w["path"] for w in httpx.get(f"{url}/v1/workspaces").json()}
        assert listed == {str(inside.resolve()), str(owned.resolve())}


def test_the_owners_cli_registers_through_its_own_server_and_others_cannot(tmp_path):
    workspace = folder(tmp_path / "mine")
    with served(tmp_path, mcp=False) as (url, service, data_dir):
        asyncio.run(service.set_owner_url(url))
        assert error(httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)})) == (403, "forbidden_workspace")
        done = subprocess.run(cli("index", str(workspace), "--data-dir", str(data_dir)), cwd=ROOT,
                              env=env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and "1 files indexed" in done.stdout, done.stderr
        assert httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).status_code == 201
        stranger = RemoteEngine(url, data_dir=tmp_path / "someone-else")  # not the data dir the server owns
        with contextlib.closing(stranger):
            health = asyncio.run(stranger.health(folder(tmp_path / "theirs")))
        assert not health.indexed and "not open to this server" in health.last_error


async def test_reads_through_the_owners_server_never_widen_what_it_serves(tmp_path):
    """Issue 31: a read-only `health` through the warm CLI, or MCP stdio's `index_status`, while a server owns
    the data dir, must not let that server register the folder (then read its files over REST)."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    looked_at, asked = folder(tmp_path / "srv"), folder(tmp_path / "home-like")
    with served(tmp_path, mcp=False) as (url, service, data_dir):
        await service.set_owner_url(url)
        done = await asyncio.to_thread(subprocess.run, cli("health", str(looked_at), "--data-dir", str(data_dir)),
                                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "not open to this server" in done.stdout, done.stdout + done.stderr
        params = StdioServerParameters(command=cli()[0], args=cli("mcp", "--data-dir", str(data_dir))[1:],
                                       cwd=str(ROOT), env=env())
        with open(tmp_path / "mcp-stderr.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as mcp:
                status = await mcp.call_tool("index_status", {"workspace": str(asked)})
        assert "not open to this server" in status.content[0].text
        async with httpx.AsyncClient() as http:
            for path in (looked_at, asked):
                refused = await http.post(f"{url}/v1/workspaces", json={"path": str(path)})
                assert error(refused) == (403, "forbidden_workspace"), path
            assert (await http.get(f"{url}/v1/workspaces")).json() == []


def test_a_saved_registration_the_policy_no_longer_allows_is_dropped(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "server-workspaces.json").write_text('{"etc-1": "/etc", "root-2": "/"}')
    with served(tmp_path, mcp=False) as (url, _service, _data_dir):
        assert httpx.get(f"{url}/v1/workspaces").json() == []
        assert error(httpx.get(f"{url}/v1/workspaces/etc-1/file", params={"path": "passwd"})) == (
            404, "unknown_workspace")


def test_serve_refuses_to_allow_a_system_folder_or_the_home_folder(tmp_path):
    for root in ("/", "/etc", str(Path.home())):
        done = subprocess.run(cli("serve", "--data-dir", str(tmp_path / "data"), "--port", "0", "--allow-root", root),
                              cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and done.stderr.startswith(f"error: --allow-root {root}: refused"), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


async def test_mcp_refuses_unregistered_and_system_folders_and_applies_rest_limits(tmp_path):
    from mcp import Client

    workspace = folder(tmp_path / "projects" / "one")
    with served(tmp_path, allowed_roots=[str(tmp_path / "projects")]) as (url, _service, _data_dir):
        async with httpx.AsyncClient() as http:
            assert (await http.post(f"{url}/v1/workspaces", json={"path": str(workspace)})).status_code == 201
        async with Client(url + "/mcp", read_timeout_seconds=60) as mcp:
            for tool, arguments in [("reindex", {"workspace": "/"}), ("search", {"question": "x", "workspace": "/"}),
                                    ("index_status", {"workspace": "/etc"})]:
                refused = await mcp.call_tool(tool, arguments)
                assert refused.is_error and "registered on this server" in refused.content[0].text, tool
            for arguments, words in [({"question": "x" * 120_000}, f"at most {MAX_QUESTION_CHARS} characters"),
                                     ({"question": "x", "top_k": 1000}, "top_k"),
                                     ({"question": "x", "languages": ["klingon"]}, "Unknown language 'klingon'")]:
                refused = await mcp.call_tool("search", {"workspace": str(workspace), **arguments})
                assert refused.is_error and words in refused.content[0].text, arguments


async def test_mcp_over_stdio_refuses_the_file_system_root(tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=cli()[0], args=cli("mcp", "--data-dir", str(tmp_path / "data"))[1:],
                                   cwd=str(ROOT), env=env())
    with open(tmp_path / "mcp-stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as mcp:
            for tool in ("reindex", "index_status"):
                refused = await mcp.call_tool(tool, {"workspace": "/"})
                assert refused.is_error and "cannot be served" in refused.content[0].text
    assert not (tmp_path / "data" / "workspaces").exists()


# --- DNS rebinding and cross-site requests ---
def test_every_route_answers_only_its_own_host_names_and_refuses_cross_site_requests(tmp_path):
    workspace = folder(tmp_path / "projects" / "one")
    with served(tmp_path, allowed_roots=[str(tmp_path / "projects")], allowed_hosts=["engine.lan"]) as (url, *_):
        key = httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).json()["id"]
        evil = {"Host": "evil.example"}
        for method, path in [("GET", "/v1/health"), ("GET", "/v1/workspaces"), ("POST", "/mcp"),
                             ("GET", f"/v1/workspaces/{key}/file?path=a.py"), ("GET", "/docs")]:
            refused = httpx.request(method, url + path, headers=evil, json={})
            assert error(refused) == (400, "http_error") and "evil.example" in refused.json()["error"]["message"]
        for host in ("localhost", "127.0.0.1", "engine.lan:8080", "192.168.7.7:80"):  # an address cannot be rebound
            assert httpx.get(f"{url}/v1/health", headers={"Host": host}).status_code == 200, host
        index = f"{url}/v1/workspaces/{key}/index"
        as_text = httpx.post(index, content=b'{"full": true}', headers={"Content-Type": "text/plain"})
        assert error(as_text) == (415, "http_error")
        as_form = httpx.post(index, data={"full": "true"})
        assert error(as_form) == (415, "http_error")
        untyped = httpx.post(index, content=b'{"full": true}', headers={"Content-Type": ""})
        assert untyped.status_code == 415
        for origin in ("http://evil.example", "http://192.168.7.7", "null"):
            cross_site = httpx.post(index, json={}, headers={"Origin": origin})
            assert error(cross_site) == (403, "http_error"), origin
        assert httpx.get(index).json()["state"] == "idle"  # nothing started
        same_site = httpx.get(f"{url}/v1/workspaces/{key}/index", headers={"Origin": url})
        assert same_site.status_code == 200


# --- file reads stay confined; malformed paths are 400 ---
def test_malformed_and_escaping_paths_are_refused_with_400(tmp_path):
    workspace = folder(tmp_path / "projects" / "one")
    with served(tmp_path, allowed_roots=[str(tmp_path / "projects")], mcp=False) as (url, *_):
        key = httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).json()["id"]
        read = lambda path: httpx.get(f"{url}/v1/workspaces/{key}/file", params={"path": path})  # noqa: E731
        for path in ("a.py\x00.txt", "x/" * 3000, "n" * 300, "../../../etc/passwd", "/etc/passwd", "a/../../b"):
            assert error(read(path)) == (400, "path_escape"), path
        assert read("a.py").json()["text"].startswith("def a")
        for path in (b"\\u0000", b"/tmp/\\u0000x", b"\\ud800", b"/tmp/\\udcff", b"y" * 5000):
            response = httpx.post(f"{url}/v1/workspaces", content=b'{"path": "' + path + b'"}',
                                  headers={"Content-Type": "application/json"})
            assert response.status_code == 400 and "Traceback" not in response.text, path
        query = httpx.post(f"{url}/v1/workspaces/{key}/query", json={"question": "x", "path_glob": "a\x00*"})
        assert error(query) == (400, "path_escape")


# --- the CLI validates like the server ---
@pytest.mark.parametrize("arguments, words", [
    (["--min-relevance", "nan"], "min_relevance"), (["--min-relevance", "5"], "min_relevance"),
    (["--min-relevance", "-3"], "min_relevance"), (["--top-k", "0"], "top_k"), (["--top-k", "101"], "top_k"),
])
def test_the_cli_refuses_what_the_server_refuses_in_one_line(tmp_path, arguments, words):
    """Fields REST's body schema refuses are refused as the CLI parses them, before anything starts."""
    done = subprocess.run(cli("query", str(folder(tmp_path / "w")), "what", "--data-dir", str(tmp_path / "data"),
                              *arguments), cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: ") and words in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "data").exists()


def test_the_cli_says_the_engines_refusal_of_a_question_in_one_line(tmp_path):
    """A question's own rules (here a language no file is read as) are the engine's, as for every face: one
    line, nothing indexed."""
    done = subprocess.run(cli("query", str(folder(tmp_path / "w")), "what", "--data-dir", str(tmp_path / "data"),
                              "--language", "klingon"), cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("error: Unknown language 'klingon'. Known: c, ")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not list((tmp_path / "data").glob("**/manifest.sqlite")), "nothing indexed"


# --- a big rerank does not starve queries and stops when its client leaves ---
class CountingEncoder:
    """The real document encoder, counting the slices it encodes (to see the rerank's progress)."""

    def __init__(self, embedder) -> None:
        self.embedder, self.slices, self.started = embedder, 0, threading.Event()

    def encode(self, texts):
        self.started.set()
        vectors = self.embedder.encode(texts)
        self.slices += 1
        return vectors


@pytest.fixture(scope="module")
def rerank_server(tmp_path_factory):
    """A warm engine served in a thread with a small indexed workspace: (url, service, key, encoder)."""
    tmp_path = tmp_path_factory.mktemp("rerank")
    workspace = tmp_path / "projects" / "notes"
    shutil.copytree(SAMPLE / "notes", workspace)
    data_dir = tmp_path / "data"
    service = LocalEngine(data_dir=data_dir, kind="server")
    encoder = CountingEncoder(service.document_embedder)
    service.document_embedder = encoder
    app = build_app(service, data_dir, mcp=False, allowed_roots=[str(tmp_path / "projects")])
    with contextlib.closing(service), app_in_thread(app) as url:
        key = httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).json()["id"]
        asyncio.run(service.index(workspace))
        encoder.embedder.load()
        yield url, service, key, encoder


def documents(n: int = 200) -> list[str]:
    """Documents filling most of a request body (1 MiB), each far longer than the model reads (256 tokens)."""
    return [f"document {i}: " + " ".join(f"word{(i * j) % 997} token{j}" for j in range(220)) for i in range(n)]


async def test_a_query_is_answered_while_a_200_document_rerank_runs(rerank_server):
    url, service, key, encoder = rerank_server
    encoder.started.clear()
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        rerank = asyncio.ensure_future(client.post("/v1/rerank", json={"query": "word5 token3",
                                                                      "documents": documents(),
                                                                      "strategy": "keyword-boost"}))
        assert await asyncio.to_thread(encoder.started.wait, 120)
        answer = await client.post(f"/v1/workspaces/{key}/query", json={"question": "save a note", "top_k": 3,
                                                                        "use_cache": False})
        assert answer.status_code == 200 and answer.json()["results"]
        assert not rerank.done()  # the query was answered while the rerank was still going
        done = await rerank
    assert done.status_code == 200 and len(done.json()["results"]) == 200


async def test_a_rerank_stops_when_its_client_leaves(rerank_server):
    url, service, _key, encoder = rerank_server
    encoder.started.clear()
    before = encoder.slices
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        rerank = asyncio.ensure_future(client.post("/v1/rerank", json={"query": "word5", "documents": documents(),
                                                                      "strategy": "none"}))
        assert await asyncio.to_thread(encoder.started.wait, 120)
        rerank.cancel()  # the client goes away: its connection closes
        with contextlib.suppress(asyncio.CancelledError):
            await rerank
        # reranks run one at a time, in order: when the next one is answered, the first has ended
        after = await client.post("/v1/rerank", json={"query": "word5", "documents": ["word5"], "strategy": "none"})
    assert after.status_code == 200
    all_slices = -(-201 // 8)
    assert encoder.slices - before < all_slices  # stopped before encoding every document
