"""ONNX Runtime backends: the configured model exported on this machine (never downloaded), fp32 or
dynamically quantised to int8, run with the model's own tokenizer, mean pooling and L2 normalisation
(what sentence-transformers does for all-MiniLM-L6-v2: Transformer -> Pooling(mean) -> Normalize).

The export is cached under `<data dir>/encoders/`, keyed by the model folder (path, size and mtime of
its files), max_seq_length, the quantisation config and the onnxruntime version.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import shutil
import warnings
from pathlib import Path

import numpy as np

from services.encoders.base import EncoderSpec, content_digest, register

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the export changes


class ExportError(Exception):
    """The model cannot be exported to ONNX (unsupported architecture or pooling)."""


def model_folder(source: str) -> Path:
    folder = Path(source)
    if folder.is_dir():
        return folder
    from huggingface_hub import snapshot_download  # a cached Hugging Face id: its local snapshot

    return Path(snapshot_download(source, local_files_only=True))


def pooling_mode(folder: Path) -> str:
    """'mean' or 'cls', from the sentence-transformers Pooling module; mean when there is none."""
    modules_file = folder / "modules.json"
    modules = json.loads(modules_file.read_text()) if modules_file.exists() else []
    for module in modules:
        if module.get("type", "").endswith("Pooling"):
            config = json.loads((folder / module["path"] / "config.json").read_text())
            modes = [k for k, v in config.items() if k.startswith("pooling_mode") and v]
            if modes == ["pooling_mode_mean_tokens"]:
                return "mean"
            if modes == ["pooling_mode_cls_token"]:
                return "cls"
            raise ExportError(f"pooling {modes} is not supported by the ONNX backend")
        if module.get("type", "").split(".")[-1] not in ("Transformer", "Normalize"):
            raise ExportError(f"module {module.get('type')} is not supported by the ONNX backend")
    return "mean"


def cpu_quant_config() -> dict:
    """quantize_dynamic options for this CPU: int8 weights of the MatMuls, one scale per output
    channel (per-tensor scales gave cosine 0.95 to the fp32 vectors, per-channel 0.99, at the same
    speed). With VNNI (or on ARM64) u8 x s8 products cannot saturate, so weights use their full
    range; on AVX2/AVX-512 without VNNI, onnxruntime recommends reduce_range (7-bit weights)."""
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return {"name": "arm64", "per_channel": True, "reduce_range": False, "ops": ["MatMul"]}
    flags = _cpu_flags()
    if "avx512_vnni" in flags or "avx_vnni" in flags:
        return {"name": "avx512_vnni", "per_channel": True, "reduce_range": False, "ops": ["MatMul"]}
    return {"name": "avx2", "per_channel": True, "reduce_range": True, "ops": ["MatMul"]}


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cache_key(folder: Path, max_seq_length: int, quant: dict | None) -> str:
    import onnxruntime

    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    stamp = [(str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    raw = json.dumps([FORMAT, str(folder.resolve()), stamp, max_seq_length, quant, onnxruntime.__version__])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


SAMPLES = ["def add(a, b):\n    return a + b", "how do I read a file line by line",
           "class Parser:\n    \"\"\"Parse HTTP responses into headers and a body.\"\"\"\n" * 3]


def export(folder: Path, target: Path, max_seq_length: int) -> None:
    """The Hugging Face AutoModel as ONNX (legacy exporter), dynamic batch and sequence axes;
    checked against torch on padded sample texts (cosine > 0.99), else ExportError."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    names = list(tokenizer.model_input_names)
    sample = tokenizer(["an example", "another example text"], padding=True, return_tensors="pt",
                       truncation=True, max_length=max_seq_length)
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    wrapper = _Positional(model, names)
    check = tokenizer(SAMPLES, padding=True, truncation=True, max_length=max_seq_length, return_tensors="pt")
    with torch.no_grad(), warnings.catch_warnings():
        expected = wrapper(*(check[n] for n in names)).numpy()  # before: the export leaves the model changed
        warnings.simplefilter("ignore")  # tracer warnings: the check below is what counts
        torch.onnx.export(wrapper, tuple(sample[n] for n in names), str(target), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)
    _check(target, {n: check[n].numpy() for n in names}, expected, check["attention_mask"].numpy())


