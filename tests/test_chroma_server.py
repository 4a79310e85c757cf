"""The same engine through a real `chroma run` server on 127.0.0.1 (HttpClient)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
import urllib.request

import pytest

from services.engine.service import LocalEngine
from services.core.models import QueryOptions

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_url(tmp_path):
    beside_python = Path(sys.executable).parent / "chroma"  # the venv need not be on PATH
    chroma = str(beside_python) if beside_python.exists() else shutil.which("chroma")
    if chroma is None:
        pytest.fail("the `chroma` command (installed with chromadb) is missing")
    port = free_port()
    server = subprocess.Popen([chroma, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{url}/api/v2/heartbeat")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def wait_for(url: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"Chroma server at {url} did not answer within {seconds} s")


async def test_index_and_query_through_a_chroma_server(chroma_url, workspace, tmp_path):
    service = LocalEngine(data_dir=tmp_path / "data", chroma_url=chroma_url)
    try:
        report = await service.index(workspace)
        assert report.chunks_total > 50
        again = await service.index(workspace)
        assert again.chunks_embedded == 0 and again.files_unchanged == report.files_indexed
        result = await service.query("what implements ChunkStore",
                                     QueryOptions(workspace=str(workspace), strategy="metadata", top_k=5))
        assert result.results[0].chunk.symbol in {"MemoryChunkStore", "DiskChunkStore"}
        assert not list((tmp_path / "data").rglob("chroma"))  # no local store beside the server
    finally:
        service.close()
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=int(chroma_url.rsplit(":", 1)[1]))
    assert sum(c.count() for c in client.list_collections()) == report.chunks_total
