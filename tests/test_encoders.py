"""Encoder backends on real parts: the bundled MiniLM exported to ONNX and quantised here, torch beside it."""

from __future__ import annotations

import json
import os
import sys
import threading

import numpy as np
import pytest

from services.encoders.embedder import Embedder, bundled_model_path
from services.encoders import EncoderSpec, backend_names, choose_device, create_encoder
from services.encoders import device as device_module
from services.encoders.openvino_runtime import COMPILED
from services.core.errors import ModelLoadError

SAMPLES = ["def read_config(path):\n    with open(path) as f:\n        return json.load(f)",
           "how do I sort a dictionary by value", "class Stack:\n    def push(self, item): ...\n" * 4]


@pytest.fixture(scope="session")
def export_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("encoders")


def exported(backend: str, export_dir) -> object:
    return create_encoder(backend, EncoderSpec(str(bundled_model_path()), cache_dir=export_dir))


@pytest.fixture(scope="session")
def int8(export_dir):
    """The real MiniLM exported and quantised once per session."""
    return exported("onnx-int8", export_dir)


@pytest.fixture(scope="session")
def openvino(export_dir):
    """The real MiniLM's ONNX export run by OpenVINO (fp32), once per session."""
    return exported("openvino", export_dir)


@pytest.fixture(scope="session")
def openvino_int8(export_dir):
    """The real MiniLM exported, then quantised statically by NNCF for OpenVINO, once per session."""
    return exported("openvino-int8", export_dir)


def files_under(folder) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize(("encoder", "cosine"), [("int8", 0.98), ("openvino_int8", 0.99), ("openvino", 0.9999)])
def test_exported_vectors_match_torch(encoder, cosine, request):
    torch_vectors = create_encoder("torch", EncoderSpec(str(bundled_model_path()))).encode(SAMPLES)
    vectors = request.getfixturevalue(encoder).encode(SAMPLES)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert (vectors * torch_vectors).sum(axis=1).min() > cosine


@pytest.mark.slow
@pytest.mark.parametrize(("fixture", "backend", "suffix", "atol"),
                         [("int8", "onnx-int8", ".onnx", 1e-8), ("openvino_int8", "openvino-int8", ".xml", 1e-5)])
def test_second_load_reuses_the_export(fixture, backend, suffix, atol, export_dir, request):
    first = request.getfixturevalue(fixture)
    before = files_under(export_dir)
    again = exported(backend, export_dir)
    assert files_under(export_dir) == before  # nothing exported, quantised or rewritten
    assert again.path == first.path and again.path.suffix == suffix
    assert np.allclose(again.encode(SAMPLES[:1]), first.encode(SAMPLES[:1]), atol=atol)


@pytest.mark.slow
def test_openvino_keeps_its_compiled_model_and_a_start_from_it_gives_the_same_vectors(openvino_int8, export_dir):
    """Issue 44 (a cold start): the compiled model is kept beside its export, and an encoder started from it
    (no compiling) gives exactly the vectors of the one that compiled it."""
    assert list((openvino_int8.path.parent / COMPILED).iterdir())
    again = exported("openvino-int8", export_dir)
    assert np.array_equal(again.encode(SAMPLES), openvino_int8.encode(SAMPLES))


@pytest.mark.slow
def test_openvino_int8_quantises_only_the_projections_and_the_expansion(openvino_int8):
    # the products that cost quality in int8 (attention scores, output projections) stay fp32
    import openvino

    model = openvino.Core().read_model(str(openvino_int8.path))
    products = {op.get_friendly_name(): op.input(0).get_source_output().get_node().get_type_name()
                for op in model.get_ops() if op.get_type_name() == "MatMul"}
    int8 = {name.split("/layer.")[1].split("/", 1)[1] for name, source in products.items() if source == "FakeQuantize"}
    assert int8 == {"attention/self/query/MatMul", "attention/self/key/MatMul", "attention/self/value/MatMul",
                    "intermediate/dense/MatMul"}
    assert sum(source == "FakeQuantize" for source in products.values()) == 4 * 6  # in each of the six layers


