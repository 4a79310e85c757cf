"""Two threads opening the embedded vector store of one folder at once (a health request beside a server's
first index run): the second must get a started client, never Chroma's cached, unstarted system
("'RustBindingsAPI' object has no attribute 'bindings'")."""

from __future__ import annotations

import threading

from chromadb.config import System

from services.storage import vector_store
from services.storage.vector_store import forget_client, make_client


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