def _check(path: Path, feed: dict, expected: np.ndarray, mask: np.ndarray) -> None:
    import onnxruntime

    got = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    cosine = (mean_pool(got, mask) * mean_pool(expected, mask)).sum(axis=1)
    if cosine.min() < 0.99:
        raise ExportError(f"the exported model differs from torch (cosine {cosine.min():.3f})")


def mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Mean over the real tokens, then unit length (sentence-transformers' Pooling + Normalize)."""
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _positional_module():
    import torch

    class Positional(torch.nn.Module):
        """The model called with its inputs by name, returning only the token embeddings."""

        def __init__(self, model, names: list[str]) -> None:
            super().__init__()
            self.model, self.names = model, names

        def forward(self, *inputs):
            return self.model(**dict(zip(self.names, inputs)), return_dict=True).last_hidden_state

    return Positional


def _Positional(model, names):  # noqa: N802 - a class built lazily, so importing torch waits for an export
    return _positional_module()(model, names)


def build(folder: Path, cache_dir: Path, max_seq_length: int, quant: dict | None) -> Path:
    """The cached ONNX file for this model and config, exporting (and quantising) it first if needed."""
    name = "model.int8.onnx" if quant else "model.onnx"

    def make(staging: Path) -> None:
        log.info("exporting %s to ONNX (%s)", folder, quant["name"] if quant else "fp32")
        export(folder, staging / "model.onnx", max_seq_length)
        if quant:
            _quantise(staging / "model.onnx", staging / name, quant)
            (staging / "model.onnx").unlink()

    return cached(cache_dir / f"{folder.name}-{cache_key(folder, max_seq_length, quant)}", name, make)


SUMS = "sha256.json"  # {file: sha256} of a made folder's files, recorded when it is made
_repairs: list[str] = []
_INTACT: set[tuple] = set()  # folders found intact, by their files' names, sizes and times  # what cached() found damaged and made again, for the next encoder's note


def cached(final: Path, name: str, make) -> Path:
    """`final/name`, made first by `make(staging folder)` when missing or damaged (a file's sha256 is not the
    one recorded when it was made): one process makes it (a file lock), in a staging folder renamed into
    place, so a crash never leaves half a model behind."""
    from filelock import FileLock

    if (final / name).exists() and intact(final):
        return final / name
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / name).exists():
            if intact(final):
                return final / name
            _repairs.append(f"the exported model {final.name} was damaged (a file's checksum differs) and was made again")
            log.warning("%s", _repairs[-1])
        staging = final.with_name(final.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            make(staging)
            (staging / SUMS).write_text(json.dumps(checksums(staging)))
        except ExportError:
            raise
        except Exception as error:
            raise ExportError(f"{type(error).__name__}: {error}") from error
        finally:
            if not (staging / SUMS).exists():
                shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)
        staging.rename(final)
    return final / name


def checksums(folder: Path) -> dict[str, str]:
    """{file name: sha256} of a made folder's files."""
    found = {}
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != SUMS):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        found[path.name] = digest.hexdigest()
    return found


def intact(folder: Path) -> bool:
    """Whether a made folder's files are those recorded when it was made (checked once per process while
    their sizes and times stay). One made before checksums were recorded has them recorded now."""
    sums = folder / SUMS
    try:
        stamp = (str(folder), tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())))
        if stamp in _INTACT:
            return True
        recorded = json.loads(sums.read_text())
    except FileNotFoundError:
        with contextlib.suppress(OSError):  # a read-only cache: checked from the next made folder on
            sums.write_text(json.dumps(checksums(folder)))
        return True
    except (OSError, ValueError):
        return False
    if recorded != checksums(folder):
        return False
    _INTACT.add(stamp)
    return True


def repairs() -> str:
    """What cached() made again since the last call (an encoder's note), then forgotten."""
    found = "; ".join(_repairs)
    _repairs.clear()
    return found


def _quantise(source: Path, target: Path, quant: dict) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                     per_channel=quant["per_channel"], reduce_range=quant["reduce_range"],
                     op_types_to_quantize=quant["ops"])


