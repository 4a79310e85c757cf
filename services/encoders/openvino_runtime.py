"""OpenVINO backends: the model's ONNX export (services/encoders/onnx_runtime.py: exported on this machine,
checked against torch) compiled by OpenVINO's CPU plugin, one stream per core, each fed its own batch.
`openvino` runs it in fp32: its vectors are fp32's. `openvino-int8` runs part of it in int8, quantised
statically by NNCF (its transformer mode: SmoothQuant, fast bias correction), the activation ranges measured once
on `calibration.json` (code chunks and questions from Python's standard library,
benchmarks/experiments/make_calibration.py).
Only the matrix products that measured harmless are int8: the query, key and value projections and the
feed-forward expansion (the largest); the attention scores, the attention's output projection and the
feed-forward's contraction stay fp32 (quantising them too: 1.2x faster again, but vectors further from fp32's
and CoSQA -0.006; benchmarks/experiments/README.md). Neither backend's vector of a text depends on the other texts of its
batch, unlike onnx-int8's dynamic int8.
Figures: benchmarks/README.md, "How fast does it index?". The quantised model is cached beside
the ONNX export, keyed by it, the calibration texts and the OpenVINO and NNCF versions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from importlib.metadata import version
from pathlib import Path

import numpy as np

from services.encoders import onnx_runtime as ox
from services.encoders.base import EncoderSpec, content_digest, register

log = logging.getLogger(__name__)
FORMAT = 2  # bump when the quantisation changes
# the matrix products run in int8 (the others stay fp32), by their names in the ONNX export of a BERT-like model
INT8_PRODUCTS = re.compile(r"/attention/self/(query|key|value)/MatMul$|/intermediate/dense/MatMul$")
CALIBRATION = Path(__file__).with_name("calibration.json")
CALIBRATION_BATCH = 8


def calibration_texts() -> list[str]:
    return json.loads(CALIBRATION.read_text(encoding="utf-8"))


def build(folder: Path, cache_dir: Path, max_seq_length: int, quantised: bool) -> Path:
    """The model for OpenVINO: the cached ONNX export, or its cached int8 quantisation (OpenVINO IR), made
    from an fp32 export that is not kept (the machine keeps one set of files per model and backend)."""
    if not quantised:
        return ox.build(folder, cache_dir, max_seq_length, None)
    fp32 = f"{folder.name}-{ox.cache_key(folder, max_seq_length, None)}"  # what the fp32 export is named
    stamp = json.dumps([FORMAT, fp32, version("openvino"), version("nncf"),
                        hashlib.sha256(CALIBRATION.read_bytes()).hexdigest()])
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]

    def make(staging: Path) -> None:
        onnx_file = cache_dir / fp32 / "model.onnx"  # an fp32 export already there (the openvino backend's)
        if not onnx_file.exists():
            onnx_file = staging / "fp32" / "model.onnx"
            onnx_file.parent.mkdir()
            ox.export(folder, onnx_file, max_seq_length)
        quantise(onnx_file, staging / "model.xml", folder, max_seq_length)
        shutil.rmtree(staging / "fp32", ignore_errors=True)

    return ox.cached(cache_dir / f"{folder.name}-openvino-int8-{key}", "model.xml", make)


def quantise(onnx_file: Path, target: Path, folder: Path, max_seq_length: int) -> None:
    import nncf
    import openvino
    from rich import get_console

    texts = calibration_texts()
    log.info("quantising %s to int8 for OpenVINO (NNCF, %d calibration texts)", folder, len(texts))
    nncf.set_log_level(logging.ERROR)
    model = openvino.Core().read_model(str(onnx_file))
    names = [i.get_any_name() for i in model.inputs]
    tokenize = ox.load_tokenizer(folder, max_seq_length)
    feeds = []
    for start in range(0, len(texts), CALIBRATION_BATCH):
        batch = tokenize(texts[start:start + CALIBRATION_BATCH])
        feeds.append(ox.model_inputs(batch, names))
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


def float_products(model) -> list[str]:
    """The names of the model's matrix products that stay fp32 (all but INT8_PRODUCTS); none when the model's
    products are named otherwise (then NNCF's default: every product in int8)."""
    products = [op.get_friendly_name() for op in model.get_ops() if op.get_type_name() == "MatMul"]
    if not any(INT8_PRODUCTS.search(name) for name in products):
        log.warning("the model's products are not named as BERT's: every one is quantised to int8")
        return []
    return [name for name in products if not INT8_PRODUCTS.search(name)]


class OpenVinoEncoder(ox.OnnxEncoder):
    name = "openvino"
    quantised = False
    device = "cpu"

    def _start(self, folder: Path, cache_dir: Path) -> None:
        import openvino

        self.path = build(folder, cache_dir, self.spec.max_seq_length, self.quantised)
        # one stream per core, one thread each, fed batches in parallel: faster than one stream over every
        # core, and a core taken by another process slows one stream instead of stalling all
        self.streams = self.spec.threads or os.cpu_count() or 1
        self.compiled = openvino.Core().compile_model(str(self.path), "CPU", {
            "PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": self.streams, "INFERENCE_NUM_THREADS": self.streams})
        self.queue = openvino.AsyncInferQueue(self.compiled, self.streams)
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]
        files = sorted(p for p in self.path.parent.iterdir() if p.suffix in (".onnx", ".xml", ".bin"))
        # what, besides the model's files, decides its vectors (services/storage/vector_cache.py)
        self.identity = json.dumps([FORMAT, self.pooling, self.quantised, version("openvino"),
                                    content_digest(self.path.parent, files)])
        self.note = ox.repairs()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Length-sorted batches (less padding), split so that every stream gets one when there are few
        texts (the indexer hands over 32 at a time), run in parallel while the next batch is tokenised."""
        parts = ox.length_sorted(texts, max(1, min(self.spec.batch_size, -(-len(texts) // self.streams))))
        pooled: list[np.ndarray | None] = [None] * len(parts)
        masks: dict[int, np.ndarray] = {}

        def done(request, number: int) -> None:
            pooled[number] = self._pool(request.get_output_tensor(0).data, masks.pop(number))

        self.queue.set_callback(done)
        for number, part in enumerate(parts):
            batch = self.tokenize([texts[i] for i in part])
            masks[number] = batch["attention_mask"]
            self.queue.start_async(ox.model_inputs(batch, self.inputs), number)
        self.queue.wait_all()
        results = [vectors for vectors in pooled if vectors is not None]
        if len(results) != len(parts):
            raise RuntimeError("OpenVINO did not return every batch's vectors")
        return ox.gathered(len(texts), parts, results)


register(OpenVinoEncoder)


@register
class OpenVinoInt8Encoder(OpenVinoEncoder):
    name = "openvino-int8"
    quantised = True
