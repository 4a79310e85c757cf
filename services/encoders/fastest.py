"""The fastest CPU backend of equal quality on this machine: measured once on the user's own chunks, kept per machine.

The `auto` backend (the default setting) runs what `choose` picked. Its record lives in the machine's encoder cache
(`default_cache_dir()/RECORD`), keyed by the CPU (model, the instruction sets that decide int8 speed, cores), the
runtimes' versions and the model: a change of any of them measures again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from filelock import FileLock

from services.encoders.base import EncoderSpec, create_encoder
from services.encoders.export import cache_key, calibration_texts, cpu_flags, default_cache_dir, model_folder

# Equal quality on CoSQA (bare encoder MRR@10): openvino-int8 0.5346, onnx-int8 0.5368. The fp32 backends (onnx,
# openvino: 0.5335) and torch were slower on every CPU measured, so they are not candidates.
CANDIDATES = ("openvino-int8", "onnx-int8")
DEFAULT = "openvino-int8"  # the measured default: it wins ties, and runs until a measurement says otherwise
TIE = 0.03  # within 3% of the fastest counts as a tie
SAMPLE = 256  # chunk texts timed per candidate (a few seconds in all)
FLAGS = ("avx2", "avx512_vnni", "avx512_bf16", "amx_tile")  # what decides int8 speed on x86
RECORD = "fastest-backend.json"


@dataclass(frozen=True)
class Choice:
    """What was measured on this machine and what it picked."""

    backend: str
    day: str  # when it was measured, YYYY-MM-DD
    rates: dict[str, float] = field(default_factory=dict)  # chunks/s of each candidate that ran
    failed: dict[str, str] = field(default_factory=dict)  # why a candidate could not start
    texts: int = 0  # how many chunk texts were timed
    own: int = 0  # ... of them the user's own (the rest: calibration.json's code chunks)

    def line(self) -> str:
        """One line for health: which, when and why."""
        if not self.rates:
            return f"encoder {self.backend}: none of {', '.join(self.failed)} could start to be timed " \
                   f"({'; '.join(self.failed.values())})"
        others = ", ".join([f"{name} {rate:.0f}" for name, rate in self.rates.items() if name != self.backend]
                           + [f"{name} could not start ({why})" for name, why in self.failed.items()])
        fastest = f"{self.rates.get(self.backend, 0):.0f} chunks/s" + (f" vs {others}" if others else "")
        sample = f"{self.texts} of your chunks" if self.own == self.texts else \
            f"{self.texts} chunks ({self.own} of yours)"
        return f"encoder {self.backend}: chosen on this machine {self.day}, {fastest} on {sample}"


def machine_signature() -> dict:
    """What identifies this machine for the record: its CPU and the runtimes' versions."""
    name = platform.processor()
    try:
        name = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name")), name)
    except OSError:
        pass
    flags = cpu_flags()
    cpu = {"model": name, "machine": platform.machine(), "flags": [f for f in FLAGS if f in flags],
           "cores": os.cpu_count() or 1}
    return {"cpu": cpu, "versions": {package: _version(package) for package in ("openvino", "onnxruntime")}}


def record_key(spec: EncoderSpec, machine: dict) -> str:
    """The record's key: the machine (machine_signature) and the model (its export's cache key)."""
    parts = {"machine": machine, "model": cache_key(model_folder(spec.source), spec.max_seq_length),
             "threads": spec.threads}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def recorded(spec: EncoderSpec, machine: dict | None = None, path: Path | None = None) -> Choice | None:
    """The choice measured before on this machine for this model, or None."""
    entry = _records(path or record_path(spec.cache_dir)).get(record_key(spec, machine or machine_signature()))
    try:
        return Choice(**entry) if entry else None
    except TypeError:  # written by another version
        return None


def choose(spec: EncoderSpec, texts: Callable[[], list[str]], machine: dict | None = None,
           clock: Callable[[], float] = time.perf_counter, path: Path | None = None) -> Choice:
    """The recorded choice, else measure each candidate on `texts()` (the user's chunks; topped up with
    calibration.json's code chunks to SAMPLE), keep and return it."""
    machine = machine or machine_signature()
    found = recorded(spec, machine, path)
    if found:
        return found
    path = path or record_path(spec.cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):  # two first indexes at once (two processes, or threads): one measures
        return recorded(spec, machine, path) or _measured(spec, texts, machine, clock, path)


def _measured(spec: EncoderSpec, texts: Callable[[], list[str]], machine: dict, clock: Callable[[], float],
              path: Path) -> Choice:
    own = texts()[:SAMPLE]
    extra = calibration_texts()
    sample = own + (extra * (SAMPLE // len(extra) + 1))[:SAMPLE - len(own)]
    rates, failed = measure(spec, sample, clock)
    fastest = max(rates.values(), default=0.0)
    backend = next((name for name in CANDIDATES if rates.get(name, 0) >= fastest * (1 - TIE)), DEFAULT)
    choice = Choice(backend, date.today().isoformat(), rates, failed, len(sample), len(own))
    if rates:  # none ran: nothing learnt about this machine, measured again next time
        _write(path, record_key(spec, machine), choice)
    return choice


def measure(spec: EncoderSpec, texts: list[str], clock: Callable[[], float]) -> tuple[dict[str, float], dict[str, str]]:
    """Chunks/s of each candidate that starts (warmed up once, then the texts in the indexer's slices, shortest
    first, as it encodes), and why each other one could not start."""
    ordered = sorted(texts, key=len)
    rates, failed = {}, {}
    for name in CANDIDATES:
        try:
            encoder = create_encoder(name, spec)  # makes its model first when this machine has none
            encoder.encode(ordered[:encoder.call_size])
        except Exception as error:  # an export that fails, a runtime missing: the FALLBACK idea
            failed[name] = f"{type(error).__name__}: {str(error).strip()[:120]}"
            continue
        started = clock()
        for start in range(0, len(ordered), encoder.call_size):
            encoder.encode(ordered[start:start + encoder.call_size])
        rates[name] = round(len(ordered) / max(clock() - started, 1e-9), 1)
    return rates, failed


def record_path(cache_dir: Path | None = None) -> Path:
    """The record beside the machine's exported models."""
    return (cache_dir or default_cache_dir()) / RECORD


def _records(path: Path) -> dict:
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return records if isinstance(records, dict) else {}


def _write(path: Path, key: str, choice: Choice) -> None:
    """Add the choice to the record, atomically (a temporary file renamed over it)."""
    records = _records(path)
    records[key] = asdict(choice)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(records, indent=1, sort_keys=True))
    os.replace(staging, path)


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return ""
