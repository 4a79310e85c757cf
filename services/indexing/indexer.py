"""Incremental indexing of one workspace: scan, chunk, embed only what changed, store, commit per file.

Runs synchronously (the service calls it in a worker thread). Cancellation is checked between
batches; every batch ends with its files committed, so a cancelled or crashed run leaves a
consistent index and the next run resumes where it stopped.

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
from dataclasses import dataclass, field
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
from services.indexing import integrity
from services.indexing.rate import RateMeter, eta
from services.core.models import Chunk, IndexReport, ProgressEvent, SkippedFile, count_by_reason, nothing_to_index
from services.storage.projection import Projection, sample_positions
from services.storage.vector_cache import VectorCache
from services.indexing.preparing import Prepared, file_graph, prepare, prepared, short_reason
from services.indexing.scanning import SourceFile, read_source, scan_paths, scan_workspace
from services.indexing.vectors import VectorMaker
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex

WINDOW_CHUNKS = 1024  # files are committed a window at a time; a window is encoded shortest first
FIRST_WINDOW_CHUNKS = 32
# Chroma's first write after a bulk load waits on work the load left (1.06 s at 38k chunks, measured): a
# run that stored this many vectors pays it at its end, not the user's next edit (benchmarks/experiments/README.md).
SETTLE_AFTER_VECTORS = 1000
# Reasons that mean a file failed (as opposed to being skipped by policy, like "binary file").
FAILURE_REASONS = ("unreadable", "could not be read", "could not be chunked", "could not be embedded",
                   "could not be stored")

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
class Plan:
    """What a run has to do, worked out from the scan and the catalogue."""

    changed: list[SourceFile] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    known: dict[str, FileRecord] = field(default_factory=dict)  # the catalogue's records the plan looked at
    targeted: set[str] | None = None  # the paths a watcher's run looked at; None: the whole workspace


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
        self.files_removed = 0  # files this run took out of the index (with files_committed: what it changed)
        self.kept_chunks = 0  # chunks of the index this run keeps as they are (whole-job progress counts them done)
        self.new_paths: set[str] = set()  # pending files the index did not hold
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
        if rebuilt_reason and (not full or old_format) and self.index.exists():  # an incompatible index
            self._set_aside()
        self._start_catalog()
        self._fill_graph()
        if self.found.keywords:  # the keyword table disagrees with the catalogue: fill it again from it
            self.index.catalog().refill_keywords()
        if not quick:
            self._sweep_orphans()
        plan = self._plan()
        self._remove(plan.removed)
        pending = self._chunk(plan)
        try:
            self._keywords_first(pending, quick)
            self._fit_projection(pending)
            done = self._embed_and_commit(pending)
        finally:
            self.index.keywords.forget()  # the provisional table lists chunks that are committed now, or never
            self.index.pending = {}  # from here on, only what the catalogue lists
        plan.skipped = sorted(plan.skipped + self.failed, key=lambda s: s.path)
        self._update_history()
        self._finish(plan, bool(plan.removed) or done > 0 or bool(rebuilt_reason), quick)
        files, chunks = self.index.catalog().counts()
        self._note_repairs()
        self._drop_aside()
        return IndexReport(
            files_indexed=done, files_unchanged=len(plan.unchanged), files_removed=len(plan.removed),
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
        catalog.set_meta(run_started=catalog.get_meta("run_started") or now_iso())
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

    def _fit_projection(self, pending: list[Pending]) -> None:
        """A new index of many chunks stores fewer dimensions: fit a projection on a sample of its own
        chunks before the first vector is stored (services/storage/projection.py). The sample's vectors are kept
        for their windows. A cancel before the fit leaves no projection, and nothing stored."""
        chunks = [c for p in pending for c in p.chunks]
        wanted = self.settings.vector_dimensions
        if (not wanted or wanted >= self.embedder.dimension or len(chunks) < self.settings.reduce_from_chunks
                or self.index.projection() or self.index.catalog().counts()[1]):
            return
        sample = sorted((chunks[i] for i in sample_positions(len(chunks), self.settings.projection_sample)),
                        key=lambda c: len(c.content))  # similar lengths pad less
        if len(sample) < 2 * wanted:  # too few to find that many directions
            return
        vectors = np.zeros((len(sample), self.embedder.dimension), dtype=np.float32)
        self._emit("embedding", 0, len(pending), 0, len(chunks),
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
        self._emit("scanning", 0, 0)
        return self._plan_paths() or self._plan_all()

    def _plan_all(self) -> Plan:
        catalog = self.index.catalog()
        known = catalog.files()
        scan = scan_workspace(self.index.root, self.settings.max_file_bytes, self.settings.skip_machine_made,
                              known=None if self.everything else known)
        catalog.set_meta(symlinks="1" if scan.symlinks else "0")
        return self._plan_from(scan, known)

    def _plan_paths(self) -> Plan | None:
        """The plan for the paths a watcher reported, from them alone (no walk over the tree); None when
        a whole scan is needed: no paths given, a rebuild, symlinks in the tree (an edit to a link's target
        is reported under the target's path only), or scan_paths says so."""
        catalog = self.index.catalog()
        if self.paths is None or self.everything or catalog.get_meta("symlinks") != "0":
            return None
        scan = scan_paths(self.index.root, self.paths, self.settings.max_file_bytes, self.settings.skip_machine_made)
        if scan is None:
            return None
        known = catalog.files(self.paths)
        for path in self.paths:  # a folder deleted, moved away or replaced by a file: the files it held
            known.update(catalog.files_under(path))
        plan = self._plan_from(scan, known)
        plan.targeted = self.paths | known.keys()
        return plan

    def _plan_from(self, scan, known: dict[str, FileRecord]) -> Plan:
        """Changed, unchanged and removed files: the scan's files against the catalogue's `known` records."""
        plan = Plan(skipped=list(scan.skipped), known=known)
        for source in scan.files:
            record = known.get(source.path)
            if (record and not self.everything and source.path not in self.found.repair_paths
                    and (record.size, record.mtime_ns) == (source.size, source.mtime_ns)):
                plan.unchanged.append(source.path)
            else:
                plan.changed.append(source)
        unlisted = set(known) - {source.path for source in scan.files}
        plan.removed = self._gone(sorted(path for path in unlisted if not _unreadable_at(path, scan.skipped)),
                                  scan.skipped)
        return plan

    def _gone(self, paths: list[str], skipped: Iterable[SkippedFile] = ()) -> list[str]:
        """The files positively gone: the workspace folder is there and the file is not, or it is there and
        no longer indexable (asked again, or skipped by the scan for a reason that is no failure: a file
        replaced by a symlink leading out of the workspace). A folder renamed away (or unmounted) during
        the scan is no evidence: nothing is removed then."""
        root = self.index.root
        if not paths or not root.is_dir():
            return []
        there = [path for path in paths if os.path.lexists(root / path)]
        if not there:
            return paths
        unindexable = self._no_longer_indexable(there)  # all at once (a new ignore rule may drop thousands)
        if unindexable is None:  # one needs a whole scan: ask path by path; the scan's own verdict for those (None)
            by_policy = {s.path for s in skipped if s.category not in FAILURE_REASONS}
            unindexable = {path for path in there if path in by_policy or self._no_longer_indexable([path])}
        return [path for path in paths if path not in there or path in unindexable]

    def _no_longer_indexable(self, paths: list[str]) -> set[str] | None:
        """Of catalogued files still there that the scan did not list, asked again: those now a folder,
        ignored, too large, binary or machine-made (one that cannot be read is kept). None when only a
        whole scan could tell for one of them."""
        folders = {path for path in paths if (self.index.root / path).is_dir()}  # the files inside count on their own
        verdict = scan_paths(self.index.root, [path for path in paths if path not in folders],
                             self.settings.max_file_bytes, self.settings.skip_machine_made)
        if verdict is None:
            return None
        kept = {f.path for f in verdict.files} | {s.path for s in verdict.skipped if s.category in FAILURE_REASONS}
        return folders | (set(paths) - folders - kept)

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

    def _keywords_first(self, pending: list[Pending], quick: bool) -> bool:
        """Make keyword search answer over every chunked file at once, while embedding goes on: a
        provisional in-memory keyword table over the new chunks, searched beside the catalogue's
        (which leaves out the files being replaced). Queries find a new chunk in `index.pending` until
        its file is committed; it has no vector score until then. The run forgets the table at its end.
        A big run does it, and a watcher's run whatever its size: an edit is keyword-searchable before
        its vectors are stored."""
        if not pending or (not quick and sum(len(p.chunks) for p in pending) < self.settings.early_keyword_min_chunks):
            return False
        self._emit("chunking", len(pending), len(pending), message="keyword index first, then embedding")
        self.index.pending = {c.id: c for p in pending for c in p.chunks}
        self.index.keywords.stage(list(self.index.pending.values()))
        return True

    def _embed_and_commit(self, pending: list[Pending]) -> int:
        """Embed window after window; each window is stored and committed by a writer thread while the
        next one is encoded (one write in flight), so the encoder does not wait on the stores."""
        self.total_chunks = sum(len(p.chunks) for p in pending)
        self.files_total = len(pending)
        self._record_run_total(pending)
        self.embed_started = time.monotonic()
        self._emit("embedding", 0, self.files_total, 0, self.total_chunks)
        writer = ThreadPoolExecutor(1, thread_name_prefix="ke-store")
        self.writer = writer
        try:
            for batch in _batches(pending, WINDOW_CHUNKS):
                if self.cancel.is_set() or not self._embed_batch(batch):
                    break
                self._emit("embedding", self.files_committed, self.files_total, self.made, self.total_chunks)
            self._written()
        finally:
            self.writer = None
            writer.shutdown(wait=True)  # a run stopping on an error still lets the last write end first
        return self.files_committed

    def _record_run_total(self, pending: list[Pending]) -> None:
        """The chunks the index will hold at the end of this run, for "1,200 of 7,206 chunks done"
        (kept in the catalogue, so an interrupted run reopened still says it)."""
        catalog = self.index.catalog()
        known = catalog.files([p.record.path for p in pending])
        self.new_paths = {p.record.path for p in pending} - set(known)
        replaced = sum(len(catalog.chunks(path=p.record.path)) for p in pending if p.record.path in known)
        self.kept_chunks = catalog.counts()[1] - replaced
        catalog.set_meta(run_chunks_total=str(self.kept_chunks + self.total_chunks))

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
        for chunk in item.chunks:
            self.index.pending.pop(chunk.id, None)
        self.failed.append(SkippedFile(item.record.path, f"could not be {error.stage}: {short_reason(error.error)}"))

    def _stopped(self, error: StageError) -> IndexStoreError:
        component = "the embedding model" if error.stage == "embedded" else "the vector store"
        log.warning("indexing %s stopped: %s failed: %s", self.index.root, component, error.error, exc_info=error.error)
        return IndexStoreError(f"indexing stopped: {component} failed ({short_reason(error.error)}). "
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
        positions = [i for _, span in complete for i in span]
        chunks = [c for item, _ in complete for c in item.chunks]
        try:
            self.index.store().upsert(chunks, vectors[positions])
        except Exception as error:  # vectors written so far are orphans, swept by the next run
            raise StageError("stored", error) from error
        for item, _ in complete:  # commit: from here on readers see the new version of each file
            stale = self.index.catalog().commit_file(item.record, item.chunks, item.uses)
            self.index.store().delete(stale)
            for chunk in item.chunks:
                self.index.pending.pop(chunk.id, None)
        self.files_committed += len(complete)
        self.files_added += sum(item.record.path in self.new_paths for item, _ in complete)
        self.embedded += counts[0]
        self.reused += counts[1]

    def _vectors(self, batch: list[Pending], chunks: list[Chunk]) -> tuple[np.ndarray, set[int]]:
        """Embed only chunks whose content is new; reuse stored vectors for the others.
        Returns the vectors and the positions that have one."""
        reusable = {} if self.everything else self._reusable_ids(batch)
        try:
            stored = self.index.store().embeddings(sorted(set(reusable.values())))
        except Exception as error:
            raise StageError("stored", error) from error
        vectors = np.zeros((len(chunks), self._dimension()), dtype=np.float32)
        fresh, ready = [], set()
        for position, chunk in enumerate(chunks):
            old_id = reusable.get((chunk.path, chunk.content_hash[:HASH_CHARS]))
            if old_id in stored:
                vectors[position] = stored[old_id]
                ready.add(position)
            else:
                fresh.append(position)
        ready |= self._encode_into(vectors, chunks, fresh)
        return vectors, ready

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

    def _reusable_ids(self, batch: list[Pending]) -> dict[tuple[str, str], str]:
        catalog = self.index.catalog()
        return {(c.path, c.content_hash[:HASH_CHARS]): c.id for item in batch for c in catalog.chunks(path=item.record.path)}

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

    def _finish(self, plan: Plan, changed: bool, quick: bool = False) -> None:
        catalog = self.index.catalog()
        catalog.set_skipped(plan.skipped, only=plan.targeted)  # a watcher's run reports its paths' alone
        if self.embedded:  # health tells how many vectors the last run that needed some found in the cache
            catalog.set_meta(last_run_vectors=str(self.embedded), last_run_reused=str(self.reused),
                             cache_repair=self.vector_maker.repair_note())
        changed = changed or references_stale(catalog)
        if changed and quick:
            catalog.set_meta(references_stale="1")
            self.references_deferred = True
        elif changed:
            self._emit("finalizing", 0, 0, message="counting references")
            refresh_references(self.index)
        catalog.set_meta(updated_at=now_iso())
        if not self.cancel.is_set():  # it reached its end: nothing to resume
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
        event = ProgressEvent(phase, files_done, files_total, chunks_done, chunks_total, round(rate, 2), left, message,
                              *job)
        self.last_event = event
        self.progress(event)

    def _encoder_line(self) -> str:
        """Where embedding runs, for progress: "torch on cuda, fp16, batch 512" (names the device)."""
        describe = getattr(self.embedder, "describe", None)
        try:
            return describe() if describe else ""
        except Exception:  # the encoder failed to load: the run reports that itself
            return ""


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


def _unreadable_at(path: str, skipped: list[SkippedFile]) -> bool:
    """Whether the scan could not read this file or a folder holding it (then it may well still exist)."""
    return any(s.reason.startswith("unreadable") and (path == s.path or path.startswith(s.path.rstrip("/") + "/")
                                                      or s.path == ".") for s in skipped)


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
