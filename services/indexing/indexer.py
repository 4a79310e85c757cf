"""Incremental indexing of one workspace: scan, chunk, commit, then embed, in two durable steps.

Step 1 commits every changed file with all that needs no encoder (chunks, names, paths, keywords, file
words, the code graph; then the history and the reference counts), each new chunk listed in the catalogue
as awaiting its vector: go to symbol / file, references, keyword and file answers then cover the whole
workspace. Step 2 embeds the chunks awaiting vectors, the most useful files first (vector_order.py),
stores them and marks them, window by window. A kill at any moment leaves each file fully old or fully
new; chunks still awaiting vectors are what the next run (or the engine's automatic one) embeds first.

Here: the run, step 1 and its end. Its parts: the plan (planning.py), step 2 (vector_step.py), the progress
events (run_progress.py). Runs synchronously (the service calls it in a worker thread). Cancellation is
checked between files in step 1 and between encoder calls in step 2.

Faults are isolated per file: a file that cannot be read, chunked, embedded or stored is listed
under `skipped` with the reason and the run goes on. A failure of the store or the model itself
(it fails for a lone probe too, or for every file of a window) stops the run with IndexStoreError.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
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
from services.core.models import Chunk, IndexReport, ProgressEvent, SkippedFile, count_by_reason, nothing_to_index
from services.storage.vector_cache import VectorCache
from services.indexing.preparing import Prepared, file_graph, prepare, prepared, short_reason
from services.indexing.scanning import SourceFile, read_source, scan_workspace
from services.indexing.planning import FAILURE_REASONS, Plan, Planner
from services.indexing.run_progress import RunProgress
from services.indexing.vector_step import Pending, VectorStep, store_down
from services.indexing.vectors import VectorMaker
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex

# Chroma's first write after a bulk load waits on work the load left (1.06 s at 38k chunks, measured): a
# run that stored this many vectors pays it at its end, not the user's next edit (benchmarks/experiments/README.md).
SETTLE_AFTER_VECTORS = 1000
RATE_SAMPLE = 100  # vectors a run makes before its speed is kept for the next run's progress

log = logging.getLogger(__name__)
_REFERENCE_COUNTS = threading.Lock()


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


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
        self.everything = False  # a full rebuild re-embeds every file, replacing each in place
        self.reused = 0  # vectors taken from the shared cache instead of the encoder
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
        self.step1_files = self.files_chunked = self.chunks_chunked = 0
        self.awaiting_before = 0  # chunks an earlier run left without vectors
        self.files_added = 0
        self.failed: list[SkippedFile] = []  # files whose embedding or storing failed
        self.references_deferred = False  # a quick run leaves the reference counts to refresh_references()
        self.found = integrity.SOUND  # what the integrity check at the start of the run found
        self.repaired: list[str] = []  # what the run repaired, to tell the user
        self.resuming = False  # the last run stopped before its end: this one continues it
        self.fills = not index.exists()  # step 1 adds files the index lacks (a first index, a rebuild, a resume)
        self.last_event: ProgressEvent | None = None  # what health says while the run is under way
        self.moved_aside = False  # this run moved the old index aside to rebuild (put back if it fails)
        self.step_two = VectorStep(self)  # step 2: the vectors of the chunks that wait for them
        self.meter = RunProgress(self)  # the run's progress events: one percentage, the step, an honest ETA

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
            self.meter.emit("cancelled", 0, 0)
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
            self.index.catalog().keywords.refill_keywords()
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
            self.step_two.fit_projection()
            self.step_two.embed_awaiting()
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
            chunks_embedded=self.step_two.embedded, chunks_total=chunks, vectors_reused=self.reused,
            files_added=self.files_added,
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
        self.meter.emit("preparing", 0, 0, message="measuring which encoder runs fastest on this machine (once, "
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
            self.meter.emit("preparing", 0, 0, message=f"preparing the embedding model ({self.embedder.backend}; "
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
        self.fills = self.resuming or not catalog.counts()[0]
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
        if catalog.graph.graph_ready():
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
                catalog.graph.set_graph_uses(record.path, digest, file_graph(record.path, text, record.language))
            if number % 200 == 0:
                self.meter.emit("chunking", number, len(records), message="adding the code graph (no re-embedding)")
        catalog.set_meta(graph=GRAPH_VERSION)

    def _dimension(self) -> int:
        """Of the vectors this index stores."""
        projection = self.index.projection()
        return projection.dimensions[1] if projection else self.embedder.dimension

    def _sweep_orphans(self) -> None:
        """Vectors left by a crash between writing vectors and committing their file."""
        self.index.store().sweep(self.index.catalog().chunk_ids())

    def _plan(self) -> Plan:
        self.step1_started = time.monotonic()
        self.awaiting_before = self.index.catalog().awaiting.awaiting_count()
        self.meter.emit("scanning", 0, 0)
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
            if number % 50 == 0 or number == 1:  # (the first at once: the step's name is no longer "scanning")
                self.meter.emit("chunking", number, len(plan.changed))
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
            if number % 50 == 0 or number in (1, len(pending)):
                self.meter.emit("chunking", number, len(pending), message="names, files, keywords and references")
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
            self.meter.emit("finalizing", 0, 0, message="counting references")
            refresh_references(self.index)
        catalog.set_meta(updated_at=now_iso())
        self.step1_seconds = time.monotonic() - (self.step1_started or self.started)

    def _cancelled_text(self) -> str:
        """How far a cancelled run got, for health: "full rebuild cancelled after 1,234 of 7,711 files were read
        again" (and the chunks it embedded). What it did not reach is stale (a reindex reads it), or, for a
        full rebuild, as the index had it."""
        done, planned = self.read
        kind, again = ("full rebuild", " again") if self.full_rebuild else ("index run", "")
        embedded = self.step_two.embedded
        embedded_text = f" and {embedded:,} chunks embedded" if embedded else ""
        return f"{kind} cancelled after {done:,} of {planned:,} files were read{again}{embedded_text}"

    def _update_history(self) -> None:
        """Store the commits new since the last run (services/indexing/history.py); a failure to read them is
        recorded as the history's state, never fails the run."""
        if self.cancel.is_set():
            return
        self.meter.emit("finalizing", 0, 0, message="reading the git history")
        try:
            update_history(self.index.root, self.index.history_store())
        except Exception:  # the store could not even be opened (e.g. disk full): the history stays as it was
            log.warning("the history of %s could not be stored", self.index.root, exc_info=True)

    def _finish(self, plan: Plan, quick: bool = False) -> None:
        catalog = self.index.catalog()
        if self.failed:  # files step 2 could not embed (taken out of the index again): listed with the rest
            catalog.set_skipped(plan.skipped, only=plan.targeted)
        embedded, started = self.step_two.embedded, self.step_two.started
        if embedded:  # health tells how many vectors the last run that needed some found in the cache
            catalog.set_meta(last_run_vectors=str(embedded), last_run_reused=str(self.reused),
                             cache_repair=self.vector_maker.repair_note())
        if embedded >= RATE_SAMPLE and started:  # the next run's progress weighs step 2 by it
            catalog.set_meta(chunks_per_second=f"{embedded / (time.monotonic() - started):.1f}")
        catalog.set_meta(updated_at=now_iso())
        if self.cancel.is_set():
            catalog.set_meta(run_cancelled=self._cancelled_text())
        if not self.cancel.is_set() or not catalog.awaiting.awaiting_count():  # its end, or nothing left to resume
            catalog.set_meta(run_started="", run_chunks_total="")
        catalog.compact()
        if not quick and embedded >= SETTLE_AFTER_VECTORS:
            self.meter.emit("finalizing", 0, 0, message="settling the vector store")
            self.index.store().settle()
        self.meter.emit("cancelled" if self.cancel.is_set() else "done", 0, 0)

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


