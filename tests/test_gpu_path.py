"""The fast GPU path (services/encoders/): device choice, batch sizing, fp16 checked against fp32, the
producer thread that tokenizes ahead, progress naming the device, and the loud note when a GPU sits idle.

There is NO GPU on the machines these tests run on (CPU-only torch). Where a test needs a GPU, what torch
*reports* is faked (torch.cuda.is_available, torch.cuda.mem_get_info, services.encoders.device.torch_devices)
and each such test says so; the model, fp16 arithmetic and the pipeline itself run for real, on the CPU.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from services.encoders import device as device_module
from services.encoders.base import EncoderSpec
from services.encoders.device import MAX_GPU_BATCH, MIN_GPU_BATCH, choose_device, gpu_batch_size, unused_gpu_note
from services.encoders import embedder as embedder_module
from services.encoders.embedder import Embedder, bundled_model_path
from services.encoders import torch_backend
from services.encoders.torch_backend import PROBE, TorchEncoder, encode_pipelined, pick_precision
from tests.helpers.workspaces import small_workspaces

GB = 1024 ** 3


def fake_cuda(monkeypatch, available: bool = True, free: int | None = None) -> None:
    """FAKE: no GPU exists here; torch is made to report one (and its free memory)."""
    monkeypatch.setattr(device_module, "gpu_possible", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
    if free is not None:
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (free, 80 * GB))


def test_auto_takes_the_gpu_torch_reports(monkeypatch):
    fake_cuda(monkeypatch)  # FAKE GPU: torch.cuda.is_available() says True
    assert device_module.torch_devices()["cuda"] and choose_device("auto") == ("cuda", "")


def test_a_gpu_present_but_unused_is_a_loud_note(monkeypatch):
    assert unused_gpu_note("cpu") == ""  # the truth here: no GPU, nothing to say
    fake_cuda(monkeypatch)  # FAKE GPU
    note = unused_gpu_note("cpu")
    assert note.startswith("GPU NOT USED") and "--device auto" in note
    assert unused_gpu_note("cuda") == ""
    fake_cuda(monkeypatch, available=False)  # FAKE: a driver torch cannot use
    monkeypatch.setattr(device_module, "nvidia_driver", lambda: True)
    assert "CPU-only torch build" in unused_gpu_note("cpu")


@pytest.mark.parametrize("free, fp16, expected", [
    (78 * GB, True, MAX_GPU_BATCH),  # an H100: capped where more gains nothing
    (2 * GB, False, 64),  # a small card in fp32: 2 GiB / 4 / (256 tokens x 24 KiB) = 85 -> 64
    (2 * GB, True, 128),  # fp16 halves the activations
    (100 * 1024 ** 2, False, MIN_GPU_BATCH),  # almost full: the floor
])
def test_cuda_batches_are_sized_to_the_free_memory(monkeypatch, free, fp16, expected):
    fake_cuda(monkeypatch, free=free)  # FAKE: torch.cuda.mem_get_info() reports `free` bytes
    assert gpu_batch_size("cuda", 256, fp16) == expected


def test_without_a_memory_reading_the_batch_is_the_fixed_one(monkeypatch):
    def no_reading(*_args):
        raise RuntimeError("CUDA driver too old")

    monkeypatch.setattr(torch.cuda, "mem_get_info", no_reading)  # FAKE: the call torch would make fails
    assert gpu_batch_size("cuda", 256, True) == 128 and gpu_batch_size("mps", 256, True, 64) == 64


def test_fp16_is_kept_only_when_its_probe_vectors_agree_with_fp32():
    rng = np.random.default_rng(0)
    fp32 = rng.normal(size=(8, 384)).astype(np.float32)
    assert pick_precision(fp32, fp32 + rng.normal(scale=1e-3, size=fp32.shape)) == ("fp16", "")
    precision, note = pick_precision(fp32, fp32 + rng.normal(scale=0.5, size=fp32.shape))
    assert precision == "fp32" and "fp16 vectors differ from fp32" in note and "< 0.999" in note
    overflowed = fp32.copy()
    overflowed[3, 5] = np.nan  # fp16 overflow gives NaN/inf: never kept
    assert pick_precision(fp32, overflowed)[0] == "fp32"


@pytest.fixture(scope="module")
def cpu_encoder():
    return TorchEncoder(EncoderSpec(str(bundled_model_path()), 256, 32, "cpu"))


@pytest.mark.slow
def test_the_pipelined_encode_gives_sentence_transformers_vectors_in_order(cpu_encoder):
    texts = PROBE + [f"def f{i}():\n    return {i}" * (i % 5 + 1) for i in range(40)]
    expected = cpu_encoder.encode(texts)  # sentence-transformers' own encode (the CPU path)
    got = encode_pipelined(cpu_encoder.model, texts, batch_size=7)  # a producer thread tokenizes ahead
    assert got.shape == expected.shape and got.dtype == np.float32
    assert np.min(np.sum(got * expected, axis=1)) > 0.99999  # same vectors, same order


@pytest.mark.slow
def test_fp16_on_the_probe_is_kept_or_falls_back_to_fp32_with_a_note(monkeypatch, cpu_encoder):
    # Real fp16 arithmetic (on the CPU: no GPU here) against fp32 on the probe batch.
    encoder = TorchEncoder(EncoderSpec(str(bundled_model_path()), 256, 32, "cpu"))
    encoder.pipelined = True  # the CUDA path's encode
    encoder._use_fp16_if_it_agrees()
    assert encoder.precision == "fp16" and encoder.note == ""
    assert next(encoder.model.parameters()).dtype == torch.float16
    assert "fp16" in encoder.describe()
    strict = TorchEncoder(EncoderSpec(str(bundled_model_path()), 256, 32, "cpu"))
    strict.pipelined = True
    monkeypatch.setattr(torch_backend, "FP16_MIN_COSINE", 1.01)  # no fp16 can pass: the fallback runs
    strict._use_fp16_if_it_agrees()
    assert strict.precision == "fp32" and "using fp32" in strict.note
    assert next(strict.model.parameters()).dtype == torch.float32
    vectors = strict.encode(["hello"])
    assert np.allclose(vectors, cpu_encoder.encode(["hello"]), atol=1e-5)


@pytest.mark.slow
def test_an_idle_gpu_is_logged_and_named_in_the_encoders_note(monkeypatch, caplog):
    monkeypatch.setattr(device_module, "torch_devices", lambda: {"cuda": True, "mps": False})  # FAKE GPU
    monkeypatch.setattr(embedder_module, "_WARNED", set())  # logged once per process: another test may have
    with caplog.at_level(logging.WARNING, logger="services.encoders.embedder"):
        embedder = Embedder("all-MiniLM-L6-v2", backend="torch", device="cpu", role="gpu-path-idle")
        assert embedder.device_used == "cpu" and embedder.note.startswith("GPU NOT USED")
    assert any("GPU NOT USED" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
async def test_health_progress_and_the_window_say_where_embedding_runs(monkeypatch, tmp_path, qtbot):
    from services.core.settings import Settings
    from services.engine.service import LocalEngine
    from ui.health_panel import HealthPanel, progress_text

    monkeypatch.setattr(device_module, "torch_devices", lambda: {"cuda": True, "mps": False})  # FAKE GPU
    service = LocalEngine(Settings(embedding_backend="torch", embedding_device="cpu"), data_dir=tmp_path / "d")
    events = []
    try:
        backend, _ = small_workspaces(tmp_path / "w")
        await service.index(backend, progress=events.append)
        health = await service.health(backend)
    finally:
        service.close()
    embedding = [e for e in events if e.phase == "embedding" and e.chunks_total]
    assert embedding and all(e.message == "torch on cpu, fp32, batch 32" for e in embedding)
    assert "torch on cpu" in progress_text(embedding[-1])
    assert health.device == "cpu" and health.encoder_note.startswith("GPU NOT USED")
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(health)
    label = panel.values["Encoder"]
    assert "GPU NOT USED" in label.text() and label.text().startswith("torch on cpu") and label.property("error")
