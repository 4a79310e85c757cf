"""Fixtures shared by the engine tests: a private copy of the sample workspace and a data dir."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The ONNX encoder is exported once and shared by every test's data dir (and the engine processes
# they start); its cache key covers the model and the export config, so reusing it is safe.
os.environ.setdefault("KE_ENCODER_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"ke-test-encoders-{os.getuid()}"))

SAMPLE = Path(__file__).parent / "sample_workspace"


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true",
                     help="rewrite tests/golden/quality.json with the figures measured now instead of comparing")


def copy_sample(target: Path) -> Path:
    """A copy of the sample workspace, with its ignore files and ignored folders."""
    shutil.copytree(SAMPLE, target, symlinks=True)
    return target


def indexed_sample(root: Path, settings=None):
    """(service, workspace): a copy of the sample workspace under `root`, indexed once; the service
    is closed when the generator ends (for module-scoped fixtures, where indexing is the slow part)."""
    import asyncio

    from services.engine.service import LocalEngine

    workspace = copy_sample(root / "workspace")
    service = LocalEngine(settings, data_dir=root / "data")
    asyncio.run(service.index(workspace))
    yield service, workspace
    service.close()


@pytest.fixture(scope="session")
def qapp(qapp):
    """pytest-qt's QApplication with the app's theme and the fonts the project ships (resources/fonts),
    so window sizes and layouts are the same whatever fonts this machine has."""
    from ui.theme import apply_theme

    apply_theme(qapp)
    return qapp


# --- the unit tier: `pytest -m unit`, the one-minute loop ---
# A test is `unit` unless it is marked for a slower tier or asks for a fixture that starts Qt, a model, an
# engine or a server; a unit test that starts one anyway fails, saying which tier it belongs to.
SLOW_TIERS = {"slow", "scale", "stand_in_encoder"}
HEAVY_FIXTURES = {"qtbot", "qapp", "qasync_loop", "loop", "window", "service", "engine_server", "served_workspace"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        in_folder = {"ui", "contract"} & set(Path(str(item.fspath)).relative_to(Path(__file__).parent).parts[:-1])
        if not marks & SLOW_TIERS and not set(getattr(item, "fixturenames", ())) & HEAVY_FIXTURES and not in_folder:
            item.add_marker(pytest.mark.unit)


class NotAUnitTest(Exception):
    """A `unit` test started what makes a test slow: mark it `slow` (or `stand_in_encoder`)."""


@pytest.fixture(scope="session", autouse=True)
def unit_tier(request):
    """`pytest -m unit` stays fast: for the whole run (module fixtures included), starting a process, opening
    a socket or loading a model raises NotAUnitTest naming what was done. Only when the unit tier is what
    runs, so it is the same in any order; a whole-suite run is not guarded."""
    if request.config.getoption("markexpr", "") != "unit":
        yield
        return

    def refuse(what: str):
        def refused(*_args, **_kwargs):
            raise NotAUnitTest(f"a unit test {what}: mark it slow (tests/conftest.py, the unit tier)")
        return refused

    import socket
    import subprocess

    import services.encoders.embedder as embedder
    from services.encoders import base

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refuse("started a process"))
        patch.setattr(socket.socket, "connect", refuse("opened a connection"))
        patch.setattr(socket.socket, "bind", refuse("listened on a socket"))
        patch.setattr(base, "create_encoder", refuse("loaded a model"))
        patch.setattr(embedder, "create_encoder", refuse("loaded a model"))
        yield


@pytest.fixture
def workspace(tmp_path) -> Path:
    return copy_sample(tmp_path / "workspace")


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


def stand_in_wanted(request) -> bool:
    """Whether the test is marked `stand_in_encoder`: the model is not its point (tests/helpers/stand_in_encoder.py)."""
    return request.node.get_closest_marker("stand_in_encoder") is not None


@pytest.fixture(autouse=True)
def stand_in_environment(request, monkeypatch):
    """For a test marked `stand_in_encoder`, the CLI (in this process and its children) embeds with the stand-in."""
    if stand_in_wanted(request):
        from tests.helpers.stand_in_encoder import stand_in_model

        monkeypatch.setenv("KE_EMBEDDING_MODEL", str(stand_in_model()))


@pytest.fixture
def service(request, data_dir):
    from services.engine.service import LocalEngine
    from tests.helpers.stand_in_encoder import stand_in_settings

    svc = LocalEngine(stand_in_settings() if stand_in_wanted(request) else None, data_dir=data_dir)
    yield svc
    svc.close()


@pytest.fixture(scope="session")
def engine_server(tmp_path_factory):
    """One real `knowledge-explorer serve` process on 127.0.0.1 for the session: {"url", "data_dir"}."""
    from tests.helpers.engine_server import served

    yield from served(tmp_path_factory.mktemp("engine-server"), tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session")
def served_workspace(engine_server, tmp_path_factory):
    """A copy of the sample workspace registered and indexed on engine_server:
    {"url", "data_dir", "workspace", "id"}."""
    import httpx

    from tests.helpers.engine_server import index_and_wait, register

    workspace = copy_sample(tmp_path_factory.mktemp("served") / "workspace")
    with httpx.Client(base_url=engine_server["url"], timeout=120) as client:
        key = register(client, workspace)
        assert index_and_wait(client, key)["state"] == "done"
    return {**engine_server, "workspace": workspace, "id": key}
