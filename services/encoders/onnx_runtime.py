"""ONNX Runtime backends: the model's export (services/encoders/export.py), fp32 (`onnx`) or with int8 weights
quantised dynamically (`onnx-int8`), run on the CPU with the model's own tokenizer, then pooled and normalised as
sentence-transformers does for all-MiniLM-L6-v2 (Transformer -> Pooling(mean) -> Normalize)."""

from __future__ import annotations

import json
import os

import numpy as np

from services.encoders.base import (
    EncoderSpec, content_digest, gathered, length_sorted, model_inputs, pooled, register,
)
from services.encoders.export import FORMAT, cpu_quant_config, prepared, repairs


class OnnxEncoder:
    name = "onnx"
    int8 = ""  # how its model is quantised (services/encoders/export.py)
    device = "cpu"
    calls_at_once = 1  # one session over every core: a second call would only contend with the first

    def __init__(self, spec: EncoderSpec) -> None:
        import onnxruntime

        self.spec = spec
        model = prepared(spec, self.int8)
        self.path, self.pooling, self.tokenize = model.path, model.pooling, model.tokenize
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = spec.threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        self.call_size = spec.batch_size  # one session: its batches run one after another
        self.session = onnxruntime.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        quant = cpu_quant_config() if self.int8 else None
        self.identity = json.dumps([FORMAT, self.pooling, quant, onnxruntime.__version__,
                                    content_digest(self.path.parent, [self.path])])
        self.note = repairs()
        self.dimension = int(self.encode(["dimension"]).shape[1])

    def describe(self) -> str:
        return f"{self.name} on {self.device}"

    def encode(self, texts: list[str]) -> np.ndarray:
        parts = length_sorted(texts, self.spec.batch_size)
        return gathered(len(texts), parts, [self._encode_batch([texts[i] for i in part]) for part in parts])

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenize(texts)
        hidden = self.session.run(["last_hidden_state"], model_inputs(batch, self.inputs))[0]
        return pooled(hidden, batch["attention_mask"], self.pooling)


register(OnnxEncoder)


@register
class OnnxInt8Encoder(OnnxEncoder):
    name = "onnx-int8"
    int8 = "dynamic"