def load_tokenizer(folder: Path, max_seq_length: int):
    """texts -> {"input_ids", "attention_mask", "token_type_ids"} arrays, truncated and padded as
    AutoTokenizer does. The model's tokenizer.json runs through `tokenizers` directly (what
    transformers' fast tokenizers run), which spares a cold start importing transformers."""
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    limit = min(max_seq_length, int(config.get("model_max_length") or max_seq_length))
    pad = config.get("pad_token")
    pad = pad.get("content") if isinstance(pad, dict) else pad
    if not (folder / "tokenizer.json").exists() or not pad:
        return _auto_tokenizer(folder, limit)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(limit)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id(pad), pad_token=pad)

    def tokenize(texts: list[str]) -> dict[str, np.ndarray]:
        encodings = tokenizer.encode_batch(texts)
        return {"input_ids": np.array([e.ids for e in encodings]),
                "attention_mask": np.array([e.attention_mask for e in encodings]),
                "token_type_ids": np.array([e.type_ids for e in encodings])}

    return tokenize


def _auto_tokenizer(folder: Path, limit: int):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return lambda texts: dict(tokenizer(texts, padding=True, truncation=True, max_length=limit, return_tensors="np"))


def default_cache_dir() -> Path:
    """One folder of exported encoders per machine (the user's cache folder: $XDG_CACHE_HOME on Linux), shared
    by every data dir; KE_ENCODER_CACHE_DIR chooses another."""
    import platformdirs

    return Path(os.environ.get("KE_ENCODER_CACHE_DIR") or platformdirs.user_cache_path("knowledge-explorer") / "encoders")


def length_sorted(texts: list[str], size: int) -> list[list[int]]:
    """The positions of `texts` in batches of `size`, longest first: texts of similar length pad less."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [order[start:start + size] for start in range(0, len(order), size)]


def model_inputs(batch: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    """The tokenizer's arrays the model takes (`names`), as the int64 its export expects."""
    return {name: batch[name].astype(np.int64) for name in names}


def gathered(count: int, parts: list[list[int]], vectors: list[np.ndarray]) -> np.ndarray:
    """One row per text: each batch's vectors put back at its texts' positions."""
    out = np.zeros((count, vectors[0].shape[1] if vectors else 1), dtype=np.float32)
    for part, rows in zip(parts, vectors):
        out[part] = rows
    return out


class OnnxEncoder:
    name = "onnx"
    quantised = False
    device = "cpu"

    def __init__(self, spec: EncoderSpec) -> None:
        self.spec = spec
        folder = model_folder(spec.source)
        self.pooling = pooling_mode(folder)
        self.tokenize = load_tokenizer(folder, spec.max_seq_length)
        self._start(folder, spec.cache_dir or default_cache_dir())
        self._dimension = int(self.encode(["dimension"]).shape[1])

    def _start(self, folder: Path, cache_dir: Path) -> None:
        """Export the model (or find its export) and open it: sets `path`, `inputs` and `identity`."""
        import onnxruntime

        self.quant = cpu_quant_config() if self.quantised else None
        self.path = build(folder, cache_dir, self.spec.max_seq_length, self.quant)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.spec.threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        # what, besides the model's files, decides its vectors (services/storage/vector_cache.py)
        self.identity = json.dumps([FORMAT, self.pooling, self.quant, onnxruntime.__version__,
                                    content_digest(self.path.parent, [self.path])])
        self.note = repairs()

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(self, texts: list[str]) -> np.ndarray:
        parts = length_sorted(texts, self.spec.batch_size)
        return gathered(len(texts), parts, [self._encode_batch([texts[i] for i in part]) for part in parts])

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenize(texts)
        hidden = self.session.run(["last_hidden_state"], model_inputs(batch, self.inputs))[0]
        return self._pool(hidden, batch["attention_mask"])

    def _pool(self, hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        if self.pooling == "cls":
            pooled = hidden[:, 0]
            return (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)
        return mean_pool(hidden, attention_mask).astype(np.float32)


register(OnnxEncoder)


@register
class OnnxInt8Encoder(OnnxEncoder):
    name = "onnx-int8"
    quantised = True
