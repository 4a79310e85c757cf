"""Index health: what is indexed, and which files changed since (new, modified, deleted)."""

from __future__ import annotations

import logging
import sqlite3

from services.core import files
from services.core.models import IndexHealth, StaleFile, nothing_to_index, run_progress_text
from services.indexing import integrity
from services.indexing.scanning import UnreadableRoot, file_hash, scan_workspace
from services.core.settings import Settings
from services.storage import faults
from services.storage.vector_store import unavailable_text
from services.storage.workspace_index import WorkspaceIndex

log = logging.getLogger(__name__)


def stale_files(index: WorkspaceIndex, settings: Settings) -> list[StaleFile]:
    """Files changed since they were indexed."""
    known = index.catalog().files()
    skipped = {s.path for s in index.catalog().skipped()}
    scan = scan_workspace(index.root, settings.max_file_bytes, settings.skip_machine_made, known=known)
    stale, seen = [], set()
    for source in scan.files:
        seen.add(source.path)
        record = known.get(source.path)
        if record is None:
            if source.path not in skipped:
                stale.append(StaleFile(source.path, "new"))
        elif (record.size, record.mtime_ns) != (source.size, source.mtime_ns) and _hash(source, settings.max_file_bytes) != record.file_hash:
            stale.append(StaleFile(source.path, "modified"))
    stale.extend(StaleFile(path, "deleted") for path in sorted(set(known) - seen))
    return sorted(stale, key=lambda s: s.path)


def _hash(source, limit: int) -> str:
    try:
        return file_hash(files.read_bytes(source.abs_path, limit))
    except OSError:
        return ""


def checked(index: WorkspaceIndex) -> integrity.Integrity:
    """The index's integrity, checked when it is first opened and again after each run or store error
    (and on every look while it cannot be read: that passes)."""
    if index.integrity is None or index.integrity.unavailable:
        found = integrity.check(index)
        index.integrity = found
    return index.integrity


def unavailable(index: WorkspaceIndex, message: str, last_error: str = "") -> IndexHealth:
    """An index that cannot be read now (a full disk, no file handle, a lock): not damaged, nothing to
    repair; it is whole again once that passes."""
    return IndexHealth(workspace=str(index.root), indexed=True, state="unavailable", message=message,
                       last_error=last_error if last_error != message else "")


def folder_missing(root) -> str:
    return (f"the workspace folder {root} is missing (moved, renamed or deleted): nothing is indexed or "
            "deleted until it is back")


def index_health(index: WorkspaceIndex, settings: Settings, last_error: str = "") -> IndexHealth:
    try:
        return _index_health(index, settings, last_error)
    except (sqlite3.Error, OSError) as error:
        if not faults.transient(error):
            raise
        log.warning("the index of %s cannot be read now", index.root, exc_info=True)
        return unavailable(index, unavailable_text("the index", error), last_error)


