"""Step 2 of an index run: the vectors of the chunks that wait for them (this run's and any an earlier run left),
the most useful files first (services/indexing/vector_order.py), window after window. Each window is encoded
shortest first, with as many encoder calls running as the encoder takes at once (OpenVINO's streams then never wait
between calls), and the calls run on across windows' ends: the next window is read and its first call queued while
this one's last calls run. A window whose calls are back is handed to a writer thread that stores its vectors and
marks its chunks (one write in flight). A window that fails is tried again file by file; a component that fails for
a probe too stops the run. Step 2's counts (chunks made, embedded) are its own; the run's progress is the
Indexer's (`run.meter`)."""

from __future__ import annotations

import errno
import logging
import re
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Iterable, Iterator

import numpy as np

from services.core.errors import IndexStoreError, IndexUnavailable
from services.core.models import Chunk, SkippedFile
from services.indexing.preparing import short_reason
from services.indexing.vector_order import vector_order
from services.storage.catalog import FileRecord
from services.storage.projection import Projection, sample_positions

if TYPE_CHECKING:
    from services.indexing.indexer import Indexer

WINDOW_CHUNKS = 1024  # files are committed a window at a time; a window is encoded shortest first
FIRST_WINDOW_CHUNKS = 32

# A store write failing with one of these is the store's fault (disk full, read-only, server gone),
# never one file's: the run stops at once rather than fail file after file.
STORE_DOWN_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM,
                     errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN}
STORE_DOWN_TEXT = re.compile(r"no space left|disk is full|quota|read-only|readonly|disk i/o|i/o error|"
                             r"could not connect|connection (refused|reset|error)|connecterror|server disconnected|"
                             r"remoteprotocolerror|permission denied|unable to open database", re.IGNORECASE)

log = logging.getLogger(__name__)


def store_down(error: BaseException | None) -> bool:
    """Whether a store write failed because the store itself cannot take writes."""
    while error is not None:
        if isinstance(error, IndexUnavailable) or isinstance(error, OSError) and error.errno in STORE_DOWN_ERRNOS:
            return True  # (IndexUnavailable: busy, another process's lock; every file would wait on it)
        if STORE_DOWN_TEXT.search(f"{type(error).__name__} {error}"):
            return True
        error = error.__cause__ or error.__context__
    return False


@dataclass
class Pending:
    """A changed file, chunked, waiting for its embeddings."""

    record: FileRecord
    chunks: list[Chunk]
    uses: dict[str, str] | None = None  # the code graph's references, {name: encoded uses}


class StageError(Exception):
    """Embedding or storing a window failed; `stage` is "embedded" or "stored"."""

    def __init__(self, stage: str, error: Exception) -> None:
        super().__init__(f"{stage}: {error}")
        self.stage = stage
        self.error = error


@dataclass
class Window:
    """Files of step 2 taken together: their chunks, the vectors made so far, the encoder calls left."""

    batch: list[Pending]
    chunks: list[Chunk]
    vectors: np.ndarray
    ready: set[int]  # positions with a vector (the projection's sample, the shared cache's, encoded)
    parts: list[list[int]]  # the positions left to encode, a call each, shortest first
    reused: int = 0  # of `ready`, vectors the shared cache held


@dataclass
class Call:
    """An encoder call of a window (`part`, running as `future`), or the window's end (`part` None)."""

    window: Window
    part: list[int] | None = None
    future: Future | None = field(default=None, repr=False)


