"""The three engines of the contract suite, each over its own indexed copy of the sample workspace:
the in-process LocalEngine, an EngineProcess (a child process), and a RemoteEngine talking to a
real `knowledge-explorer serve` process of its own. Session-scoped: each loads the model once.

Each engine's data dir holds only its copy: the data dir's shared vector cache would otherwise hand the
remote engine vectors that other tests' runs computed in other batches (onnx-int8 vectors differ in their
last digits with the batch), and its answers would differ from the others' by a rank or a threshold count."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.engine.service import LocalEngine
from services.storage.ownership import OwnerLock
from services.transport.engine_process import EngineProcess
from services.transport.remote import RemoteEngine
from tests.conftest import copy_sample

KINDS = ("in-process", "engine-process", "remote")


@dataclass(frozen=True)
class Subject:
    kind: str
    engine: object  # an Engine (services.engine.protocol)
    workspace: Path  # indexed
    data_dir: Path  # the engine's own (for a remote engine: the server's)


def indexed(kind: str, engine, root: Path, data_dir: Path):
    workspace = copy_sample(root / "workspace")
    asyncio.run(engine.index(workspace))
    try:
        yield Subject(kind, engine, workspace, data_dir)
    finally:
        engine.close()


@pytest.fixture(scope="session")
def in_process(tmp_path_factory):
    root = tmp_path_factory.mktemp("contract-in-process")
    yield from indexed("in-process", LocalEngine(data_dir=root / "data"), root, root / "data")


@pytest.fixture(scope="session")
def engine_process(tmp_path_factory):
    root = tmp_path_factory.mktemp("contract-engine-process")
    yield from indexed("engine-process", EngineProcess(data_dir=root / "data"), root, root / "data")


@pytest.fixture(scope="session")
def contract_server(tmp_path_factory):
    """A real `knowledge-explorer serve` process for the contract's remote engine alone: {"url", "data_dir"}."""
    from tests.helpers.engine_server import served

    yield from served(tmp_path_factory.mktemp("contract-server"), tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def remote(contract_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("contract-remote")
    engine = RemoteEngine(contract_server["url"], data_dir=root / "local")
    yield from indexed("remote", engine, root, contract_server["data_dir"])


@pytest.fixture(params=KINDS)
def subject(request) -> Subject:
    return request.getfixturevalue(request.param.replace("-", "_"))


@contextlib.contextmanager
def busy_engine(kind: str, data_dir: Path):
    """An engine of `kind` on `data_dir` while this test process owns that data dir (as a CLI would)."""
    holder = OwnerLock(data_dir, "cli")
    assert holder.acquire()
    try:
        if kind == "in-process":
            engine = LocalEngine(data_dir=data_dir)
            with contextlib.closing(engine):
                yield engine
        elif kind == "engine-process":
            engine = EngineProcess(data_dir=data_dir)
            with contextlib.closing(engine):
                yield engine
        else:  # a server whose engine cannot own its data dir
            from app.server import build_app
            from tests.helpers.engine_server import app_in_thread

            service = LocalEngine(data_dir=data_dir, kind="server")
            with contextlib.closing(service), app_in_thread(build_app(service, data_dir, warm=False, mcp=False,
                                                                       allowed_roots=[data_dir.parent])) as url:
                engine = RemoteEngine(url, data_dir=data_dir.parent / "local")
                with contextlib.closing(engine):
                    yield engine
    finally:
        holder.release()