def _index_health(index: WorkspaceIndex, settings: Settings, last_error: str) -> IndexHealth:
    if not index.exists():
        if not index.root.is_dir():
            return IndexHealth(workspace=str(index.root), indexed=False, last_error=last_error,
                               state="folder-missing", message=folder_missing(index.root))
        if index.run is not None:  # a first index, before its catalogue is written (e.g. preparing the model)
            event = index.run.last_event
            return IndexHealth(workspace=str(index.root), indexed=False, state="indexing",
                               message=f"indexing: {(event.message or event.phase) if event else 'starting'}")
        return IndexHealth(workspace=str(index.root), indexed=False, last_error=last_error,
                           state="error" if last_error else "missing",
                           message=last_error or "not indexed: index it to search it")
    found = checked(index)
    if found.unavailable:
        return unavailable(index, found.unavailable, last_error)
    if found.catalog_unreadable:
        return IndexHealth(workspace=str(index.root), indexed=True, needs_reindex=True, state="damaged",
                           message=found.message(), last_error=last_error, size_bytes=index.size_bytes())
    catalog = index.catalog()
    files, chunks = catalog.counts()
    with_vectors = chunks - catalog.awaiting.awaiting_count()  # the rest await the vectors a run makes
    embedded = with_vectors - found.missing_vectors if not found.unreadable else 0
    gone = not index.root.is_dir()
    try:
        stale = [] if gone or index.run is not None else stale_files(index, settings)  # (a run is catching up)
    except UnreadableRoot as error:  # nothing known about its files: none is stale, none deleted
        stale, last_error = [], last_error or f"{error}; its index is left as it is"
    skipped = catalog.skipped()
    last_error = last_error or catalog.get_meta("last_error")
    run = run_state(index)
    cancelled = catalog.get_meta("run_cancelled")
    # the spec's flag: many files changed (a normal run catches up; no state below offers a full rebuild)
    needs_reindex = (len(stale) > settings.stale_ratio_for_reindex * files and not run) or found.damaged
    state, message = _state(files, len(skipped), stale, needs_reindex)
    if state == "ready" and not catalog.graph.graph_ready():  # an index from before the graph: search is whole
        message += "; find references needs one more index run (it adds the code graph, nothing is re-embedded)"
    run_done, run_total = (with_vectors, int(catalog.get_meta("run_chunks_total", "0") or 0)) if run else (0, 0)
    if gone:
        state, message = "folder-missing", folder_missing(index.root) + f"; its index of {files:,} files is kept"
    elif run in ("indexing", "resuming", "cancelling"):
        state, message = run, _run_message(index, run, run_done, run_total)
    elif found.damaged:
        state, message = "damaged", found.message()
    elif last_error:  # the last run stopped: what it did not reach is missing
        state, message = "failed", f"the last index run failed: {last_error}"
    elif run == "interrupted":
        stopped = f"the last {cancelled}, at" if cancelled else "the last index run stopped at"
        state, message = run, (f"{stopped} {run_progress_text(run_done, run_total)}: "
                               "a reindex resumes it (what was committed is kept)")
    elif cancelled:  # it left nothing to resume: what it did not reach is stale, or as the index had it
        message += f"; the last {cancelled}"
    return IndexHealth(
        workspace=str(index.root), indexed=True, files=files, chunks=chunks, chunks_embedded=embedded,
        languages=catalog.languages(), stale_files=tuple(stale),
        needs_reindex=needs_reindex, skipped=tuple(skipped),
        skipped_by_reason=catalog.skipped_by_reason(), state=state, message=message,
        model=catalog.get_meta("model"),
        dimension=int(catalog.get_meta("dimension", "0") or 0), vectors=catalog.get_meta("projection"),
        created_at=catalog.get_meta("created_at"), updated_at=catalog.get_meta("updated_at"),
        size_bytes=index.size_bytes(), last_error=last_error,
        backend=catalog.backend(), device=catalog.get_meta("device", "cpu"),
        encoder_note=catalog.get_meta("encoder_note"), run_chunks_done=run_done, run_chunks_total=run_total,
        run_cancelled=cancelled,
        **_history(index),
        last_run_vectors=int(catalog.get_meta("last_run_vectors", "0") or 0),
        last_run_reused=int(catalog.get_meta("last_run_reused", "0") or 0),
        vector_cache=cache_text(settings.share_vectors, catalog.get_meta("cache_repair")),
    )


def cache_text(shared: bool, repair: str) -> str:
    """The shared vector cache's line in health: off, on, or what the last run repaired in it."""
    if not shared:
        return "off (share_vectors is off: every chunk is embedded)"
    return f"on; the last run that embedded found it {repair}" if repair else "on"


def run_state(index: WorkspaceIndex) -> str:
    """"indexing", "resuming" or "cancelling" while a run is under way here; "interrupted" when the last
    run stopped before its end (a cancel, a crash, a killed process); "" otherwise."""
    run = index.run
    if run is not None:
        return "cancelling" if run.cancel.is_set() else ("resuming" if run.resuming else "indexing")
    return "interrupted" if index.catalog().get_meta("run_started") else ""


def _run_message(index: WorkspaceIndex, state: str, done: int, total: int) -> str:
    event = index.run.last_event if index.run is not None else None
    if state == "cancelling":
        return f"cancelling: stops after the files being embedded ({run_progress_text(done, total)})"
    if event is not None and event.phase in ("preparing", "scanning", "chunking", "finalizing"):
        detail = event.message or event.phase
        return f"{state}: {detail}" + (f" ({run_progress_text(done, total)})" if total else "")
    return f"{state}: {run_progress_text(done, total)}"


def committing_note(index: WorkspaceIndex) -> str:
    """What a go-to or references answer stands on while step 1 of a run that fills the index (a first index, a
    rebuild, a resumed run) commits files ("" otherwise): the names, paths and references of the files not yet
    committed are not in it (after step 1 they are whole; an index run over a whole index keeps the old versions)."""
    run = index.run
    if run is None or not run.fills or run.step1_seconds is not None:
        return ""
    if not run.files_total:
        return "An index run is reading the workspace: its files are not in this answer yet."
    return (f"An index run is committing files: {run.files_committed:,} of {run.files_total:,} so far; "
            "the rest are not in this answer yet.")


def _history(index: WorkspaceIndex) -> dict:
    try:
        history = index.history_state()
    except (sqlite3.Error, OSError) as error:  # proven damage is repaired as it opens: this one passes
        return dict(history=f"cannot be read now ({' '.join(str(error).split())}): nothing was changed")
    return dict(history=history.describe(), history_state=history.state, history_commits=history.commits,
                history_until=history.until)


def _state(files: int, skipped: int, stale: list[StaleFile], needs_reindex: bool) -> tuple[str, str]:
    """("empty" | "stale" | "ready", a line to show)."""
    if not files and not stale:
        return "empty", nothing_to_index(skipped)
    if stale:
        return "stale", f"{len(stale)} files changed since the last index" + (
            ": reindex recommended" if needs_reindex else "")
    return "ready", f"{files} files indexed" + (f", {skipped} skipped" if skipped else "")
