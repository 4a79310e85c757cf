"""OpenVINO backends: the model made by services/encoders/export.py, compiled by OpenVINO's CPU plugin, one stream
per core, each fed its own batch. `openvino` runs the fp32 ONNX export: its vectors are fp32's. `openvino-int8`
runs NNCF's static int8 quantisation of it (part of the products in int8, see export.py). Neither backend's
vector of a text depends on the other texts of its batch, unlike onnx-int8's dynamic int8.
Figures: benchmarks/README.md, "How fast does it index?"."""

from __future__ import annotations

import json
import os
import threading
from importlib.metadata import version

import numpy as np

from services.encoders.base import (
    EncoderSpec, content_digest, gathered, length_sorted, model_inputs, pooled, register,
)
from services.encoders.export import FORMAT, prepared, repairs

# OpenVINO's compiled models, beside the model they are made from (whose weights they read: OPTIMIZE_SIZE), by
# device and settings: a cold start reads one (~0.2 s) instead of compiling (~0.8 s); the same compiled graph,
# so the same vectors. One it cannot read is compiled again.
COMPILED = "compiled"


class OpenVinoEncoder:
    name = "openvino"
    int8 = ""  # how its model is quantised (services/encoders/export.py)
    device = "cpu"
    # two calls at once, each from its own thread with its own request queue: the second call's batches wait
    # in the plugin behind the first's, so the streams do not idle while one call ends and the next begins
    calls_at_once = 2

    def __init__(self, spec: EncoderSpec) -> None:
        import openvino

        self.spec = spec
        model = prepared(spec, self.int8)
        self.path, self.pooling, self.tokenize = model.path, model.pooling, model.tokenize
        # one stream per core, one thread each, fed batches in parallel: faster than one stream over every
        # core, and a core taken by another process slows one stream instead of stalling all
        self.streams = spec.threads or os.cpu_count() or 1
        self.call_size = spec.batch_size * self.streams
        self.compiled = openvino.Core().compile_model(str(self.path), "CPU", {
            "PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": self.streams, "INFERENCE_NUM_THREADS": self.streams,
            "CACHE_DIR": str(self.path.parent / COMPILED), "CACHE_MODE": "OPTIMIZE_SIZE"})
        self.queues = threading.local()  # each calling thread's AsyncInferQueue
        self.tokenizing = threading.Lock()  # a tokenizer made by transformers is not safe in two threads at once
        self.new_queue = lambda: openvino.AsyncInferQueue(self.compiled, self.streams)
        self.inputs = [i.get_any_name() for i in self.compiled.inputs]
        files = sorted(p for p in self.path.parent.iterdir() if p.suffix in (".onnx", ".xml", ".bin"))
        # FORMAT + 1: the number vector caches were filled under (services/storage/vector_cache.py)
        self.identity = json.dumps([FORMAT + 1, self.pooling, bool(self.int8), version("openvino"),
                                    content_digest(self.path.parent, files)])
        self.note = repairs()
        self.dimension = int(self.encode(["dimension"]).shape[1])

    def describe(self) -> str:
        return f"{self.name} on {self.device}"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Length-sorted batches (less padding), split so that every stream gets one when there are few
        texts, run in parallel while the next batch is tokenised."""
        parts = length_sorted(texts, max(1, min(self.spec.batch_size, -(-len(texts) // self.streams))))
        vectors: list[np.ndarray | None] = [None] * len(parts)
        masks: dict[int, np.ndarray] = {}

        def done(request, number: int) -> None:
            vectors[number] = pooled(request.get_output_tensor(0).data, masks.pop(number), self.pooling)

        queue = self._queue()
        queue.set_callback(done)
        for number, part in enumerate(parts):
            with self.tokenizing:
                batch = self.tokenize([texts[i] for i in part])
            masks[number] = batch["attention_mask"]
            queue.start_async(model_inputs(batch, self.inputs), number)
        queue.wait_all()
        results = [rows for rows in vectors if rows is not None]
        if len(results) != len(parts):
            raise RuntimeError("OpenVINO did not return every batch's vectors")
        return gathered(len(texts), parts, results)


    def _queue(self):
        """This thread's request queue (one request per stream), made on its first call."""
        if not hasattr(self.queues, "queue"):
            self.queues.queue = self.new_queue()
        return self.queues.queue


register(OpenVinoEncoder)


@register
class OpenVinoInt8Encoder(OpenVinoEncoder):
    name = "openvino-int8"
    int8 = "static"
