"""Which device the torch backend runs on (`auto` takes CUDA, then MPS, then the CPU), how large its
batches are, and a loud note when a GPU is present but embedding runs on the CPU."""

from __future__ import annotations

import os
import platform
from pathlib import Path

DEVICES = ("auto", "cpu", "cuda", "mps")
GPU_BATCH_SIZE = 128  # a GPU is fed larger batches; a CUDA one as large as its free memory allows, see below
MIN_GPU_BATCH, MAX_GPU_BATCH = 16, 512  # 512 measured best on an H100 (issue 22); more gains nothing
BYTES_PER_TOKEN = 24 * 1024  # fp32 activations per token of a MiniLM-sized model, with headroom (fp16: half)
MEMORY_SHARE = 4  # use at most a quarter of the free memory: the query encoder and others share the GPU


def nvidia_driver() -> bool:
    return Path("/proc/driver/nvidia").exists() or Path("/dev/nvidiactl").exists()


def gpu_possible() -> bool:
    """Whether torch could see a GPU at all (an NVIDIA or ROCm driver, or Apple silicon): when not,
    `auto` need not import torch (seconds off a cold CLI query on the ONNX backend)."""
    return (nvidia_driver() or Path("/dev/kfd").exists()
            or (platform.system() == "Darwin" and platform.machine() == "arm64") or os.name == "nt")


def torch_devices() -> dict[str, bool]:
    """What torch sees on this machine."""
    if not gpu_possible():
        return {"cuda": False, "mps": False}
    import torch

    mps = getattr(torch.backends, "mps", None)
    return {"cuda": torch.cuda.is_available(), "mps": bool(mps and mps.is_available())}


def choose_device(requested: str, available: dict[str, bool] | None = None) -> tuple[str, str]:
    """(device, note). A requested GPU that torch does not see falls back to the CPU, saying so."""
    if requested not in DEVICES:
        raise ValueError(f"Unknown device {requested!r}; choose one of {', '.join(DEVICES)}.")
    if requested == "cpu":
        return "cpu", ""
    available = torch_devices() if available is None else available
    if requested == "auto":
        return next((d for d in ("cuda", "mps") if available.get(d)), "cpu"), ""
    if available.get(requested):
        return requested, ""
    return "cpu", f"{requested} was requested but torch does not see one; using the CPU"


def unused_gpu_note(device_used: str, available: dict[str, bool] | None = None) -> str:
    """A loud note when embedding runs on the CPU while this machine has a GPU ("" otherwise)."""
    if device_used != "cpu":
        return ""
    available = torch_devices() if available is None else available
    seen = next((d for d in ("cuda", "mps") if available.get(d)), None)
    if seen:
        return (f"GPU NOT USED: a {seen} GPU is present but embedding runs on the CPU (many times slower); "
                f"use --device auto or --device {seen}")
    if nvidia_driver():
        return ("GPU NOT USED: an NVIDIA driver is present but torch cannot use the GPU (a CPU-only torch build, "
                "or a driver torch does not support); embedding runs on the CPU")
    return ""


def gpu_batch_size(device: str, max_seq_length: int, fp16: bool, fallback: int = GPU_BATCH_SIZE) -> int:
    """Sequences per batch on `device`: on CUDA, a power of two that fits a quarter of the free memory
    (MIN_GPU_BATCH to MAX_GPU_BATCH); elsewhere `fallback`."""
    if device != "cuda":
        return fallback
    import torch

    try:
        free, _total = torch.cuda.mem_get_info()
    except Exception:  # an old driver: the fixed size
        return fallback
    per_sequence = max_seq_length * BYTES_PER_TOKEN // (2 if fp16 else 1)
    fits = max(int(free) // MEMORY_SHARE // per_sequence, 1)
    return max(MIN_GPU_BATCH, min(MAX_GPU_BATCH, 1 << (fits.bit_length() - 1)))
