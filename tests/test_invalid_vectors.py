"""Vectors that are not finite (NaN or infinity) are never stored nor searched with silently (issue 42): a real
model whose weights are damaged for one word (the stand-in MiniLM with that word's embedding row set to NaN, run by
the torch backend) embeds other texts as before; a file holding the word is refused (listed, naming the encoder),
and a question holding it is answered with a warning saying why there are no results, never a plain empty list.
An exported model damaged on disk is found by the checksums recorded when it was made, and made again."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from services.core.models import QueryOptions
from services.core.settings import Settings
from services.encoders.embedder import Embedder
from services.engine.service import LocalEngine
from tests.helpers.engine_server import ROOT, cli, env
from tests.helpers.stand_in_encoder import stand_in_model

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

WORD = "zebra"


@pytest.fixture(scope="module")
def damaged_model(tmp_path_factory):
    """The stand-in model with WORD's embedding row set to NaN (as damaged weights would hold it)."""
    import torch
    from transformers import AutoTokenizer, BertModel

    folder = tmp_path_factory.mktemp("damaged") / "minilm-nan-zebra"
    shutil.copytree(stand_in_model(), folder)
    model = BertModel.from_pretrained(str(folder))
    row = AutoTokenizer.from_pretrained(str(folder)).convert_tokens_to_ids(WORD)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[row] = float("nan")
    model.save_pretrained(str(folder))
    return folder


@pytest.fixture
def engine(damaged_model, tmp_path):
    service = LocalEngine(Settings(embedding_model=str(damaged_model), embedding_backend="torch"),
                               data_dir=tmp_path / "data")
    yield service
    service.close()


async def test_a_file_the_encoder_embeds_as_nan_is_refused_naming_the_encoder_and_never_stored(engine, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "adder.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    (workspace / "animals.py").write_text(f"def {WORD}_stripes():\n    return 'the {WORD} has stripes'\n")
    report = await engine.index(workspace)
    reasons = {s.path: s.reason for s in report.skipped}
    assert "animals.py" in reasons and "adder.py" not in reasons
    assert reasons["animals.py"].startswith("could not be embedded: the torch encoder of minilm-nan-zebra "
                                            "produced vectors that are not finite (NaN or infinity)")
    health = await engine.health(workspace)
    assert health.files == 1 and health.chunks == engine.workspace_index(workspace).store().count()
    assert "the torch encoder of minilm-nan-zebra produced vectors that are not finite" in health.encoder_note
    answer = await engine.query("add numbers", QueryOptions(str(workspace), strategy="none"))
    assert answer.results[0].chunk.symbol == "add_numbers" and answer.warning == ""


async def test_a_question_the_encoder_embeds_as_nan_is_answered_with_a_warning_not_an_empty_list(engine, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "adder.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    await engine.index(workspace)
    answer = await engine.query(f"where is the {WORD}", QueryOptions(str(workspace), strategy="none"))
    assert answer.results == [] and answer.warning.startswith(
        "no answer: the torch encoder of minilm-nan-zebra produced vectors that are not finite")


def test_the_cli_prints_the_warning_and_its_json_carries_it(damaged_model, tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "adder.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    settings = {**env(), "KE_EMBEDDING_MODEL": str(damaged_model), "KE_EMBEDDING_BACKEND": "torch"}
    common = ["--data-dir", str(tmp_path / "data")]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(cli(*args, *common), cwd=ROOT, env=settings, capture_output=True, text=True, timeout=300)

    assert run("index", str(workspace)).returncode == 0
    shown = run("query", str(workspace), f"where is the {WORD}", "--strategy", "none")
    assert "warning: no answer: the torch encoder of minilm-nan-zebra" in shown.stdout, shown.stdout + shown.stderr
    data = json.loads(run("query", str(workspace), f"where is the {WORD}", "--strategy", "none", "--json").stdout)
    assert data["results"] == [] and data["warning"].startswith("no answer: the torch encoder")


def test_a_damaged_export_is_found_by_its_checksum_and_made_again(tmp_path):
    cache = tmp_path / "encoders"
    texts = ["def add_numbers(a, b):\n    return a + b", "how do I add two numbers"]

    def embedder(role: str) -> Embedder:  # a role of its own: a new load, not the process's loaded encoder
        return Embedder(str(stand_in_model()), role=role, backend="openvino-int8", cache_dir=cache)

    first = embedder("checksum-made")
    expected = first.encode(texts)
    assert first.note == ""
    model_bin = next(cache.glob("*-openvino-int8-*/model.bin"))
    data = bytearray(model_bin.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 65536] = np.random.default_rng(42).integers(0, 256, 65536, dtype=np.uint8).tobytes()
    model_bin.write_bytes(bytes(data))
    again = embedder("checksum-damaged")
    assert again.note == f"the exported model {model_bin.parent.name} was damaged (a file's checksum differs) and " \
                         "was made again"
    assert np.allclose(again.encode(texts), expected, atol=1e-5)
    assert model_bin.read_bytes() != bytes(data)