@pytest.mark.slow
def test_another_sequence_length_is_another_export(int8, export_dir):
    from services.encoders.export import cache_key

    folder = bundled_model_path()
    assert cache_key(folder, 128, "dynamic") != cache_key(folder, 256, "dynamic")
    assert len({cache_key(folder, 256), cache_key(folder, 256, "dynamic"), cache_key(folder, 256, "static")}) == 3


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["openvino", "openvino_int8"])
def test_openvino_vector_of_a_text_does_not_depend_on_its_batch(encoder, request):
    # int8 too: its activations' ranges were fixed at quantisation, not measured on each batch
    encoder = request.getfixturevalue(encoder)
    alone = encoder.encode(SAMPLES[:1])
    beside_longer = encoder.encode(SAMPLES[:1] + ["x = 1\n" * 200, "def f():\n    pass"])[:1]
    assert np.allclose(alone, beside_longer, atol=1e-4)


@pytest.mark.slow
def test_openvino_calls_from_two_threads_at_once_give_each_text_its_own_vectors(openvino_int8):
    """The indexer keeps two calls running (calls_at_once): each thread gets the vectors of its own texts."""
    texts = [f"def f{i}(x):\n    return x * {i}\n" * (1 + i % 5) for i in range(96)]
    halves = [texts[:48], texts[48:]]
    alone = [openvino_int8.encode(half) for half in halves]
    start = threading.Barrier(2)
    together: list = [None, None]

    def encode(number: int) -> None:
        start.wait(timeout=60)
        together[number] = [openvino_int8.encode(halves[number]) for _ in range(3)]

    threads = [threading.Thread(target=encode, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert openvino_int8.calls_at_once == 2
    for number in (0, 1):
        assert all(np.allclose(vectors, alone[number], atol=1e-5) for vectors in together[number])


@pytest.mark.slow
def test_without_openvino_the_onnx_int8_backend_runs_with_a_note(monkeypatch, export_dir):
    # a platform without OpenVINO's wheels: importing it fails, as it would there
    monkeypatch.setitem(sys.modules, "openvino", None)
    embedder = Embedder("all-MiniLM-L6-v2", backend="openvino", device="cpu", cache_dir=export_dir,
                        role="no-openvino-test")
    assert embedder.backend_used == "onnx-int8"
    assert "openvino on cpu could not start" in embedder.note and "using onnx-int8" in embedder.note
    assert embedder.encode(["hello"]).shape == (1, 384)


def model_with_max_pooling(tmp_path):
    """The bundled model with max pooling: sentence-transformers loads it, the ONNX backend cannot."""
    source, folder = bundled_model_path(), tmp_path / "max-pooled"
    for item in source.rglob("*"):
        target = folder / item.relative_to(source)
        if item.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(item, target)
    config = folder / "1_Pooling" / "config.json"
    settings = json.loads(config.read_text()) | {"pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": True}
    config.unlink()
    config.write_text(json.dumps(settings))
    return folder


@pytest.mark.slow
def test_a_model_that_cannot_be_exported_runs_on_torch_with_a_note(tmp_path):
    embedder = Embedder(str(model_with_max_pooling(tmp_path)), backend="onnx-int8", device="cpu",
                        cache_dir=tmp_path / "cache", role="fallback-test")
    assert embedder.backend_used == "torch"
    assert "onnx-int8 on cpu could not start" in embedder.note and "pooling" in embedder.note
    assert embedder.encode(["hello"]).shape == (1, 384)


def test_unknown_backend_or_device_is_a_clear_error():
    with pytest.raises(ModelLoadError, match="Unknown embedding backend 'tpu'"):
        Embedder("all-MiniLM-L6-v2", backend="tpu")
    with pytest.raises(ModelLoadError, match="Unknown device 'npu'"):
        Embedder("all-MiniLM-L6-v2", device="npu")
    assert {"torch", "onnx", "onnx-int8", "openvino", "openvino-int8"} <= set(backend_names())


@pytest.mark.parametrize("requested, seen, expected", [
    ("auto", {"cuda": True, "mps": True}, "cuda"),
    ("auto", {"cuda": False, "mps": True}, "mps"),
    ("auto", {"cuda": False, "mps": False}, "cpu"),
    ("cpu", {"cuda": True, "mps": False}, "cpu"),
    ("mps", {"cuda": False, "mps": True}, "mps"),
])
def test_device_choice_follows_what_torch_sees(requested, seen, expected):
    assert choose_device(requested, seen) == (expected, "")


def test_a_requested_gpu_torch_does_not_see_falls_back_with_a_note():
    device, note = choose_device("cuda", {"cuda": False, "mps": False})
    assert device == "cpu" and "cuda was requested" in note


def test_this_machine_has_no_gpu_so_auto_is_the_cpu():
    assert choose_device("auto") == ("cpu", "")


@pytest.mark.slow
def test_a_gpu_that_fails_to_start_falls_back_to_the_cpu(monkeypatch):
    # No GPU here: torch is told it sees one, and the real CUDA start then fails (CPU-only torch).
    monkeypatch.setattr(device_module, "torch_devices", lambda: {"cuda": True, "mps": False})
    embedder = Embedder("all-MiniLM-L6-v2", backend="onnx-int8", device="auto", role="gpu-test")
    assert embedder.backend_used == "onnx-int8" and embedder.device_used == "cpu"  # the CPU backend asked for
    assert "torch on cuda could not start" in embedder.note and "using onnx-int8 on the CPU" in embedder.note
    assert embedder.encode(["hello"]).shape == (1, 384)


def test_the_runtime_tokenizer_matches_autotokenizer():
    from transformers import AutoTokenizer

    from services.encoders.export import load_tokenizer

    texts = SAMPLES + ["", "Ünïcödé straße İ", "token " * 400]
    expected = AutoTokenizer.from_pretrained(str(bundled_model_path()))(
        texts, padding=True, truncation=True, max_length=256, return_tensors="np")
    got = load_tokenizer(bundled_model_path(), 256)(texts)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert np.array_equal(got[name], expected[name]), name


@pytest.mark.slow
async def test_backend_or_format_change_rebuilds_and_says_why(data_dir, workspace):
    from services.engine.service import LocalEngine
    from services.core.settings import Settings
    from services.storage.workspace_index import WorkspaceIndex, workspace_root

    first = LocalEngine(Settings(embedding_backend="torch"), data_dir=data_dir)
    await first.index(workspace)
    first.close()
    second = LocalEngine(Settings(embedding_backend="onnx-int8"), data_dir=data_dir)
    report = await second.index(workspace)
    assert "backend changed from torch to onnx-int8" in report.rebuilt_reason
    assert report.chunks_embedded == report.chunks_total
    health = await second.health(workspace)
    assert (health.backend, health.device, health.encoder_note) == ("onnx-int8", "cpu", "")

    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    index.catalog().set_meta(index_format="1")  # an index written before chunk text was stored once
    index.close()
    again = await second.index(workspace)
    second.close()
    assert "index format changed" in again.rebuilt_reason and again.chunks_embedded == again.chunks_total


def test_one_folder_of_encoders_per_machine_whatever_the_data_dir(monkeypatch, tmp_path):
    """Exports live in the user's cache folder (or KE_ENCODER_CACHE_DIR), not in each data dir (issue 44)."""
    from services.encoders.export import default_cache_dir

    monkeypatch.delenv("KE_ENCODER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_cache_dir() == tmp_path / "cache" / "knowledge-explorer" / "encoders"
    monkeypatch.setenv("KE_ENCODER_CACHE_DIR", str(tmp_path / "chosen"))
    assert default_cache_dir() == tmp_path / "chosen"


@pytest.mark.slow
def test_the_int8_model_is_made_without_keeping_an_fp32_copy(tmp_path):
    """openvino-int8 quantises a fresh fp32 export and keeps only its own files (issue 44: 121 MB per data
    dir was the int8 model plus the fp32 export it was made from)."""
    encoder = exported("openvino-int8", tmp_path)
    folders = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert len(folders) == 1 and "-openvino-int8-" in folders[0], folders
    assert not list(tmp_path.rglob("*.onnx"))
    assert encoder.encode(SAMPLES[:1]).shape == (1, 384)
