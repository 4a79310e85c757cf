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


def copy_sample(target: Path) -> Path:
    """A copy of the sample workspace, with its ignore files and ignored folders."""
    shutil.copytree(SAMPLE, target, symlinks=True)
    return target


@pytest.fixture
def workspace(tmp_path) -> Path:
    return copy_sample(tmp_path / "workspace")


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def service(data_dir):
    from services.knowledge import KnowledgeService

    svc = KnowledgeService(data_dir=data_dir)
    yield svc
    svc.close()