class VectorStep:
    def __init__(self, run: Indexer) -> None:
        self.run = run
        self.started: float | None = None  # when the first window began
        self.made = 0  # chunks whose vectors are made (being written or committed): what progress counts
        self.embedded = 0  # chunks embedded and committed
        self.writer: ThreadPoolExecutor | None = None  # stores and commits a window while the next is encoded
        self.writing: tuple[list[Pending], Future] | None = None  # the window being written
        self.encoders: ThreadPoolExecutor | None = None  # runs the encoder calls, as many at once as it takes
        self.presampled: dict[str, np.ndarray] = {}  # encoder vectors of the projection's sample, by chunk id
        self.presampled_cached: set[str] = set()  # those of them the shared cache held

    def fit_projection(self) -> None:
        """A new index of many chunks stores fewer dimensions: fit a projection on a sample of its own
        chunks before the first vector is stored (services/storage/projection.py). The sample's vectors are kept
        for their windows. A cancel before the fit leaves no projection, and nothing stored."""
        wanted = self.run.settings.vector_dimensions
        catalog = self.run.index.catalog()
        total = catalog.counts()[1]
        if (not wanted or wanted >= self.run.embedder.dimension or total < self.run.settings.reduce_from_chunks
                or self.run.index.projection() or self.run.cancel.is_set()
                or catalog.awaiting.awaiting_count() < total):
            return  # (a chunk has its vector already: the index keeps the dimensions it has)
        chunks = [c for part in catalog.chunk_batches() for c in part]
        sample = sorted((chunks[i] for i in sample_positions(len(chunks), self.run.settings.projection_sample)),
                        key=lambda c: len(c.content))  # similar lengths pad less
        if len(sample) < 2 * wanted:  # too few to find that many directions
            return
        vectors = np.zeros((len(sample), self.run.embedder.dimension), dtype=np.float32)
        self.run.meter.emit("embedding", 0, 0, 0, len(chunks),
                   message=f"fitting a {wanted}-dimension projection on {len(sample):,} chunks")
        size = self.run.embedder.call_size
        for start in range(0, len(sample), size):
            if self.run.cancel.is_set():
                return
            part = sample[start:start + size]
            vectors[start:start + size], cached = self.run.vector_maker.make(part, check=self.run.everything)
            self.presampled_cached |= {sample[start + i].id for i in cached}
        projection = Projection.fit(vectors, wanted)
        self.run.index.store().drop()  # nothing is indexed yet: a fresh collection takes the new dimension
        self.run.index.set_projection(projection)
        self.run.index.catalog().set_meta(projection=projection.describe(), dimension=str(wanted))
        self.presampled = {c.id: v for c, v in zip(sample, vectors)}

    def embed_awaiting(self) -> int:
        """Step 2: embed the chunks awaiting vectors (this run's and any an earlier run left), the most
        useful files first, window after window; each window is stored and marked by a writer thread while
        the next one is encoded (one write in flight), so the encoder does not wait on the stores."""
        catalog = self.run.index.catalog()
        counts = catalog.awaiting.awaiting_paths()
        commits = self.run.index.history_store().commits() if counts and self.run.index.history_state().commits else []
        order = vector_order(list(counts), commits, self.run.order_before)
        self.run.total_chunks = sum(counts.values())
        self.run.files_total = len(order)
        self.run.files_committed = 0
        self._record_run_total()
        if not order:
            return 0
        self.started = time.monotonic()
        self._emit()
        writer = ThreadPoolExecutor(1, thread_name_prefix="ke-store")
        self.writer = writer
        self.encoders = ThreadPoolExecutor(self.run.embedder.calls_at_once, thread_name_prefix="ke-encode")
        try:
            self._encode_windows(self._read(paths) for paths in
                                 windows(order, counts, WINDOW_CHUNKS, self.run.index.asked))
            self._written()
            self.run._still_there()
        finally:
            self.writer = None
            self.encoders.shutdown(wait=True)  # a cancel or an error lets the calls running end
            self.encoders = None
            self.run.index.asked.clear()  # asked of this run; the next one has its own
            writer.shutdown(wait=True)  # a run stopping on an error still lets the last write end first
        return self.run.files_committed

    def _read(self, paths: list[str]) -> list[Pending]:
        """A window's files with the chunks that wait for vectors (read when the window is reached)."""
        self.run._still_there()
        catalog = self.run.index.catalog()
        batch = [Pending(FileRecord(path, "", 0, 0, ""), catalog.awaiting_chunks(path)) for path in paths]
        return [p for p in batch if p.chunks]

    def _emit(self) -> None:
        run = self.run
        run.meter.emit("embedding", run.files_committed, run.files_total, self.made, run.total_chunks)

    def _record_run_total(self) -> None:
        """The chunks the index holds at the end of this run, for "1,200 of 7,206 chunks done" (kept in the
        catalogue, so an interrupted run reopened still says it); those with vectors already count as done."""
        catalog = self.run.index.catalog()
        chunks = catalog.counts()[1]
        self.run.kept_chunks = chunks - self.run.total_chunks
        catalog.set_meta(run_chunks_total=str(chunks))

    def _encode_windows(self, batches: Iterable[list[Pending]], overlap: bool = True) -> bool:
        """Encode window after window and hand each to the writer (`overlap`) or store it here. A window whose
        encoding fails is tried again file by file (with `overlap`; else the error is raised), then the windows
        after it go on. False when cancelled."""
        batches = iter(batches)
        while True:
            failed = self._calls(batches, overlap)
            if failed is None:
                return not self.run.cancel.is_set()
            error, window, later = failed
            if not overlap:
                raise error
            if not self._retry(window.batch, error):
                return False
            batches = chain([w.batch for w in later], batches)

    def _calls(self, batches: Iterator[list[Pending]], overlap: bool) -> tuple[StageError, Window, list[Window]] | None:
        """Keep as many encoder calls running as the encoder takes, window after window, and finish each window
        once its calls are back. No call starts once the run is cancelled or a call failed; the calls running
        end first. On a cancel, the windows begun keep their files whose chunks all have vectors. None, or
        (the error, the window whose call failed, the windows begun after it: none of theirs is kept)."""
        encoders = self.encoders
        assert encoders is not None, "step 2's calls run in embed_awaiting"
        begun: list[Window] = []  # windows begun and not finished, in order
        plan = self._planned(batches, begun)
        running: deque[Call] = deque()
        failed: tuple[StageError, Window] | None = None
        while True:
            while (failed is None and not self.run.cancel.is_set()
                   and sum(c.future is not None for c in running) < self.run.embedder.calls_at_once):
                call = next(plan, None)
                if call is None:
                    break
                if call.part is not None:
                    if self.run.cancel.is_set():  # came while the window was read: its call does not start
                        break
                    call.future = encoders.submit(self._encode, call.window, call.part)
                running.append(call)
            if not running:
                break
            call = running.popleft()
            if failed is not None:
                _wait(call.future)
            elif call.future is None or call.part is None:
                self._finish(begun.pop(0), overlap)
            else:
                try:
                    self._take(call.window, call.part, call.future.result())
                except StageError as error:
                    failed = (error, call.window)
        if failed is not None:
            for undone in begun:
                self.made -= len(undone.ready)  # (tried again from the start)
            return failed[0], failed[1], begun[begun.index(failed[1]) + 1:]
        for window in begun:  # cancelled: what each window has whole is kept
            self._finish(window, overlap)
        return None

    def _planned(self, batches: Iterator[list[Pending]], begun: list[Window]) -> Iterator[Call]:
        """Each window's calls, then its end; a window is read and planned when its first call is wanted."""
        for batch in batches:
            window = self._begin(batch)
            begun.append(window)
            for part in window.parts:
                yield Call(window, part)
            yield Call(window)

    def _begin(self, batch: list[Pending]) -> Window:
        """A window's vectors that need no encoder (the projection's sample's, the shared cache's), and its
        encoder calls: the rest, length-sorted (less padding), a call's worth each."""
        chunks = [c for p in batch for c in p.chunks]
        window = Window(batch, chunks, np.zeros((len(chunks), self.run._dimension()), dtype=np.float32), set(), [])
        presampled = [i for i, c in enumerate(chunks) if c.id in self.presampled]
        if presampled:
            window.vectors[presampled] = self.run.index.project(np.stack([self.presampled[chunks[i].id]
                                                                          for i in presampled]))
            window.ready.update(presampled)
            window.reused = sum(chunks[i].id in self.presampled_cached for i in presampled)
        fresh = [i for i in range(len(chunks)) if i not in window.ready]
        cached = self.run.vector_maker.cached([chunks[i] for i in fresh], check=self.run.everything)
        if cached:
            hits = [fresh[j] for j in cached]
            window.vectors[hits] = self.run.index.project(np.stack(list(cached.values())))
            window.ready.update(hits)
            window.reused += len(hits)
        self._count(len(window.ready))
        fresh = sorted((i for i in fresh if i not in window.ready), key=lambda i: len(chunks[i].content))
        size = self.run.embedder.call_size
        window.parts = [fresh[start:start + size] for start in range(0, len(fresh), size)]
        return window

    def _encode(self, window: Window, part: list[int]) -> np.ndarray:
        try:
            return self.run.vector_maker.encode([window.chunks[i] for i in part])
        except Exception as error:
            raise StageError("embedded", error) from error

    def _take(self, window: Window, part: list[int], made: np.ndarray) -> None:
        window.vectors[part] = self.run.index.project(made)
        window.ready.update(part)
        self._count(len(part))
        self._emit()

    def _count(self, chunks: int) -> None:
        self.made = min(self.made + chunks, self.run.total_chunks)

    def _finish(self, window: Window, overlap: bool) -> None:
        """Store and commit a window's files whose chunks all have vectors: in the writer thread (`overlap`,
        while the next window is encoded) or here."""
        complete, position = [], 0
        for item in window.batch:
            span = range(position, position + len(item.chunks))
            position = span.stop
            if all(i in window.ready for i in span):
                complete.append((item, span))
        for chunk in window.chunks:
            self.presampled.pop(chunk.id, None)
        self._written()  # one write in flight at a time, in window order
        if overlap and self.writer:
            self.writing = (window.batch, self.writer.submit(self._store_and_commit, complete, window.vectors,
                                                             window.reused))
        else:
            self._store_and_commit(complete, window.vectors, window.reused)
        self._emit()

    def _retry(self, batch: list[Pending], error: StageError) -> bool:
        if error.stage == "stored" and store_down(error.error):
            raise self._stopped(error) from error.error
        if len(batch) == 1:
            self._fail(batch[0], error)
            return True
        log.warning("a window of %d files failed (%s); retrying them one by one", len(batch), error)
        return self._embed_one_by_one(batch)

    def _embed_one_by_one(self, batch: list[Pending]) -> bool:
        errors = []
        for item in batch:
            if self.run.cancel.is_set():
                return False
            try:
                if not self._encode_windows([[item]], overlap=False):
                    return False
            except StageError as error:
                errors.append(error)
                self._fail(item, error)
        if len(errors) == len(batch):  # it fails for every file: the store or the model is broken
            raise self._stopped(errors[-1])
        return True

    def _fail(self, item: Pending, error: StageError) -> None:
        """List a file that could not be embedded or stored, unless the component fails for a probe too."""
        log.warning("%s could not be %s", item.record.path, error.stage, exc_info=error.error)
        if error.stage == "stored" and store_down(error.error):
            raise self._stopped(error) from error.error
        try:
            if error.stage == "embedded":
                self.run.embedder.encode(["probe"])
            else:
                self.run.index.store().count()
        except Exception as probe_error:
            raise self._stopped(StageError(error.stage, probe_error)) from probe_error
        reason = f"could not be {error.stage}: {short_reason(error.error)}"
        self.run.failed.append(SkippedFile(item.record.path, reason))
        # its step-1 commit goes too: a file whose own text cannot be embedded is skipped, as the report says,
        # not left waiting for vectors no run can make
        self.run.index.store().delete(self.run.index.catalog().remove_file(item.record.path))

    def _stopped(self, error: StageError) -> IndexStoreError:
        component = "the embedding model" if error.stage == "embedded" else "the vector store"
        log.warning("indexing %s stopped: %s failed: %s", self.run.index.root, component, error.error,
                    exc_info=error.error)
        reason = short_reason(error.error).split("; nothing was changed")[0]  # files were: they are kept
        return IndexStoreError(f"indexing stopped: {component} failed ({reason}). "
                               "Files indexed so far are kept; run it again once this is fixed.")

    def _written(self) -> None:
        """Wait for the window being written; if its write failed, its files are tried again one by one."""
        if self.writing is None:
            return
        batch, future = self.writing
        self.writing = None
        try:
            future.result()
        except StageError as error:
            self._retry(batch, error)

    def _store_and_commit(self, complete: list, vectors: np.ndarray, reused: int) -> None:
        """Store a window's vectors, then mark its chunks as having them (one transaction)."""
        positions = [i for _, span in complete for i in span]
        chunks = [c for item, _ in complete for c in item.chunks]
        if not chunks:
            return
        try:
            self.run.index.store().upsert(chunks, vectors[positions])
        except Exception as error:  # those stored so far are written again by the next run
            raise StageError("stored", error) from error
        self.run.index.catalog().awaiting.vectors_stored([c.id for c in chunks])
        self.run.files_committed += len(complete)
        self.embedded += len(chunks)  # (of a window a cancel cut short, the files it finished)
        self.run.reused += min(reused, len(chunks))


def _wait(future: Future | None) -> None:
    """Let a call end, its result or error dropped (its window is tried again)."""
    if future is not None:
        try:
            future.result()
        except Exception:
            pass


def windows(order: list[str], counts: dict[str, int], size: int, asked: set[str] | None = None):
    """Files in `order`, in windows holding about `size` chunks (`counts`: each file's). The first windows
    are smaller (32, 64, ...), so the first vectors are searchable within seconds and an early cancel keeps some.
    Files in `asked` (added to while the windows are taken: what the user asked about) jump the queue: each
    window starts with those still waiting."""
    remaining = list(order)
    wanted = min(FIRST_WINDOW_CHUNKS, size)
    while remaining:
        if asked:
            waiting = set(remaining) & asked
            asked.difference_update(waiting)
            remaining = [p for p in remaining if p in waiting] + [p for p in remaining if p not in waiting]
        taken, count = 0, 0
        while taken < len(remaining) and count < wanted:
            count += counts[remaining[taken]]
            taken += 1
        window, remaining = remaining[:taken], remaining[taken:]
        yield window
        wanted = min(wanted * 2, size)
