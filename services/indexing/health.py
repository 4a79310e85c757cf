"""Index health: what is indexed, and which files changed since (new, modified, deleted)."""

from __future__ import annotations

from services.core.models import IndexHealth, StaleFile, nothing_to_index
from services.indexing import integrity
from services.indexing.scanning import UnreadableRoot, file_hash, scan_workspace
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex


def stale_files(index: WorkspaceIndex, settings: Settings) -> list[StaleFile]:
    known = index.catalog().files()
    skipped = {s.path for s in index.catalog().skipped()}
    scan = scan_workspace(index.root, settings.max_file_bytes, settings.skip_machine_made)
    stale, seen = [], set()
    for source in scan.files:
        seen.add(source.path)
        record = known.get(source.path)
        if record is None:
            if source.path not in skipped:
                stale.append(StaleFile(source.path, "new"))
        elif (record.size, record.mtime_ns) != (source.size, source.mtime_ns) and _hash(source) != record.file_hash:
            stale.append(StaleFile(source.path, "modified"))
    stale.extend(StaleFile(path, "deleted") for path in sorted(set(known) - seen))
    return sorted(stale, key=lambda s: s.path)


def _hash(source) -> str:
    try:
        return file_hash(source.abs_path.read_bytes())
    except OSError:
        return ""


def checked(index: WorkspaceIndex) -> integrity.Integrity:
    """The index's integrity, checked when it is first opened and again after each run or store error."""
    if index.integrity is None:
        index.integrity = integrity.check(index)
    return index.integrity


def index_health(index: WorkspaceIndex, settings: Settings, last_error: str = "") -> IndexHealth:
    if not index.exists():
        return IndexHealth(workspace=str(index.root), indexed=False, last_error=last_error,
                           state="missing", message="not indexed")
    found = checked(index)
    if found.catalog_unreadable:
        return IndexHealth(workspace=str(index.root), indexed=True, needs_reindex=True, state="damaged",
                           message=found.message(), last_error=last_error, size_bytes=index.size_bytes())
    catalog = index.catalog()
    files, committed = catalog.counts()
    embedded = committed - found.missing_vectors if not found.unreadable else 0
    chunks = committed + len(index.pending)  # chunked and keyword-searchable, vectors on the way
    try:
        stale = stale_files(index, settings)
    except UnreadableRoot as error:  # nothing known about its files: none is stale, none deleted
        stale, last_error = [], last_error or f"{error}; its index is left as it is"
    skipped = catalog.skipped()
    last_error = last_error or catalog.get_meta("last_error")
    needs_reindex = len(stale) > settings.stale_ratio_for_reindex * files or found.damaged
    state, message = _state(files, len(skipped), stale, needs_reindex)
    if found.damaged:
        state, message = "damaged", found.message()
    elif last_error:  # the last run stopped: what it did not reach is missing
        state, message = "failed", f"the last index run failed: {last_error}"
    return IndexHealth(
        workspace=str(index.root), indexed=True, files=files, chunks=chunks, chunks_embedded=embedded,
        languages=catalog.languages(), stale_files=tuple(stale),
        needs_reindex=needs_reindex, skipped=tuple(skipped),
        skipped_by_reason=catalog.skipped_by_reason(), state=state, message=message,
        model=catalog.get_meta("model"),
        dimension=int(catalog.get_meta("dimension", "0") or 0), vectors=catalog.get_meta("projection"),
        created_at=catalog.get_meta("created_at"), updated_at=catalog.get_meta("updated_at"),
        size_bytes=index.size_bytes(), last_error=last_error,
        backend=catalog.get_meta("backend", "torch"), device=catalog.get_meta("device", "cpu"),
        encoder_note=catalog.get_meta("encoder_note"), **_history(index),
        last_run_vectors=int(catalog.get_meta("last_run_vectors", "0") or 0),
        last_run_reused=int(catalog.get_meta("last_run_reused", "0") or 0),
    )


def _history(index: WorkspaceIndex) -> dict:
    history = index.history_state()
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
