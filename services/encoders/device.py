"""Which device the torch backend runs on: `auto` takes CUDA, then MPS, then the CPU."""

from __future__ import annotations

import os
import platform
from pathlib import Path

DEVICES = ("auto", "cpu", "cuda", "mps")
GPU_BATCH_SIZE = 128  # a GPU is fed larger batches


def gpu_possible() -> bool:
    """Whether torch could see a GPU at all (an NVIDIA or ROCm driver, or Apple silicon): when not,
    `auto` need not import torch (seconds off a cold CLI query on the ONNX backend)."""
    return (Path("/proc/driver/nvidia").exists() or Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists()
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
