"""Two threads opening the embedded vector store of one folder at once (a health request beside a server's
first index run): the second must get a started client, never Chroma's cached, unstarted system
("'RustBindingsAPI' object has no attribute 'bindings'")."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from chromadb.config import System

from services.storage import vector_store
from services.storage.vector_store import forget_client, make_client
from tests.conftest import copy_sample
from tests.helpers.engine_server import index_and_wait, register, served


class Watched:
    """A lock that says when a thread asks for it."""

    def __init__(self, lock, asked: threading.Event):
        self.lock, self.asked = lock, asked

    def __enter__(self):
        self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_client_opened_while_another_starts_is_started(tmp_path, monkeypatch):
    path = tmp_path / "chroma"
    second_in = threading.Event()  # the second thread asked for the start lock, or already has its client
    first_starting = threading.Event()
    real_start = System.start

    def slow_start(system):  # the first start waits until the second opener is in
        first_starting.set()
        assert second_in.wait(timeout=60)
        real_start(system)

    monkeypatch.setattr(System, "start", slow_start)
    first: dict = {}
    opener = threading.Thread(target=lambda: first.setdefault("client", make_client(path, None)))
    opener.start()
    assert first_starting.wait(timeout=60)
    monkeypatch.setattr(vector_store, "CLIENT_START", Watched(vector_store.CLIENT_START, second_in))
    try:
        second = make_client(path, None)
    finally:
        second_in.set()
        opener.join(timeout=60)
    try:
        assert second.list_collections() == [] and first["client"].list_collections() == []
    finally:
        forget_client(path)


@pytest.mark.slow  # starts servers and the model
def test_a_fresh_server_indexes_while_health_requests_arrive_with_it(tmp_path):
    """A freshly started `serve`, its first index run of a new workspace fired together with health
    requests (each opens the store on its own thread), three times: every run done, every answer 200."""
    for round_ in range(3):
        root = tmp_path / f"round-{round_}"
        workspace = copy_sample(root / "workspace")
        for server in served(root, root):
            with httpx.Client(base_url=server["url"], timeout=120) as client:
                key = register(client, workspace)
                answers = fired_together(client, key)
                status = index_and_wait(client, key)
            assert status["state"] == "done", status
            assert all(a.status_code in (200, 202) for a in answers), [a.text for a in answers]
            assert not [a.text for a in answers if "bindings" in a.text or "unavailable" in a.text]


def fired_together(client: httpx.Client, key: str) -> list[httpx.Response]:
    """POST …/index and four GET …/health, released at once from their own threads."""
    calls = [lambda: client.post(f"/v1/workspaces/{key}/index", json={})]
    calls += [lambda: client.get(f"/v1/workspaces/{key}/health")] * 4
    gate = threading.Barrier(len(calls))

    def fire(call):
        gate.wait(timeout=60)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(fire, calls))
