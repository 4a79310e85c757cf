"""A real `knowledge-explorer serve` process on 127.0.0.1 (free port), for the service API tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 240  # seconds: the server loads the model before it listens
INDEX_TIMEOUT = 600


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli", *args]


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def start_server(data_dir: Path, log: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """Start the server and wait (polling, with a deadline) until its owner JSON names its URL."""
    from services.storage.ownership import read_owner

    with open(log, "w") as out:
        process = subprocess.Popen(cli("serve", "--data-dir", str(data_dir), "--port", "0", *extra),
                                   cwd=ROOT, env=env(), stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}): {log.read_text()[-2000:]}")
        owner = read_owner(data_dir)
        if owner and owner.url and owner.pid == process.pid:
            return process, owner.url
        time.sleep(0.1)
    stop_server(process)
    raise RuntimeError(f"the server did not start in {START_TIMEOUT} s: {log.read_text()[-2000:]}")


def stop_server(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def served(root: Path, allowed_root: Path):
    """A server on root/data for a fixture's lifetime, allowed under `allowed_root`: yields {"url", "data_dir"}."""
    process, url = start_server(root / "data", root / "server.log", "--allow-root", str(allowed_root))
    try:
        yield {"url": url, "data_dir": root / "data"}
    finally:
        stop_server(process)


def register(client: httpx.Client, folder: Path) -> str:
    response = client.post("/v1/workspaces", json={"path": str(folder)})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def index_and_wait(client: httpx.Client, key: str, full: bool = False) -> dict:
    """Start an index run and poll its status until it ends; returns the final status."""
    started = client.post(f"/v1/workspaces/{key}/index", json={"full": full})
    assert started.status_code in (202, 409), started.text
    deadline = time.monotonic() + INDEX_TIMEOUT
    while time.monotonic() < deadline:
        status = client.get(f"/v1/workspaces/{key}/index").json()
        if status["state"] != "running":
            return status
        time.sleep(0.2)
    raise AssertionError("the index run did not end in time")


@contextlib.contextmanager
def app_in_thread(app, host: str = "127.0.0.1"):
    """Serve an ASGI app (e.g. app.server.build_app(...)) with uvicorn in a thread; yields its URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    try:
        assert server.started, "the in-thread server did not start"
        yield f"http://{host}:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.contextmanager
def one_file_server(root: Path, name: str, text: str, settings=None):
    """(url, workspace id, service, workspace folder): an engine served in this process on 127.0.0.1, not
    warmed (no model loads before a request needs it), with one workspace of one file, registered; only paths
    under `root`/projects are allowed."""
    from app.server import build_app
    from services.engine.service import LocalEngine

    workspace = root / "projects" / "one"
    workspace.mkdir(parents=True)
    (workspace / name).write_text(text)
    service = LocalEngine(settings, data_dir=root / "data", kind="server")
    app = build_app(service, root / "data", warm=False, allowed_roots=[str(root / "projects")])
    with contextlib.closing(service), app_in_thread(app) as url:
        key = httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).json()["id"]
        yield url, key, service, workspace
