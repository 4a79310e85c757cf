"""Keyword search answers while embedding goes on (issue #8, part 4), on real parts."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from services.encoders.embedder import Embedder
from services.engine.service import LocalEngine
from services.core.models import QueryOptions
from services.core.settings import Settings
from services.storage.workspace_index import WorkspaceIndex, workspace_root

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier


@pytest.fixture
def early(data_dir):
    service = LocalEngine(Settings(early_keyword_min_chunks=0), data_dir=data_dir)
    yield service
    service.close()


@pytest.fixture
def held_embedding(monkeypatch):
    """Embedding waits at its first slice until released: the real model runs, only later.
    (A gate, not a mock: it is the only way to look at the index mid-run without timing luck.)"""
    reached, release = threading.Event(), threading.Event()
    original = Embedder.encode_chunks

    def gated(self, chunks):
        reached.set()
        release.wait(120)
        return original(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", gated)
    yield reached, release
    release.set()


async def wait_for(event: threading.Event, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not event.is_set():
        assert time.monotonic() < deadline, "indexing never reached embedding"
        await asyncio.sleep(0.02)


def options(workspace, **kw) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), strategy="hybrid", min_relevance=0.0, use_cache=False, **kw)


async def test_keyword_answers_before_embedding_then_vectors_join(early, workspace, held_embedding):
    reached, release = held_embedding
    run = asyncio.create_task(early.index(workspace))
    await wait_for(reached)

    result = await early.query("save note", options(workspace))
    assert result.results and all(r.original_score is None for r in result.results)  # BM25 only, no vectors yet
    java = await early.query("note store", options(workspace, languages=("java",)))
    assert java.results and {r.chunk.language for r in java.results} == {"java"}
    swift = await early.query("note store", options(workspace, path_glob="swift/*"))
    assert swift.results and all(r.chunk.path.startswith("swift/") for r in swift.results)
    health = await early.health(workspace)
    assert health.chunks_embedded == 0 < health.chunks

    release.set()
    report = await run
    after = await early.query("save note", options(workspace))
    assert any(r.original_score is not None for r in after.results)
    health = await early.health(workspace)
    assert health.chunks_embedded == health.chunks == report.chunks_total


async def test_cancel_while_embedding_keeps_only_committed_files(early, workspace, held_embedding):
    reached, release = held_embedding
    cancel = threading.Event()
    run = asyncio.create_task(early.index(workspace, cancel=cancel))
    await wait_for(reached)
    cancel.set()
    release.set()
    report = await run
    assert report.cancelled

    index = WorkspaceIndex(workspace_root(workspace), early.data_dir)
    catalog_ids, vector_ids = index.catalog().chunk_ids(), index.store().all_ids()
    index.close()
    assert catalog_ids <= vector_ids  # every listed chunk has its vector
    result = await early.query("save note", options(workspace))
    assert {r.chunk.id for r in result.results} <= catalog_ids  # the keyword index lists committed chunks only
    health = await early.health(workspace)
    assert health.chunks_embedded == health.chunks == len(catalog_ids)

    resumed = await early.index(workspace)  # the rest is embedded on the next run
    assert resumed.files_indexed > 0 and not resumed.cancelled


async def test_a_run_hands_the_encoder_a_batch_for_each_of_its_lanes(data_dir, workspace, monkeypatch):
    """The indexer's encoder calls carry the encoder's own call size (a batch per OpenVINO stream; a GPU's
    whole batch, hundreds, instead of the 32 every encoder got), the last of each window fewer."""
    sizes: list[int] = []
    original = Embedder.encode_chunks

    def counted(self, chunks):
        sizes.append(len(chunks))
        return original(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", counted)
    service = LocalEngine(Settings(embedding_backend="openvino-int8", embed_batch_size=4), data_dir=data_dir)
    try:
        report = await service.index(workspace)
        lanes = service.index_embedder.load().streams
        assert service.index_embedder.call_size == 4 * lanes
        assert sum(sizes) == report.chunks_embedded and max(sizes) == 4 * lanes
        assert sizes.count(4 * lanes) >= len(sizes) // 2  # whole calls, but for each window's last
    finally:
        service.close()
