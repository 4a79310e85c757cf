"""Incremental indexing of one workspace: scan, chunk, commit, then embed, in two durable steps.

Step 1 commits every changed file with all that needs no encoder (chunks, names, paths, keywords, file
words, the code graph; then the history and the reference counts), each new chunk listed in the catalogue
as awaiting its vector: go to symbol / file, references, keyword and file answers then cover the whole
workspace. Step 2 embeds the chunks awaiting vectors, the most useful files first (vector_order.py),
stores them and marks them, window by window. A kill at any moment leaves each file fully old or fully
new; chunks still awaiting vectors are what the next run (or the engine's automatic one) embeds first.

Runs synchronously (the service calls it in a worker thread). Cancellation is checked between files in
step 1 and between encoder calls in step 2.

Faults are isolated per file: a file that cannot be read, chunked, embedded or stored is listed
under `skipped` with the reason and the run goes on. A failure of the store or the model itself
(it fails for a lone probe too, or for every file of a window) stops the run with IndexStoreError.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from services.storage.catalog import FORMAT_CHANGES, HASH_CHARS, INDEX_FORMAT, FileRecord
from services.storage import faults
from services.storage.code_graph import GRAPH_VERSION
from services.indexing.chunking.references import reference_counts
from services.indexing.history import update_history
from services.encoders import fastest
from services.encoders.embedder import Embedder, chunk_text
from services.core.errors import IndexStoreError, IndexUnavailable, KnowledgeError, WorkspaceError
from services.indexing.health import folder_missing
from services.indexing import integrity
from services.indexing.rate import RateMeter, eta
from services.core.models import Chunk, IndexReport, ProgressEvent, SkippedFile, count_by_reason, nothing_to_index
from services.storage.projection import Projection, sample_positions
from services.storage.vector_cache import VectorCache
from services.indexing.preparing import Prepared, file_graph, prepare, prepared, short_reason
from services.indexing.scanning import SourceFile, read_source, scan_workspace
from services.indexing.planning import FAILURE_REASONS, Plan, Planner
from services.indexing.vectors import VectorMaker
from services.indexing.vector_order import vector_order
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex

WINDOW_CHUNKS = 1024  # files are committed a window at a time; a window is encoded shortest first
FIRST_WINDOW_CHUNKS = 32
# Chroma's first write after a bulk load waits on work the load left (1.06 s at 38k chunks, measured): a
# run that stored this many vectors pays it at its end, not the user's next edit (benchmarks/experiments/README.md).
SETTLE_AFTER_VECTORS = 1000
RATE_SAMPLE = 100  # vectors a run makes before its speed is kept for the next run's progress
DEFAULT_RATE = 20.0  # chunks/s expected of an encoder never timed here (a slow CPU's; progress is never ahead)

# A store write failing with one of these is the store's fault (disk full, read-only, server gone),
# never one file's: the run stops at once rather than fail file after file.
STORE_DOWN_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM,
                     errno.ECONNREFUSED, errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN}
STORE_DOWN_TEXT = re.compile(r"no space left|disk is full|quota|read-only|readonly|disk i/o|i/o error|"
                             r"could not connect|connection (refused|reset|error)|connecterror|server disconnected|"
                             r"remoteprotocolerror|permission denied|unable to open database", re.IGNORECASE)

log = logging.getLogger(__name__)
_REFERENCE_COUNTS = threading.Lock()


def store_down(error: BaseException | None) -> bool:
    """Whether a store write failed because the store itself cannot take writes."""
    while error is not None:
        if isinstance(error, IndexUnavailable) or isinstance(error, OSError) and error.errno in STORE_DOWN_ERRNOS:
            return True  # (IndexUnavailable: busy, another process's lock; every file would wait on it)
        if STORE_DOWN_TEXT.search(f"{type(error).__name__} {error}"):
            return True
        error = error.__cause__ or error.__context__
    return False


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


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


class Indexer:
    def __init__(self, index: WorkspaceIndex, embedder: Embedder, settings: Settings,
                 progress: Callable[[ProgressEvent], None] | None = None,
                 cancel: threading.Event | None = None, cache: VectorCache | None = None) -> None:
        """`cache`: the data dir's shared vector cache (services/storage/vector_cache.py); None embeds
        every new chunk."""
        self.index = index
        self.vector_maker = VectorMaker(embedder, cache)  # new chunks' vectors: the shared cache's, or encoded
        self.paths: set[str] | None = None  # what a watcher's run looks at (run's `paths`)
        self.embedder = embedder
        self.settings = settings
        self.progress = progress or (lambda event: None)
        self.cancel = cancel or threading.Event()
        self.started = time.monotonic()
        self.embed_started: float | None = None
        self.rate_meter = RateMeter()  # the ETA's rate: chunks over the run's last 30 s
        self.everything = False  # a full rebuild re-embeds every file, replacing each in place
        self.embedded = 0  # chunks embedded and committed
        self.window_embedded = 0  # chunks embedded in the window being written
        self.reused = 0  # of `embedded`, vectors taken from the shared cache instead of the encoder
        self.window_reused = 0
        self.made = 0  # chunks whose vectors are made (committed or being written): what progress counts
        self.writer: ThreadPoolExecutor | None = None  # stores and commits a window while the next is encoded
        self.writing: tuple[list[Pending], Future] | None = None  # the window being written
        self.total_chunks = self.files_total = self.files_committed = 0
        self.full_rebuild = False  # asked for a full rebuild (every file read again)
        self.read = (0, 0)  # step 1: files committed, of the files it had to read
        self.files_removed = 0  # files this run took out of the index (with files_committed: what it changed)
        self.kept_chunks = 0  # chunks of the index this run keeps as they are (whole-job progress counts them done)
        self.new_paths: set[str] = set()  # pending files the index did not hold
        self.known_paths: set[str] = set()  # the catalogue's files the plan looked at
        self.order_before: int | None = None  # vector order: only commits before this time count (a benchmark's)
        # the whole run's progress, each step weighed by its measured cost (run_share)
        self.step1_started: float | None = None
        self.step1_seconds: float | None = None  # how long step 1 took, once it is over
        self.step1_weight: float | None = None  # step 1's share of the run's cost, fixed when step 2 begins
        self.step1_files = self.files_chunked = self.chunks_chunked = 0
        self.awaiting_before = 0  # chunks an earlier run left without vectors
        self.files_added = 0
        self.failed: list[SkippedFile] = []  # files whose embedding or storing failed
        self.references_deferred = False  # a quick run leaves the reference counts to refresh_references()
        self.presampled: dict[str, np.ndarray] = {}  # encoder vectors of the projection's sample, by chunk id
        self.presampled_cached: set[str] = set()  # those of them the shared cache held
        self.found = integrity.SOUND  # what the integrity check at the start of the run found
        self.repaired: list[str] = []  # what the run repaired, to tell the user
        self.resuming = False  # the last run stopped before its end: this one continues it
        self.last_event: ProgressEvent | None = None  # what health says while the run is under way
        self.moved_aside = False  # this run moved the old index aside to rebuild (put back if it fails)

    # --- the run ---
    def run(self, full: bool = False, quick: bool = False, paths: Iterable[str] | None = None) -> IndexReport:
        """Index what changed. Raises KnowledgeError subclasses only (details of others go to the log).
        `quick` (the watcher's runs) makes changed files searchable at once: no orphan sweep, and the
        reference recount (over every chunk) is left to the caller (refresh_references). The keyword
        index needs nothing at the end: each file's commit updates it. `paths`: the workspace-relative
        paths a watcher saw change; only they are looked at, unless only a whole scan can tell
        (scanning.scan_paths)."""
        try:
            self.index.run = self
            self.paths = None if paths is None else set(paths)
            return self._run(full, quick)
        except KnowledgeError as error:
            if self._put_back():
                raise type(error)(_put_back_text(str(error))) from error
            raise
        except Exception as error:
            log.warning("indexing %s stopped", self.index.root, exc_info=True)  # the caller reports it
            if faults.transient(error) and not (self.moved_aside or self.files_removed or self.files_committed):
                raise IndexUnavailable(f"unavailable: {short_reason(error)}; nothing was changed: try again once "
                                       "that is fixed (disk space, open-file limit, permissions)") from error
            kept = "Files indexed so far are kept"
            if self._put_back():
                kept = "The rebuild is undone: the old index is back as it was"
            raise IndexStoreError(f"indexing stopped: {short_reason(error)}. {kept}; "
                                  "run it again once this is fixed.") from error
        finally:
            self.index.running = False
            self.index.run = None
            self.index.integrity = None  # checked again on the next look

    def _run(self, full: bool, quick: bool) -> IndexReport:
        self._check_root()
        self._choose_encoder(full)
        self._prepare_model()  # a missing model fails here, before anything is touched
        self.vector_maker.open()
        if self.cancel.is_set():  # cancelled before it started: nothing touched
            self._emit("cancelled", 0, 0)
            files, chunks = self.index.catalog().counts() if self.index.exists() else (0, 0)
            return IndexReport(0, 0, 0, 0, chunks, round(time.monotonic() - self.started, 3), cancelled=True)
        rebuilt_reason = "" if quick else self._unreadable_reason(full)  # the watcher's runs trust the last check
        self.index.running = True
        if rebuilt_reason:  # a part is gone or proven corrupt: start from nothing, the old index moved aside
            self._set_aside()
            self.found = integrity.SOUND
        old_format = self.index.exists() and self.index.catalog().get_meta("index_format", "1") != INDEX_FORMAT
        rebuilt_reason = rebuilt_reason or self._rebuild_reason(full)
        self.everything = bool(rebuilt_reason)
        self.full_rebuild = full
        if rebuilt_reason and (not full or old_format) and self.index.exists():  # an incompatible index
            self._set_aside()
        self._start_catalog()
        self._fill_graph()
        if self.found.keywords:  # the keyword table disagrees with the catalogue: fill it again from it
            self.index.catalog().refill_keywords()
        if not quick:
            self._sweep_orphans()
        plan = self._plan()
        self.known_paths = set(plan.known)
        self._remove(plan.removed)
        pending = self._chunk(plan)
        self._still_there()  # files read from a folder that went away are not "removed" nor "unreadable"
        try:
            done = self._commit_first(pending)
            self.read = (done, len(pending))
            changed = bool(plan.removed) or done > 0 or bool(rebuilt_reason)
            self._after_first(plan, changed, quick)
            self._fit_projection()
            self._embed_awaiting()
        except IndexUnavailable as error:  # a passing fault once files are committed: say what was kept
            raise IndexUnavailable(str(error).replace("nothing was changed", KEPT)) from error
        plan.skipped = sorted(plan.skipped + self.failed, key=lambda s: s.path)
        self._finish(plan, quick)
        files, chunks = self.index.catalog().counts()
        self._note_repairs()
        self._drop_aside()
        return IndexReport(
            files_indexed=done - len({f.path for f in self.failed} & {p.record.path for p in pending}),
            files_unchanged=len(plan.unchanged), files_removed=len(plan.removed),
            chunks_embedded=self.embedded, chunks_total=chunks, vectors_reused=self.reused, files_added=self.files_added,
            seconds=round(time.monotonic() - self.started, 3), cancelled=self.cancel.is_set(),
            rebuilt_reason=rebuilt_reason, skipped=tuple(plan.skipped),
            failed=count_by_reason(s for s in plan.skipped if s.category in FAILURE_REASONS),
            message="; ".join(([] if files else [nothing_to_index(len(plan.skipped))]) + self.repaired),
        )

    def _choose_encoder(self, full: bool) -> None:
        """With the `auto` backend: the one this index was built with; for a new index (or a full rebuild) the
        fastest measured on this machine, on a sample of this workspace's chunks the first time."""
        built_with = self._built_with() if self.index.exists() and not full else ""
        embedder = self.embedder.for_index(built_with, self._sample_texts)
        if embedder is not self.embedder:
            self.embedder = embedder
            self.vector_maker = VectorMaker(embedder, self.vector_maker.cache)

    def _built_with(self) -> str:
        """The backend the index's catalogue records; "" when the catalogue cannot be read (the integrity
        check that follows finds the damage, and the rebuild takes the machine's choice)."""
        try:
            return self.index.catalog().backend()
        except Exception:
            log.debug("the catalogue of %s could not be read for its backend", self.index.root, exc_info=True)
            return ""

    def _sample_texts(self) -> list[str]:
        """Up to fastest.SAMPLE chunk texts of the workspace's first files, for timing the encoders."""
        self._emit("preparing", 0, 0, message="measuring which encoder runs fastest on this machine (once, "
                                              "on a sample of your chunks; each is exported and quantised first)")
        scan = scan_workspace(self.index.root, self.settings.max_file_bytes, self.settings.skip_machine_made)
        chunks: list[Chunk] = []
        for source in scan.files:
            if len(chunks) >= fastest.SAMPLE or self.cancel.is_set():
                break
            chunks += prepare(source, self.settings, None).chunks or []  # the run reports what fails here
        return [chunk_text(c) for c in sorted(chunks, key=lambda c: len(c.content))[:fastest.SAMPLE]]

    def _prepare_model(self) -> None:
        """Load the embedding model: its own stage, since on first use it is exported and quantised."""
        if not self.embedder.loaded:
            self._emit("preparing", 0, 0, message=f"preparing the embedding model ({self.embedder.backend}; "
                                                  "exported and quantised once, on first use)")
        self.embedder.load()

    def _check_root(self) -> None:
        """An unreadable root is an error that leaves the index as it is (never "every file was removed")."""
        try:
            with os.scandir(self.index.root):
                pass
        except OSError as error:
            raise WorkspaceError(f"the workspace folder {self.index.root} cannot be read "
                                 f"({(error.strerror or str(error)).lower()}); its index is left as it is.") from error

    def _still_there(self) -> None:
        """A run stops when its folder goes away under it (moved, renamed or deleted): what it committed
        stays, chunks without vectors wait for the next run, and nothing is deleted."""
        if not self.index.root.is_dir():
            raise WorkspaceError(f"{folder_missing(self.index.root)}; the index run stopped and its index is kept "
                                 "as it was committed")

    def _unreadable_reason(self, full: bool) -> str:
        """Check the index's parts against each other (in full); a reason to rebuild when one is gone or
        proven corrupt. What a run can mend in place (missing vectors, keyword index) is kept in self.found.
        A part that cannot be read now stops the run here, before anything is touched (IndexUnavailable),
        unless a full rebuild was asked for (the old index is then moved aside, and put back if it fails)."""
        if not (self.index.folder / "manifest.sqlite").exists():
            return ""
        self.found = integrity.check(self.index, full=True)
        if self.found.unavailable:
            log.warning("the index of %s: %s", self.index.root, self.found.unavailable)
            if not full:
                raise IndexUnavailable(self.found.unavailable)
            return f"full rebuild requested ({self.found.unavailable})"
        if self.found.damaged:
            log.warning("the index of %s is %s", self.index.root, self.found.message())
        return "; ".join(self.found.problems()) if self.found.unreadable else ""

    def _set_aside(self) -> None:
        """Rebuild from nothing, the old index kept aside until the new one is complete and verified."""
        if self.index.set_aside():
            self.moved_aside = True
            log.warning("the index of %s is rebuilt; the old one is kept at %s until then", self.index.root,
                        self.index.aside)

    def _put_back(self) -> bool:
        """A rebuild that failed leaves what was there: the old index goes back in place. True when it did."""
        if not self.moved_aside or not self.index.aside.exists():
            return False
        try:
            self.index.restore_aside()
        except OSError:
            log.warning("the old index of %s could not be put back; it is kept at %s", self.index.root,
                        self.index.aside, exc_info=True)
            return False
        log.warning("the rebuild of %s failed: the old index is back in place", self.index.root)
        return True

    def _drop_aside(self) -> None:
        """A rebuild that reached its end, verified sound: the old index kept aside is removed."""
        if self.cancel.is_set() or not self.index.aside.exists():
            return
        found = integrity.check(self.index, full=True)
        if found.damaged or found.unavailable:
            log.warning("the rebuilt index of %s is %s; the old one stays at %s", self.index.root,
                        found.message(), self.index.aside)
            return
        self.index.drop_aside()
        self.moved_aside = False

    def _note_repairs(self) -> None:
        if self.vector_maker.repair_note():
            self.repaired.append(f"repaired: the shared vector cache {self.vector_maker.repair_note()}")
        if self.found.missing_vectors:
            self.repaired.append(f"repaired: re-embedded {self.found.missing_vectors} chunks that had no vector")
        if self.found.keywords:
            self.repaired.append(f"repaired: rebuilt the keyword index ({self.found.keywords})")

    def _rebuild_reason(self, full: bool) -> str:
        if full:
            return "full rebuild requested"
        if not self.index.exists():
            return ""
        catalog = self.index.catalog()
        old_model = catalog.get_meta("model")
        if old_model and old_model != self.embedder.model_name:
            return f"embedding model changed from {old_model} to {self.embedder.model_name}"
        old_format = catalog.get_meta("index_format", "1")
        if old_format != INDEX_FORMAT:
            return f"the index format changed ({FORMAT_CHANGES.get(old_format, 'a newer version wrote it')})"
        old_backend = catalog.backend()
        if old_model and old_backend != self.embedder.backend_used:
            return (f"embedding backend changed from {old_backend} to {self.embedder.backend_used} "
                    "(their vectors differ slightly, so they are not mixed)")
        if not self.index.chroma_url and not self.index.chroma_path.exists():
            return "the vector store folder was missing"
        if catalog.get_meta("projection") and not self.index.projection_path.exists():
            return "the index's vector projection file was missing"
        return ""

    def _start_catalog(self) -> None:
        catalog = self.index.catalog()
        self.resuming = bool(catalog.get_meta("run_started"))  # cleared by a run that reaches its end
        if not catalog.get_meta("created_at"):
            catalog.set_meta(created_at=now_iso(), workspace=str(self.index.root))
        catalog.set_meta(run_started=catalog.get_meta("run_started") or now_iso(), run_cancelled="")
        catalog.set_meta(model=self.embedder.model_name, dimension=str(self._dimension()), last_error="",
                         backend=self.embedder.backend_used, device=self.embedder.device_used,
                         encoder_note=self.embedder.note, index_format=INDEX_FORMAT)

    def _fill_graph(self) -> None:
        """An index from before the code graph (or of an older graph version) gets every catalogued file's
        references from the file as it is on disk, without re-embedding; a file that changed since is
        committed, references and all, by this run. Cancelled half-way, the next run does it again."""
        catalog = self.index.catalog()
        if catalog.graph_ready():
            return
        records = list(catalog.files().values())
        for number, record in enumerate(records, 1):
            if self.cancel.is_set():
                return
            source = SourceFile(record.path, self.index.root, record.size, record.mtime_ns, record.language)
            try:
                text, digest = read_source(source, self.settings.skip_machine_made, self.settings.max_file_bytes)
            except Exception:  # unreadable or gone: the run's scan decides what happens to it
                continue
            if digest == record.file_hash:
                catalog.set_graph_uses(record.path, digest, file_graph(record.path, text, record.language))
            if number % 200 == 0:
                self._emit("chunking", number, len(records), message="adding the code graph (no re-embedding)")
        catalog.set_meta(graph=GRAPH_VERSION)

    def _dimension(self) -> int:
        """Of the vectors this index stores."""
        projection = self.index.projection()
        return projection.dimensions[1] if projection else self.embedder.dimension

    def _fit_projection(self) -> None:
        """A new index of many chunks stores fewer dimensions: fit a projection on a sample of its own
        chunks before the first vector is stored (services/storage/projection.py). The sample's vectors are kept
        for their windows. A cancel before the fit leaves no projection, and nothing stored."""
        wanted = self.settings.vector_dimensions
        catalog = self.index.catalog()
        total = catalog.counts()[1]
        if (not wanted or wanted >= self.embedder.dimension or total < self.settings.reduce_from_chunks
                or self.index.projection() or self.cancel.is_set() or catalog.awaiting_count() < total):
            return  # (a chunk has its vector already: the index keeps the dimensions it has)
        chunks = [c for part in catalog.chunk_batches() for c in part]
        sample = sorted((chunks[i] for i in sample_positions(len(chunks), self.settings.projection_sample)),
                        key=lambda c: len(c.content))  # similar lengths pad less
        if len(sample) < 2 * wanted:  # too few to find that many directions
            return
        vectors = np.zeros((len(sample), self.embedder.dimension), dtype=np.float32)
        self._emit("embedding", 0, 0, 0, len(chunks),
                   message=f"fitting a {wanted}-dimension projection on {len(sample):,} chunks")
        size = self.embedder.call_size
        for start in range(0, len(sample), size):
            if self.cancel.is_set():
                return
            part = sample[start:start + size]
            vectors[start:start + size], cached = self.vector_maker.make(part, check=self.everything)
            self.presampled_cached |= {sample[start + i].id for i in cached}
        projection = Projection.fit(vectors, wanted)
        self.index.store().drop()  # nothing is indexed yet: a fresh collection takes the new dimension
        self.index.set_projection(projection)
        self.index.catalog().set_meta(projection=projection.describe(), dimension=str(wanted))
        self.presampled = {c.id: v for c, v in zip(sample, vectors)}

    def _sweep_orphans(self) -> None:
        """Vectors left by a crash between writing vectors and committing their file."""
        self.index.store().sweep(self.index.catalog().chunk_ids())

    def _plan(self) -> Plan:
        self.step1_started = time.monotonic()
        self.awaiting_before = self.index.catalog().awaiting_count()
        self._emit("scanning", 0, 0)
        plan = Planner(self.index, self.settings, self.everything, self.paths, self.found.repair_paths).plan()
        self.step1_files = len(plan.changed)
        return plan

    def _remove(self, paths: list[str]) -> None:
        for path in paths:
            self.index.store().delete(self.index.catalog().remove_file(path))
            self.files_removed += 1

    def _chunk(self, plan: Plan) -> list[Pending]:
        """Read, chunk and graph the changed files (in worker processes when there are many:
        services/indexing/preparing.py), then decide in the scan's order what each one is."""
        olds = [self._old_hash(plan.known.get(source.path)) for source in plan.changed]
        pending = []
        for number, item in enumerate(prepared(plan.changed, self.settings, olds, self.cancel), 1):
            found = self._judge(item, plan.known.get(item.source.path), plan)
            if found:
                pending.append(found)
                self.chunks_chunked += len(found.chunks)
            self.files_chunked = number
            if number % 50 == 0:
                self._emit("chunking", number, len(plan.changed))
        return pending

    def _old_hash(self, old: FileRecord | None) -> str | None:
        """The catalogue's hash of a file whose unchanged bytes need no chunking; None: chunk it whatever."""
        if old is None or self.everything or old.path in self.found.repair_paths:
            return None
        return old.file_hash

    def _judge(self, item: Prepared, old: FileRecord | None, plan: Plan) -> Pending | None:
        """A prepared file: skipped, unchanged (its stat refreshed) or a Pending to embed."""
        source = item.source
        if item.skip:
            plan.skipped.append(SkippedFile(source.path, item.skip))
            if old and not item.skip.startswith("unreadable"):  # unreadable is no evidence it changed: keep it
                self._remove([source.path])
                plan.removed.append(source.path)
            return None
        if item.error:
            log.warning("%s %s", source.path, item.error)
            plan.skipped.append(SkippedFile(source.path, item.error))
            return None
        record = FileRecord(source.path, item.digest, source.size, source.mtime_ns, source.language)
        if item.chunks is None:  # touched, not changed: refresh its stat
            self.index.catalog().commit_file(record, self.index.catalog().chunks(path=source.path))
            plan.unchanged.append(source.path)
            return None
        return Pending(record, item.chunks, item.uses)

    def _commit_first(self, pending: list[Pending]) -> int:
        """Step 1: commit every chunked file, each in one transaction, its chunks listed as awaiting vectors
        unless a vector of the same content is stored already (copied under the new id). Returns the files
        committed; a cancel stops between files (those not reached stay at their old version)."""
        self.files_total = len(pending)
        self.step1_files = self.files_chunked + len(pending)  # what was left to commit once chunked
        self.new_paths = {p.record.path for p in pending} - self.known_paths
        for number, item in enumerate(pending, 1):
            if self.cancel.is_set():
                break
            try:
                awaiting = self._reuse_vectors(item)
                stale = self.index.catalog().commit_file(item.record, item.chunks, item.uses, awaiting)
                self.index.store().delete(stale)
            except Exception as error:
                if store_down(error):
                    raise
                log.warning("%s could not be stored", item.record.path, exc_info=True)
                self.failed.append(SkippedFile(item.record.path, f"could not be stored: {short_reason(error)}"))
                continue
            self.files_committed += 1
            self.files_added += item.record.path in self.new_paths
            if number % 50 == 0 or number == len(pending):
                self._emit("chunking", number, len(pending), message="names, files, keywords and references")
        return self.files_committed

    def _reuse_vectors(self, item: Pending) -> list[str]:
        """The ids of a file's new chunks that need a vector made. A chunk whose id is unchanged keeps its
        stored vector; one whose content the file had before (moved lines) gets that vector under its new id."""
        if self.everything or item.record.path not in self.known_paths:
            return [c.id for c in item.chunks]
        catalog = self.index.catalog()
        waiting = {c.id for c in catalog.awaiting_chunks(item.record.path)}
        old = {(c.path, c.content_hash[:HASH_CHARS]): c.id for c in catalog.chunks(path=item.record.path)
               if c.id not in waiting}
        stored = self.index.store().embeddings(sorted(set(old.values())))
        copied, awaiting = [], []
        for chunk in item.chunks:
            old_id = old.get((chunk.path, chunk.content_hash[:HASH_CHARS]))
            if old_id not in stored:
                awaiting.append(chunk.id)
            elif old_id != chunk.id:
                copied.append((chunk, stored[old_id]))
        if copied:  # written before the commit: a crash between leaves orphans, swept by the next run
            self.index.store().upsert([c for c, _ in copied], np.asarray([v for _, v in copied], dtype=np.float32))
        self.reused += len(copied)
        return awaiting

    def _after_first(self, plan: Plan, changed: bool, quick: bool) -> None:
        """The end of step 1: skipped files, the history and the reference counts, before any vector."""
        catalog = self.index.catalog()
        catalog.set_skipped(sorted(plan.skipped + self.failed, key=lambda s: s.path), only=plan.targeted)
        self._update_history()
        changed = changed or references_stale(catalog)
        if changed and quick:
            catalog.set_meta(references_stale="1")
            self.references_deferred = True
        elif changed and not self.cancel.is_set():
            self._emit("finalizing", 0, 0, message="counting references")
            refresh_references(self.index)
        catalog.set_meta(updated_at=now_iso())
        self.step1_seconds = time.monotonic() - (self.step1_started or self.started)

    def _embed_awaiting(self) -> int:
        """Step 2: embed the chunks awaiting vectors (this run's and any an earlier run left), the most
        useful files first, window after window; each window is stored and marked by a writer thread while
        the next one is encoded (one write in flight), so the encoder does not wait on the stores."""
        catalog = self.index.catalog()
        counts = catalog.awaiting_paths()
        commits = self.index.history_store().commits() if counts and self.index.history_state().commits else []
        order = vector_order(list(counts), commits, self.order_before)
        self.total_chunks = sum(counts.values())
        self.files_total = len(order)
        self.files_committed = 0
        self._record_run_total()
        if not order:
            return 0
        self.embed_started = time.monotonic()
        self._emit("embedding", 0, self.files_total, 0, self.total_chunks)
        writer = ThreadPoolExecutor(1, thread_name_prefix="ke-store")
        self.writer = writer
        try:
            for paths in _windows(order, counts, WINDOW_CHUNKS, self.index.asked):
                self._still_there()
                batch = [Pending(FileRecord(path, "", 0, 0, ""), catalog.awaiting_chunks(path)) for path in paths]
                if self.cancel.is_set() or not self._embed_batch([p for p in batch if p.chunks]):
                    break
                self._emit("embedding", self.files_committed, self.files_total, self.made, self.total_chunks)
            self._written()
            self._still_there()
        finally:
            self.writer = None
            self.index.asked.clear()  # asked of this run; the next one has its own
            writer.shutdown(wait=True)  # a run stopping on an error still lets the last write end first
        return self.files_committed

    def _cancelled_text(self) -> str:
        """How far a cancelled run got, for health: "full rebuild cancelled after 1,234 of 7,711 files were read
        again" (and the chunks it embedded). What it did not reach is stale (a reindex reads it), or, for a
        full rebuild, as the index had it."""
        done, planned = self.read
        kind, again = ("full rebuild", " again") if self.full_rebuild else ("index run", "")
        embedded = f" and {self.embedded:,} chunks embedded" if self.embedded else ""
        return f"{kind} cancelled after {done:,} of {planned:,} files were read{again}{embedded}"

    def _record_run_total(self) -> None:
        """The chunks the index holds at the end of this run, for "1,200 of 7,206 chunks done" (kept in the
        catalogue, so an interrupted run reopened still says it); those with vectors already count as done."""
        catalog = self.index.catalog()
        chunks = catalog.counts()[1]
        self.kept_chunks = chunks - self.total_chunks
        catalog.set_meta(run_chunks_total=str(chunks))

    def _embed_batch(self, batch: list[Pending]) -> bool:
        """Embed a window and hand it to the writer; when that fails, retry its files one by one to find
        the culprit. False when cancelled."""
        try:
            return self._embed_window(batch)
        except StageError as error:
            return self._retry(batch, error)

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
            if self.cancel.is_set():
                return False
            try:
                if not self._embed_window([item], overlap=False):
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
                self.embedder.encode(["probe"])
            else:
                self.index.store().count()
        except Exception as probe_error:
            raise self._stopped(StageError(error.stage, probe_error)) from probe_error
        self.failed.append(SkippedFile(item.record.path, f"could not be {error.stage}: {short_reason(error.error)}"))
        # its step-1 commit goes too: a file whose own text cannot be embedded is skipped, as the report says,
        # not left waiting for vectors no run can make
        self.index.store().delete(self.index.catalog().remove_file(item.record.path))

    def _stopped(self, error: StageError) -> IndexStoreError:
        component = "the embedding model" if error.stage == "embedded" else "the vector store"
        log.warning("indexing %s stopped: %s failed: %s", self.index.root, component, error.error, exc_info=error.error)
        reason = short_reason(error.error).split("; nothing was changed")[0]  # files were: they are kept
        return IndexStoreError(f"indexing stopped: {component} failed ({reason}). "
                               "Files indexed so far are kept; run it again once this is fixed.")

    def _embed_window(self, batch: list[Pending], overlap: bool = True) -> bool:
        """Embed a window of files, then store and commit it: in the writer thread (`overlap`, while the
        next window is encoded) or here. On a cancel, the files whose chunks are all embedded are still
        stored and committed; the rest stay at their old version. False then."""
        chunks = [c for p in batch for c in p.chunks]
        vectors, ready = self._vectors(batch, chunks)
        complete, position = [], 0
        for item in batch:
            span = range(position, position + len(item.chunks))
            position = span.stop
            if all(i in ready for i in span):
                complete.append((item, span))
        self.made = min(self.made + self.window_embedded, self.total_chunks)
        counts = (self.window_embedded, self.window_reused)
        self._written()  # one write in flight at a time, in window order
        if overlap and self.writer:
            self.writing = (batch, self.writer.submit(self._store_and_commit, complete, vectors, counts))
        else:
            self._store_and_commit(complete, vectors, counts)
        return len(complete) == len(batch)

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

    def _store_and_commit(self, complete: list, vectors: np.ndarray, counts: tuple[int, int]) -> None:
        """Store a window's vectors, then mark its chunks as having them (one transaction)."""
        positions = [i for _, span in complete for i in span]
        chunks = [c for item, _ in complete for c in item.chunks]
        if not chunks:
            return
        try:
            self.index.store().upsert(chunks, vectors[positions])
        except Exception as error:  # those stored so far are written again by the next run
            raise StageError("stored", error) from error
        self.index.catalog().vectors_stored([c.id for c in chunks])
        self.files_committed += len(complete)
        self.embedded += len(chunks)  # (of a window a cancel cut short, the files it finished)
        self.reused += min(counts[1], len(chunks))

    def _vectors(self, batch: list[Pending], chunks: list[Chunk]) -> tuple[np.ndarray, set[int]]:
        """The window's vectors, and the positions that have one (all but those a cancel left)."""
        vectors = np.zeros((len(chunks), self._dimension()), dtype=np.float32)
        return vectors, self._encode_into(vectors, chunks, list(range(len(chunks))))

    def _encode_into(self, vectors: np.ndarray, chunks: list[Chunk], fresh: list[int]) -> set[int]:
        """Take what the shared cache holds, then encode the rest in length-sorted slices (less padding),
        checking for a cancel between slices."""
        presampled = [i for i in fresh if chunks[i].id in self.presampled]
        if presampled:
            vectors[presampled] = self.index.project(np.stack([self.presampled.pop(chunks[i].id) for i in presampled]))
        self.window_reused = sum(chunks[i].id in self.presampled_cached for i in presampled)
        done = set(presampled)
        fresh = [i for i in fresh if i not in done]
        cached = self.vector_maker.cached([chunks[i] for i in fresh], check=self.everything)
        if cached:
            hits = [fresh[j] for j in cached]
            vectors[hits] = self.index.project(np.stack(list(cached.values())))
            done |= set(hits)
            self.window_reused += len(hits)
        self.window_embedded = len(done)
        fresh = sorted((i for i in fresh if i not in done), key=lambda i: len(chunks[i].content))
        size = self.embedder.call_size  # a cancel waits for one call: a batch for each of the encoder's lanes
        for start in range(0, len(fresh), size):
            if self.cancel.is_set():
                return done | set(fresh[:start])
            part = fresh[start:start + size]
            try:
                vectors[part] = self.index.project(self.vector_maker.encode([chunks[i] for i in part]))
            except Exception as error:
                raise StageError("embedded", error) from error
            self.window_embedded += len(part)
            self._emit("embedding", self.files_committed, self.files_total, self.made + self.window_embedded,
                       self.total_chunks)
        return done | set(fresh)

    def _update_history(self) -> None:
        """Store the commits new since the last run (services/indexing/history.py); a failure to read them is
        recorded as the history's state, never fails the run."""
        if self.cancel.is_set():
            return
        self._emit("finalizing", 0, 0, message="reading the git history")
        try:
            update_history(self.index.root, self.index.history_store())
        except Exception:  # the store could not even be opened (e.g. disk full): the history stays as it was
            log.warning("the history of %s could not be stored", self.index.root, exc_info=True)

    def _finish(self, plan: Plan, quick: bool = False) -> None:
        catalog = self.index.catalog()
        if self.failed:  # files step 2 could not embed (taken out of the index again): listed with the rest
            catalog.set_skipped(plan.skipped, only=plan.targeted)
        if self.embedded:  # health tells how many vectors the last run that needed some found in the cache
            catalog.set_meta(last_run_vectors=str(self.embedded), last_run_reused=str(self.reused),
                             cache_repair=self.vector_maker.repair_note())
        if self.embedded >= RATE_SAMPLE and self.embed_started:  # the next run's progress weighs step 2 by it
            catalog.set_meta(chunks_per_second=f"{self.embedded / (time.monotonic() - self.embed_started):.1f}")
        catalog.set_meta(updated_at=now_iso())
        if self.cancel.is_set():
            catalog.set_meta(run_cancelled=self._cancelled_text())
        if not self.cancel.is_set() or not catalog.awaiting_count():  # its end, or nothing left that a run resumes
            catalog.set_meta(run_started="", run_chunks_total="")
        catalog.compact()
        if not quick and self.embedded >= SETTLE_AFTER_VECTORS:
            self._emit("finalizing", 0, 0, message="settling the vector store")
            self.index.store().settle()
        self._emit("cancelled" if self.cancel.is_set() else "done", 0, 0)

    def _emit(self, phase: str, files_done: int, files_total: int, chunks_done: int = 0,
              chunks_total: int = 0, message: str = "") -> None:
        elapsed = max(time.monotonic() - (self.embed_started or self.started), 1e-6)
        now = self.rate_meter.add(chunks_done) if chunks_total else 0.0  # the speed of the last 30 s
        rate = now or max(chunks_done, self.embedded) / elapsed
        left = eta(now, chunks_done, chunks_total)
        if phase == "embedding" and not message:  # where the vectors are computed, for the status bar
            message = self._encoder_line()
        job = (self.kept_chunks + chunks_done, self.kept_chunks + chunks_total) if chunks_total else (0, 0)
        share, seconds_left = self.run_share(now)
        if phase in ("done", "cancelled"):
            share, seconds_left = (1.0 if phase == "done" else share), None
        event = ProgressEvent(phase, files_done, files_total, chunks_done, chunks_total, round(rate, 2),
                              left if seconds_left is None else round(seconds_left, 1), message, *job,
                              run_percent=None if share is None else int(100 * share), step=self.step())
        self.last_event = event
        self.progress(event)

    def step(self) -> int:
        """1 while files are read, chunked and committed (names, keywords, graph, history); 2 while vectors
        are made; 0 before the scan."""
        return 0 if self.step1_started is None else (1 if self.step1_seconds is None else 2)

    def run_share(self, rate_now: float) -> tuple[float | None, float | None]:
        """(the whole run's share done, seconds left), each step weighed by its measured cost: step 1 at
        the speed its files went so far, step 2's chunks at the encoder's speed (of the last 30 s, else of
        the last run, else of the encoder's timing on this machine). In step 2 the share is step 1's weight
        plus the rest times the share of the index's chunks with vectors: it never runs ahead of them, and a
        resumed run starts where the last one stopped. (None, None) before anything is counted."""
        rate = rate_now or self._rate_hint()
        if self.step1_seconds is None:
            if not self.step1_files or self.step1_started is None:
                return None, None
            done = (self.files_chunked + self.files_committed) / (2 * self.step1_files)
            spent = time.monotonic() - self.step1_started
            if done <= 0:
                return 0.0, None
            per_file = self.chunks_chunked / max(self.files_chunked, 1)
            left = spent * (1 - done) / done + (self.awaiting_before + per_file * self.step1_files) / rate
            return min(spent / (spent + left), 1.0), left
        if not self.total_chunks:
            return None, None
        if self.step1_weight is None:  # fixed as step 2 begins: the bar then moves only with vectors made
            self.step1_weight = self.step1_seconds / (self.step1_seconds + self.total_chunks / rate)
        whole = self.kept_chunks + self.total_chunks  # of the whole index: a resumed run starts where it stopped
        made = min(self.kept_chunks + self.made, whole) / whole
        return self.step1_weight + (1 - self.step1_weight) * made, max(self.total_chunks - self.made, 0) / rate

    def _rate_hint(self) -> float:
        """Chunks per second the encoder is expected to make before this run measured it."""
        try:
            recorded = float(self.index.catalog().get_meta("chunks_per_second", "0") or 0)
        except (ValueError, Exception):
            recorded = 0.0
        timed = re.search(r"(\d+) chunks/s", self.embedder.note)
        return recorded or (float(timed.group(1)) if timed else 0.0) or DEFAULT_RATE


    def _encoder_line(self) -> str:
        """Where embedding runs, for progress: "torch on cuda, fp16, batch 512" (names the device)."""
        try:
            return self.embedder.describe()
        except Exception:  # the encoder failed to load: the run reports that itself
            return ""


KEPT = "the files committed so far are kept (names, keywords, references), their vectors wait for the next run"


def _put_back_text(message: str) -> str:
    """An error's message, once the failed rebuild was undone."""
    return message.replace("Files indexed so far are kept", "The rebuild is undone: the old index is back as it was")


def refresh_references(index: WorkspaceIndex) -> None:
    """Recount references over the catalogue as it is now."""
    with _REFERENCE_COUNTS:  # an index run and a deferred refresh count one at a time
        catalog = index.catalog()
        catalog.set_meta(references_stale="", keywords_stale="")  # a quick run committing after this sets it again
        catalog.set_references(reference_counts(catalog.chunk_batches()))


def references_stale(catalog) -> bool:
    """A quick run left the recount to a deferred refresh that has not run (keywords_stale: before the
    keyword table, the same flag)."""
    return "1" in (catalog.get_meta("references_stale"), catalog.get_meta("keywords_stale"))


def _windows(order: list[str], counts: dict[str, int], size: int, asked: set[str] | None = None):
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
