"""sentence-transformers on torch (CPU, CUDA or MPS).

On CUDA it takes the fast path: fp16 when a probe batch's vectors agree with fp32 (cosine >= 0.999, else
fp32 with a note), batches sized to the free GPU memory, and tokenization overlapped with the model (a
producer thread tokenizes the next batch while the GPU runs this one). Elsewhere sentence-transformers'
own encode runs as is.
"""

from __future__ import annotations

import logging
import queue
import threading

import numpy as np

from services.encoders.base import EncoderSpec, register
from services.encoders.device import gpu_batch_size

log = logging.getLogger(__name__)
FP16_MIN_COSINE = 0.999
PROBE = [  # code and prose of several lengths: what the index embeds
    "def save(self, note):\n    self.notes[note.id] = note\n    return note.id",
    "class MemoryNoteStore(NoteStore):\n    '''Keeps notes in a dict.'''\n    def __init__(self):\n        self.notes = {}",
    "function parseFrontMatter(text) { const match = /^---\\n([\\s\\S]*?)\\n---/.exec(text); return match; }",
    "# Installation\n\nRun `pip install knowledge-explorer` and point it at a folder.",
    "func (s *Store) Get(id string) (*Note, error) { n, ok := s.notes[id]; if !ok { return nil, ErrNotFound }; "
    "return n, nil }",
    "SELECT id, title FROM notes WHERE updated_at > ? ORDER BY updated_at DESC LIMIT 50",
    "x" * 2000,  # a long one: truncated at max_seq_length
    "ok",
]


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest row-wise cosine between two sets of vectors."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float(np.min(np.sum(a * b, axis=1)))


def pick_precision(fp32: np.ndarray, fp16: np.ndarray) -> tuple[str, str]:
    """("fp16", "") when fp16's probe vectors agree with fp32's, else ("fp32", why)."""
    cosine = min_cosine(fp32, fp16) if np.all(np.isfinite(fp16)) else float("nan")
    if cosine >= FP16_MIN_COSINE:
        return "fp16", ""
    return "fp32", (f"fp16 vectors differ from fp32 on a probe (cosine {cosine:.4f} < {FP16_MIN_COSINE}); "
                    "using fp32")


@register
class TorchEncoder:
    name = "torch"
    calls_at_once = 1

    def __init__(self, spec: EncoderSpec) -> None:
        from sentence_transformers import SentenceTransformer

        self.spec = spec
        self.device = spec.device
        self.model = SentenceTransformer(spec.source, device=spec.device, local_files_only=True)
        self.model.max_seq_length = min(spec.max_seq_length, self.model.max_seq_length or spec.max_seq_length)
        self.precision, self.note = "fp32", ""
        self.batch_size = spec.batch_size
        self.pipelined = spec.device == "cuda"  # the fast path; sentence-transformers' encode elsewhere
        if spec.device == "cuda":
            self._use_fp16_if_it_agrees()
            self.batch_size = gpu_batch_size("cuda", self.model.max_seq_length, self.precision == "fp16",
                                             spec.batch_size)

    def _use_fp16_if_it_agrees(self) -> None:
        """Probe an fp16 copy (half() then float() would not give the fp32 weights back) and keep it when
        its vectors agree with fp32's."""
        import copy

        reference = self.encode(PROBE)
        fp32, self.model = self.model, copy.deepcopy(self.model).half()
        self.precision, self.note = pick_precision(reference, self.encode(PROBE))
        if self.precision == "fp32":
            self.model = fp32
            log.warning("%s", self.note)

    @property
    def identity(self) -> str:
        """What, besides the model's files, decides its vectors (services/storage/vector_cache.py)."""
        import sentence_transformers
        import torch

        dtype = next(self.model.parameters()).dtype
        return f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}, {dtype}"

    @property
    def dimension(self) -> int:
        get_dim = (getattr(self.model, "get_embedding_dimension", None)
                   or self.model.get_sentence_embedding_dimension)
        return int(get_dim())

    @property
    def call_size(self) -> int:
        """On CUDA two batches, so that tokenizing the second overlaps the GPU running the first."""
        return self.batch_size * (2 if self.pipelined else 1)

    def describe(self) -> str:
        return f"torch on {self.device}, {self.precision}, batch {self.batch_size}"

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.pipelined:
            return encode_pipelined(self.model, texts, self.batch_size)
        vectors = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype(np.float32)


def encode_pipelined(model, texts: list[str], batch_size: int) -> np.ndarray:
    """Unit vectors for `texts`, longest first in batches (as sentence-transformers does), with a producer
    thread tokenizing batch n+1 while the model runs batch n."""
    import torch

    order = np.argsort([-len(t) for t in texts], kind="stable")
    batches = [[texts[i] for i in order[s:s + batch_size]] for s in range(0, len(texts), batch_size)]
    tokenized: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    producer = threading.Thread(target=_tokenize_all, args=(model, batches, tokenized, stop), daemon=True,
                                name="ke-tokenize")
    producer.start()
    out = []
    try:
        with torch.inference_mode():
            for _ in batches:
                features = tokenized.get()
                if isinstance(features, BaseException):
                    raise features
                features = {k: v.to(model.device, non_blocking=True) if hasattr(v, "to") else v
                            for k, v in features.items()}
                vectors = model.forward(features)["sentence_embedding"].float()
                out.append(torch.nn.functional.normalize(vectors, p=2, dim=1).cpu())
    finally:
        stop.set()
        producer.join()
    merged = torch.cat(out).numpy().astype(np.float32) if out else np.zeros((0, 0), np.float32)
    result = np.empty_like(merged)
    result[order] = merged
    return result


def _tokenize_all(model, batches, tokenized: queue.Queue, stop: threading.Event) -> None:
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers >= 6: preprocess
    for batch in batches:
        try:
            item = tokenize(batch)
        except BaseException as error:  # raised in the consumer
            item = error
        while not stop.is_set():
            try:
                tokenized.put(item, timeout=0.1)
                break
            except queue.Full:
                continue
        if stop.is_set() or isinstance(item, BaseException):
            return
