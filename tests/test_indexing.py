"""The indexing engine on real parts: the bundled model, embedded ChromaDB, the sample workspace."""

from __future__ import annotations

import shutil
import threading

import pytest

from services.core.errors import IndexMissingError, ModelLoadError, WorkspaceError
from services.engine.service import LocalEngine
from services.core.models import QueryOptions
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex, workspace_root

pytestmark = pytest.mark.stand_in_encoder  # indexing is tested, not the model (a model change keeps the real one)


def stored_state(service: LocalEngine, workspace) -> tuple[dict, set, set]:
    """(files in the catalogue, catalogue chunk ids, vector ids) of a workspace's index."""
    index = WorkspaceIndex(workspace_root(workspace), service.data_dir)
    catalog = index.catalog()
    state = (catalog.files(), catalog.chunk_ids(), index.store().all_ids())
    index.close()
    return state


def assert_consistent(service, workspace) -> None:
    """Every file is fully in at one version: its chunks carry its hash, and every chunk not awaiting its
    vector has one."""
    files, chunk_ids, vector_ids = stored_state(service, workspace)
    index = WorkspaceIndex(workspace_root(workspace), service.data_dir)
    for path, record in files.items():
        chunks = index.catalog().chunks(path=path)
        assert all(c.file_hash == record.file_hash for c in chunks), path
    assert chunk_ids - index.catalog().awaiting.awaiting_ids() <= vector_ids
    index.close()


async def test_index_reports_files_chunks_and_kinds(service, workspace):
    report = await service.index(workspace)
    assert report.files_indexed >= 15 and report.files_unchanged == 0
    assert report.chunks_embedded == report.chunks_total > 50
    health = await service.health(workspace)
    assert health.indexed and health.files == report.files_indexed and health.chunks == report.chunks_total
    assert {"python", "typescript", "java", "swift", "go", "markdown"} <= set(health.languages)
    assert health.model == service.settings.embedding_model and health.dimension == 384  # the model in use
    assert health.stale_files == () and not health.needs_reindex and health.size_bytes > 0
    paths = set(stored_state(service, workspace)[0])
    assert not any(p.startswith(("scratch/", "docs/drafts/")) or "/generated/" in p for p in paths)


async def test_conformances_are_searchable(service, workspace):
    await service.index(workspace)
    index = WorkspaceIndex(workspace_root(workspace), service.data_dir)
    conforming = {c.symbol for c in index.catalog().chunks() if "ChunkStore" in c.bases}
    index.close()
    assert {"MemoryChunkStore", "DiskChunkStore"} <= conforming


async def test_no_change_reindex_embeds_nothing(service, workspace):
    first = await service.index(workspace)
    again = await service.index(workspace)
    assert again.files_indexed == 0 and again.chunks_embedded == 0
    assert again.files_unchanged == first.files_indexed and again.chunks_total == first.chunks_total


async def test_edit_add_delete_changes_only_those_chunks(service, workspace):
    await service.index(workspace)
    files_before, ids_before, _ = stored_state(service, workspace)
    edited = workspace / "go/index/index.go"
    edited.write_text(edited.read_text() + "\n// Reset forgets every document.\nfunc Reset() {}\n")
    (workspace / "notes/extra.py").write_text('def brand_new_helper():\n    """Added later."""\n    return 42\n')
    shutil.rmtree(workspace / "kotlin")
    report = await service.index(workspace)
    files_after, ids_after, vector_ids = stored_state(service, workspace)
    assert report.files_indexed == 2 and report.files_removed >= 1
    changed_paths = {"go/index/index.go", "notes/extra.py"} | {p for p in files_before if p.startswith("kotlin/")}
    untouched_before = {i for i in ids_before if i.split(":")[0] not in changed_paths}
    assert untouched_before <= ids_after  # other files keep their chunks
    added = ids_after - ids_before
    assert {i.split(":")[0] for i in added} <= {"go/index/index.go", "notes/extra.py"}
    assert report.chunks_embedded == len(added) - _moved_but_same(ids_before, added)
    assert not any(p.startswith("kotlin/") for p in files_after)
    assert vector_ids == ids_after


def _moved_but_same(before: set[str], added: set[str]) -> int:
    """Chunks whose content is unchanged (same hash) reuse their stored vector."""
    old_hashes = {(i.split(":")[0], i.rsplit(":", 1)[1]) for i in before}
    return sum((i.split(":")[0], i.rsplit(":", 1)[1]) in old_hashes for i in added)


async def test_cancel_mid_run_leaves_consistent_index_then_resumes(service, workspace):
    cancel = threading.Event()

    def on_progress(event):
        if event.phase == "embedding" and event.chunks_done > 0:
            cancel.set()

    partial = await service.index(workspace, progress=on_progress, cancel=cancel)
    assert partial.cancelled and 0 < partial.files_indexed
    assert_consistent(service, workspace)
    resumed = await service.index(workspace)
    assert not resumed.cancelled and resumed.files_unchanged >= partial.files_indexed
    full = await service.index(workspace)
    assert full.files_indexed == 0 and full.chunks_total == resumed.chunks_total
    assert_consistent(service, workspace)


async def test_progress_events_report_counts_rate_and_eta(service, workspace):
    events = []
    await service.index(workspace, progress=events.append)
    embedding = [e for e in events if e.phase == "embedding" and e.chunks_done]
    assert embedding and embedding[-1].chunks_done == embedding[-1].chunks_total
    assert all(e.rate > 0 for e in embedding) and embedding[0].eta_seconds is not None
    assert events[-1].phase == "done"


