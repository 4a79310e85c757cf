"""Incremental indexing of one workspace: scan, chunk, embed only what changed, store, commit per file.

Runs synchronously (the service calls it in a worker thread). Cancellation is checked between
batches; every batch ends with its files committed, so a cancelled or crashed run leaves a
consistent index and the next run resumes where it stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from services.catalog import FileRecord
from services.chunking import chunk_file
from services.chunking.references import count_references
from services.embedding import Embedder
from services.models import Chunk, IndexReport, ProgressEvent, SkippedFile
from services.scanning import SkipFileError, SourceFile, read_source, scan_workspace
from services.settings import Settings
from services.workspace_index import WorkspaceIndex

WINDOW_CHUNKS = 256  # files are committed a window at a time
ENCODE_SLICE = 64  # chunks encoded between two cancel checks
FIRST_WINDOW_CHUNKS = 32


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@dataclass
class Plan:
    """What a run has to do, worked out from the scan and the catalogue."""

    changed: list[SourceFile] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


@dataclass
class Pending:
    """A changed file, chunked, waiting for its embeddings."""

    record: FileRecord
    chunks: list[Chunk]


class Indexer:
    def __init__(self, index: WorkspaceIndex, embedder: Embedder, settings: Settings,
                 progress: Callable[[ProgressEvent], None] | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.progress = progress or (lambda event: None)
        self.cancel = cancel or threading.Event()
        self.started = time.monotonic()
        self.embed_started: float | None = None
        self.everything = False  # a full rebuild re-embeds every file, replacing each in place
        self.embedded = 0  # chunks embedded and committed
        self.window_embedded = 0  # chunks embedded in the window being written
        self.total_chunks = self.files_total = self.files_committed = 0

    # --- the run ---
    def run(self, full: bool = False) -> IndexReport:
        self.embedder.load()  # a missing model fails here, before anything is touched
        rebuilt_reason = self._rebuild_reason(full)
        self.everything = bool(rebuilt_reason)
        if rebuilt_reason and not full:  # an incompatible index: start from nothing
            self.index.wipe()
        self._start_catalog()
        self._sweep_orphans()
        plan = self._plan()
        self._remove(plan.removed)
        pending = self._chunk(plan)
        done = self._embed_and_commit(pending)
        self._finish(plan, bool(plan.removed) or done > 0 or bool(rebuilt_reason))
        return IndexReport(
            files_indexed=done, files_unchanged=len(plan.unchanged), files_removed=len(plan.removed),
            chunks_embedded=self.embedded, chunks_total=self.index.catalog().counts()[1],
            seconds=round(time.monotonic() - self.started, 3), cancelled=self.cancel.is_set(),
            rebuilt_reason=rebuilt_reason, skipped=tuple(plan.skipped),
        )

    def _rebuild_reason(self, full: bool) -> str:
        if full:
            return "full rebuild requested"
        if not self.index.exists():
            return ""
        catalog = self.index.catalog()
        old_model = catalog.get_meta("model")
        if old_model and old_model != self.embedder.model_name:
            return f"embedding model changed from {old_model} to {self.embedder.model_name}"
        if not self.index.chroma_url and not self.index.chroma_path.exists():
            return "the vector store folder was missing"
        return ""

    def _start_catalog(self) -> None:
        catalog = self.index.catalog()
        if not catalog.get_meta("created_at"):
            catalog.set_meta(created_at=now_iso(), workspace=str(self.index.root))
        catalog.set_meta(model=self.embedder.model_name, dimension=str(self.embedder.dimension), last_error="")

    def _sweep_orphans(self) -> None:
        """Vectors left by a crash between writing vectors and committing their file."""
        orphans = self.index.store().all_ids() - self.index.catalog().chunk_ids()
        self.index.store().delete(sorted(orphans))

    def _plan(self) -> Plan:
        self._emit("scanning", 0, 0)
        scan = scan_workspace(self.index.root, self.settings.max_file_bytes)
        known = self.index.catalog().files()
        plan = Plan(skipped=list(scan.skipped))
        seen = set()
        for source in scan.files:
            seen.add(source.path)
            record = known.get(source.path)
            if record and not self.everything and (record.size, record.mtime_ns) == (source.size, source.mtime_ns):
                plan.unchanged.append(source.path)
            else:
                plan.changed.append(source)
        plan.removed = sorted(set(known) - seen)
        return plan

    def _remove(self, paths: list[str]) -> None:
        for path in paths:
            self.index.store().delete(self.index.catalog().remove_file(path))

    def _chunk(self, plan: Plan) -> list[Pending]:
        known = self.index.catalog().files()
        pending = []
        for number, source in enumerate(plan.changed, 1):
            if self.cancel.is_set():
                break
            item = self._chunk_one(source, known.get(source.path), plan)
            if item:
                pending.append(item)
            if number % 50 == 0:
                self._emit("chunking", number, len(plan.changed))
        return pending

    def _chunk_one(self, source: SourceFile, old: FileRecord | None, plan: Plan) -> Pending | None:
        try:
            text, digest = read_source(source)
        except SkipFileError as skip:
            plan.skipped.append(SkippedFile(source.path, skip.reason))
            if old:
                self._remove([source.path])
                plan.removed.append(source.path)
            return None
        record = FileRecord(source.path, digest, source.size, source.mtime_ns, source.language)
        if old and old.file_hash == digest and not self.everything:  # touched, not changed: refresh its stat
            self.index.catalog().commit_file(record, self.index.catalog().chunks(path=source.path))
            plan.unchanged.append(source.path)
            return None
        try:
            chunks = chunk_file(source.path, text, source.language, digest, self.settings)
        except Exception as error:  # a parser bug must not lose the rest of the workspace
            plan.skipped.append(SkippedFile(source.path, f"could not be chunked: {error}"))
            return None
        # One id once: a minified file can yield identical chunks (same span and text), which Chroma rejects.
        return Pending(record, list({c.id: c for c in chunks}.values()))

    def _embed_and_commit(self, pending: list[Pending]) -> int:
        self.total_chunks = sum(len(p.chunks) for p in pending)
        self.files_total = len(pending)
        self.embed_started = time.monotonic()
        self._emit("embedding", 0, self.files_total, 0, self.total_chunks)
        for batch in _batches(pending, WINDOW_CHUNKS):
            if self.cancel.is_set() or not self._embed_batch(batch):
                break
            self._emit("embedding", self.files_committed, self.files_total, self.embedded, self.total_chunks)
        return self.files_committed

    def _embed_batch(self, batch: list[Pending]) -> bool:
        """Embed, store and commit a window of files. On a cancel, the files whose chunks are all
        embedded are still stored and committed; the rest stay at their old version. False then."""
        chunks = [c for p in batch for c in p.chunks]
        vectors, ready = self._vectors(batch, chunks)
        complete, position = [], 0
        for item in batch:
            span = range(position, position + len(item.chunks))
            position = span.stop
            if all(i in ready for i in span):
                complete.append((item, span))
        self._store_and_commit(complete, vectors)
        return len(complete) == len(batch)

    def _store_and_commit(self, complete: list, vectors: np.ndarray) -> None:
        positions = [i for _, span in complete for i in span]
        chunks = [c for item, _ in complete for c in item.chunks]
        self.index.store().upsert(chunks, vectors[positions])
        for item, _ in complete:  # commit: from here on readers see the new version of each file
            stale = self.index.catalog().commit_file(item.record, item.chunks)
            self.index.store().delete(stale)
        self.files_committed += len(complete)
        self.embedded += self.window_embedded

    def _vectors(self, batch: list[Pending], chunks: list[Chunk]) -> tuple[np.ndarray, set[int]]:
        """Embed only chunks whose content is new; reuse stored vectors for the others.
        Returns the vectors and the positions that have one."""
        reusable = {} if self.everything else self._reusable_ids(batch)
        stored = self.index.store().embeddings(sorted(set(reusable.values())))
        vectors = np.zeros((len(chunks), self.embedder.dimension), dtype=np.float32)
        fresh, ready = [], set()
        for position, chunk in enumerate(chunks):
            old_id = reusable.get((chunk.path, chunk.content_hash))
            if old_id in stored:
                vectors[position] = stored[old_id]
                ready.add(position)
            else:
                fresh.append(position)
        ready |= self._encode_into(vectors, chunks, fresh)
        return vectors, ready

    def _encode_into(self, vectors: np.ndarray, chunks: list[Chunk], fresh: list[int]) -> set[int]:
        """Encode in length-sorted slices (less padding), checking for a cancel between slices."""
        fresh = sorted(fresh, key=lambda i: len(chunks[i].content))
        self.window_embedded = 0
        for start in range(0, len(fresh), ENCODE_SLICE):
            if self.cancel.is_set():
                return set(fresh[:start])
            part = fresh[start:start + ENCODE_SLICE]
            vectors[part] = self.embedder.encode_chunks([chunks[i] for i in part])
            self.window_embedded += len(part)
            self._emit("embedding", self.files_committed, self.files_total, self.embedded + self.window_embedded,
                       self.total_chunks)
        return set(fresh)

    def _reusable_ids(self, batch: list[Pending]) -> dict[tuple[str, str], str]:
        catalog = self.index.catalog()
        return {(c.path, c.content_hash): c.id for item in batch for c in catalog.chunks(path=item.record.path)}

    def _finish(self, plan: Plan, changed: bool) -> None:
        catalog = self.index.catalog()
        catalog.set_skipped(plan.skipped)
        if changed or not self.index.keywords.exists():
            self._emit("finalizing", 0, 0, message="updating keyword index and references")
            chunks = count_references(catalog.chunks())
            catalog.set_references({c.id: c.references for c in chunks})
            self.index.keywords.build(chunks)
        catalog.set_meta(updated_at=now_iso())
        self._emit("cancelled" if self.cancel.is_set() else "done", 0, 0)

    def _emit(self, phase: str, files_done: int, files_total: int, chunks_done: int = 0,
              chunks_total: int = 0, message: str = "") -> None:
        elapsed = max(time.monotonic() - (self.embed_started or self.started), 1e-6)
        rate = max(chunks_done, self.embedded) / elapsed
        remaining = max(chunks_total - chunks_done, 0)
        eta = remaining / rate if rate > 0 and chunks_total else None
        self.progress(ProgressEvent(phase, files_done, files_total, chunks_done, chunks_total,
                                    round(rate, 2), eta, message))


def _batches(pending: list[Pending], size: int):
    """Windows of files holding about `size` chunks. The first windows are smaller (32, 64, ...),
    so the first files are searchable within seconds and an early cancel still keeps some."""
    batch, count, wanted = [], 0, min(FIRST_WINDOW_CHUNKS, size)
    for item in pending:
        batch.append(item)
        count += len(item.chunks)
        if count >= wanted:
            yield batch
            batch, count, wanted = [], 0, min(wanted * 2, size)
    if batch:
        yield batch