async def test_bad_files_are_skipped_with_reasons_and_nothing_else_lost(service, workspace):
    good = await service.index(workspace)
    (workspace / "blob.py").write_bytes(b"\x00\x01binary\x00" * 10)
    (workspace / "huge.py").write_text("x = 1\n" * 250_000)
    (workspace / "latin1.py").write_bytes("caf\xe9 = 'caf\xe9'\n".encode("latin-1"))
    report = await service.index(workspace)
    reasons = {s.path: s.reason for s in report.skipped}
    assert "binary" in reasons["blob.py"] and "too large" in reasons["huge.py"] and "UTF-8" in reasons["latin1.py"]
    health = await service.health(workspace)
    assert {s.path for s in health.skipped} >= {"blob.py", "huge.py", "latin1.py"}
    assert health.files == good.files_indexed and health.stale_files == ()


async def test_deleted_index_folder_gives_clear_error_then_rebuilds(service, workspace):
    await service.index(workspace)
    options = QueryOptions(workspace=str(workspace), top_k=3, strategy="none")
    assert (await service.query("save a note", options)).results
    shutil.rmtree(service.data_dir)
    with pytest.raises(IndexMissingError, match="deleted"):
        await service.query("save a note to disk", options)
    health = await service.health(workspace)
    assert not health.indexed
    report = await service.index(workspace)
    assert report.files_indexed > 0
    assert (await service.query("save a note to disk", options)).results


async def test_model_change_forces_rebuild_and_says_why(data_dir, workspace):
    from services.encoders.embedder import bundled_model_path

    first = LocalEngine(data_dir=data_dir)
    await first.index(workspace)
    first.close()
    other = LocalEngine(Settings(embedding_model=str(bundled_model_path())), data_dir=data_dir)
    report = await other.index(workspace)
    other.close()
    assert "model changed" in report.rebuilt_reason and report.chunks_embedded == report.chunks_total


async def test_missing_model_fails_with_clear_message_and_indexes_nothing(data_dir, workspace):
    """How fast it fails is measured by `benchmarks/latency.py paths`."""
    service = LocalEngine(Settings(embedding_model="nobody/no-such-model"), data_dir=data_dir)
    with pytest.raises(ModelLoadError, match="no-such-model"):
        await service.index(workspace)
    assert not (await service.health(workspace)).indexed
    assert "no-such-model" in (await service.health(workspace)).last_error
    service.close()


async def test_missing_workspace_is_a_clear_error(service, tmp_path):
    with pytest.raises(WorkspaceError, match="does not exist"):
        await service.index(tmp_path / "nowhere")


async def test_stale_files_and_needs_reindex(service, workspace):
    report = await service.index(workspace)
    (workspace / "notes/new_module.py").write_text("def fresh():\n    return 1\n")
    target = workspace / "go/index/index.go"
    target.write_text(target.read_text() + "\n// changed\n")
    (workspace / "README.md").unlink()
    health = await service.health(workspace)
    changes = {s.path: s.change for s in health.stale_files}
    assert changes == {"notes/new_module.py": "new", "go/index/index.go": "modified", "README.md": "deleted"}
    assert not health.needs_reindex
    for path in [p for p in workspace.rglob("*") if p.suffix in (".py", ".java", ".swift", ".ts")]:
        path.write_text(path.read_text() + "\n// touched\n")
    assert (await service.health(workspace)).needs_reindex


async def test_queries_keep_working_during_a_full_rebuild(service, workspace):
    import asyncio

    first = await service.index(workspace)
    options = QueryOptions(workspace=str(workspace), top_k=3, use_cache=False, strategy="none")
    answers = []

    def on_progress(event):
        if event.phase == "embedding" and len(answers) < 3:
            answers.append(asyncio.ensure_future(service.query("save a note to disk", options)))

    rebuild = await service.index(workspace, full=True, progress=on_progress)
    results = await asyncio.gather(*answers)
    assert rebuild.rebuilt_reason == "full rebuild requested"
    assert rebuild.chunks_embedded == first.chunks_total == rebuild.chunks_total
    assert answers and all(len(r.results) == 3 for r in results)


async def test_a_big_run_settles_the_vector_store_at_its_end_and_changes_no_vector(service, workspace, monkeypatch):
    from services.indexing import indexer as indexer_module

    monkeypatch.setattr(indexer_module, "SETTLE_AFTER_VECTORS", 10)  # the sample holds far fewer than 1,000
    events = []
    await service.index(workspace, progress=events.append)
    phases = [(e.phase, e.message) for e in events]
    assert ("finalizing", "settling the vector store") in phases
    assert phases.index(("finalizing", "settling the vector store")) < phases.index(("done", ""))
    store = service.workspace_index(workspace).store()
    ids = sorted(store.vector_ids())
    before = store.collection().get(ids=ids, include=["embeddings"])
    store.settle()
    after = store.collection().get(ids=ids, include=["embeddings"])
    assert before["ids"] == after["ids"] and (before["embeddings"] == after["embeddings"]).all()
    events.clear()
    (workspace / "README.md").write_text("# a small edit\n")
    await service.index(workspace, progress=events.append)
    assert ("finalizing", "settling the vector store") not in [(e.phase, e.message) for e in events]
