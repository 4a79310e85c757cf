"""The query flow end to end on the sample workspace: real model, real ChromaDB, every strategy."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.retrieval import search_steps
from services.core.errors import IndexMissingError, QueryError, WorkspaceError
from services.engine.service import LocalEngine
from services.engine.reranking import Reranking
from services.core.models import Candidate, Chunk, QueryOptions
from services.retrieval.strategies import cross_encoder, strategy_names
from services.core.settings import Settings
from tests.conftest import indexed_sample
from tests.helpers.tiny_cross_encoder import build_tiny_cross_encoder


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """One indexed copy of the sample workspace for the whole module (indexing is the slow part)."""
    yield from indexed_sample(tmp_path_factory.mktemp("pipeline"))


def options(workspace, **changes) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), **{"strategy": "none", **changes})


@pytest.mark.parametrize("strategy", strategy_names())
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_every_strategy_runs_end_to_end(indexed, strategy):
    service, workspace = indexed
    result = await service.query("save a note to disk", options(workspace, strategy=strategy, top_k=5))
    assert 0 < len(result.results) <= 5 and 0 < len(result.original) <= 5
    assert [r.rank for r in result.results] == list(range(1, len(result.results) + 1))
    assert set(result.timings_ms) >= {"embed", "search", "rerank", "expand", "total"}
    assert result.total_chunks_searched > 50 and result.chunks_above_threshold >= len(result.results)
    original_scores = {r.chunk.id: r.original_score for r in result.original}
    for r in result.results:
        if r.original_rank is not None and r.original_rank <= 5:
            assert r.original_score == pytest.approx(original_scores[r.chunk.id])
    info = {s.name: s for s in await service.strategies()}[strategy]
    if strategy == "none":
        assert not result.reranked and result.fallback_reason is None
    elif strategy == "tuned":  # this workspace has no labels: the original ranking, and how to get labels
        assert not result.reranked and "marked relevant" in result.fallback_reason
        assert [r.chunk.id for r in result.results] == [r.chunk.id for r in result.original]
    elif info.available:
        assert result.reranked and result.fallback_reason is None
    else:  # cross-encoder without weights, llm without an endpoint: the original ranking, and why
        assert not result.reranked and result.fallback_reason == info.reason
        assert [r.chunk.id for r in result.results] == [r.chunk.id for r in result.original]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_metadata_puts_implementations_first(indexed):
    service, workspace = indexed
    result = await service.query("what implements ChunkStore", options(workspace, strategy="metadata", top_k=5))
    plain = await service.query("what implements ChunkStore", options(workspace, top_k=5))
    assert {r.chunk.symbol for r in result.results[:2]} == {"MemoryChunkStore", "DiskChunkStore"}
    assert [r.chunk.id for r in plain.results] != [r.chunk.id for r in result.results]
    protocol = await service.query("ChunkStore protocol", options(workspace, strategy="metadata", top_k=3))
    assert protocol.results[0].chunk.kind == "protocol" and protocol.results[0].chunk.symbol == "ChunkStore"


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_heuristic_puts_the_exact_name_first(indexed):
    service, workspace = indexed
    result = await service.query("tokenize_query", options(workspace, strategy="heuristic", top_k=5))
    assert result.results[0].chunk.symbol == "tokenize_query"


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_hybrid_ranks_an_exact_identifier_first(indexed):
    service, workspace = indexed
    result = await service.query("KeywordTokenizer", options(workspace, strategy="hybrid", top_k=5))
    assert "KeywordTokenizer" in result.results[0].chunk.qualified_name
    assert 0.0 <= min(r.score for r in result.results) and max(r.score for r in result.results) <= 1.0


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_filters_apply_inside_the_search_and_still_fill_top_k(indexed):
    service, workspace = indexed
    for strategy in ("none", "hybrid"):
        java = await service.query("store a note", options(workspace, strategy=strategy, top_k=8,
                                                           languages=("java",), min_relevance=0.0))
        assert len(java.results) == 8 and {r.chunk.language for r in java.results} == {"java"}
    swift = await service.query("store", options(workspace, top_k=4, path_glob="swift/*", min_relevance=0.0))
    assert len(swift.results) == 4 and all(r.chunk.path.startswith("swift/") for r in swift.results)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_threshold_drops_weak_results_on_the_cosine_scale(indexed):
    service, workspace = indexed
    loose = await service.query("save a note to disk", options(workspace, top_k=50, min_relevance=0.0))
    strict = await service.query("save a note to disk", options(workspace, top_k=50, min_relevance=0.4))
    assert all(r.score >= 0.4 for r in strict.results) and len(strict.results) < len(loose.results)
    fused = await service.query("save a note to disk", options(workspace, top_k=50, min_relevance=0.4,
                                                               strategy="rrf"))
    assert all(r.original_score >= 0.4 for r in fused.results)  # rrf scores are 0-1 relative; not judged
    assert len(fused.results) == len(strict.results)


def test_keyword_only_candidates_are_judged_by_their_stored_cosine():
    def cand(name, score, cosine):
        chunk = Chunk(path=f"{name}.py", language="python", start_line=1, end_line=2, content=name,
                      content_hash=name)
        return Candidate(chunk, score, cosine, None if cosine is None else 1)
    ranked = [cand("a", 1.0, 0.7), cand("kw_close", 0.5, None), cand("b", 0.3, 0.25), cand("kw_far", 0.04, None)]
    cosines = {ranked[1].chunk.id: 0.45, ranked[3].chunk.id: 0.05}
    kept = search_steps.above_threshold(ranked, "relative", 0.2, cosines=cosines)
    assert [c.chunk.path for c in kept] == ["a.py", "kw_close.py", "b.py"]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_hybrid_results_all_pass_the_threshold_on_cosine(indexed, monkeypatch):
    service, workspace = indexed
    # a small vector pool (10), so that BM25 finds chunks the vector pool missed
    small_pool = service.settings.with_changes(candidate_pool_min=10, candidate_pool_factor=1)
    monkeypatch.setattr(service, "settings", small_pool)
    monkeypatch.setattr(service, "reranking", Reranking(small_pool, service._lock))
    question = "delete a note"
    loose = await service.query(question, options(workspace, strategy="hybrid", top_k=10, min_relevance=0.0,
                                                  use_cache=False))
    assert any(r.original_score is None for r in loose.results), "BM25 adds a chunk the vector pool missed"
    strict = await service.query(question, options(workspace, strategy="hybrid", top_k=10, min_relevance=0.4,
                                                   use_cache=False))
    vector = service.embedder.encode([question])[0]
    stored = service.workspace_index(workspace).store().embeddings([r.chunk.id for r in strict.results])
    cosines = search_steps.keyword_cosines(vector, stored)
    assert strict.results and all(cosines[r.chunk.id] >= 0.4 - 1e-5 for r in strict.results)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_an_empty_answer_says_what_removed_the_candidates(indexed):
    service, workspace = indexed
    far = await service.query("quantum chromodynamics lattice", options(workspace, min_relevance=0.9))
    assert far.results == [] and far.removed["threshold"] > 0
    assert far.below_threshold is not None and far.below_threshold.original_score < 0.9
    filtered = await service.query("save a note to disk", options(workspace, languages=("java",),
                                                                  path_glob="swift/*"))
    assert filtered.results == []
    assert filtered.removed["path"] > 0 and filtered.removed["languages"] > 0


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_cache_hits_misses_and_invalidation(indexed):
    service, workspace = indexed
    opts = options(workspace, strategy="keyword-boost", top_k=3)
    first = await service.query("load notes from a folder", opts)
    second = await service.query("load notes from a folder", opts)
    assert not first.cache_hit and second.cache_hit and second.results == first.results
    assert not (await service.query("load notes from a folder", options(workspace, top_k=4))).cache_hit
    assert not (await service.query("load notes from a folder", options(workspace, strategy="keyword-boost",
                                                                        top_k=3, use_cache=False))).cache_hit
    await service.index(workspace)
    assert not (await service.query("load notes from a folder", opts)).cache_hit


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_cache_entries_expire(tmp_path, indexed):
    _, workspace = indexed
    service = LocalEngine(Settings(cache_ttl_seconds=2.0), data_dir=tmp_path)
    await service.index(workspace)
    opts = options(workspace, top_k=2)
    await service.query("a note", opts)
    assert (await service.query("a note", opts)).cache_hit
    deadline = time.monotonic() + 60
    while (await service.query("a note", opts)).cache_hit:  # a hit never refreshes the entry's lifetime
        assert time.monotonic() < deadline, "the cached answer never expired"
        await asyncio.sleep(0.1)
    service.close()


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_context_is_expanded_around_the_chunk(indexed):
    service, workspace = indexed
    result = await service.query("tokenize a query into keywords", options(workspace, top_k=5, context_lines=3))
    code = next(r for r in result.results if r.chunk.kind in ("function", "method"))
    lines = (workspace / code.chunk.path).read_text().splitlines()
    assert code.context_start_line == max(1, code.chunk.start_line - 3)
    assert code.context.splitlines()[0] == lines[code.context_start_line - 1]
    assert code.chunk.content.strip() in code.context


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_bad_input_gets_clear_errors(indexed, tmp_path):
    service, workspace = indexed
    with pytest.raises(QueryError, match="empty"):
        await service.query("   ", options(workspace))
    with pytest.raises(QueryError, match="Unknown strategy"):
        await service.query("x", options(workspace, strategy="magic"))
    with pytest.raises(WorkspaceError):
        await service.query("x", options(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexMissingError, match="not indexed"):
        await service.query("x", options(tmp_path / "empty"))
    assert (await service.health(workspace)).indexed and not (await service.health(tmp_path / "empty")).indexed


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_cross_encoder_reranks_with_a_local_model(indexed, tmp_path):
    _, workspace = indexed
    model = build_tiny_cross_encoder(tmp_path / "tiny-ce")
    service = LocalEngine(Settings(cross_encoder_model=str(model)), data_dir=tmp_path / "data")
    await service.index(workspace)
    await service.warm_up()  # loads the model ahead of the first question
    assert (str(model), service.settings.cross_encoder_max_length) in cross_encoder._MODELS
    info = {s.name: s for s in await service.strategies()}["cross-encoder"]
    assert info.available
    result = await service.query("save a note", options(workspace, strategy="cross-encoder", top_k=5))
    assert result.reranked and result.fallback_reason is None
    assert all(0.0 <= r.score <= 1.0 for r in result.results)
    assert [r.score for r in result.results] == sorted((r.score for r in result.results), reverse=True)
    service.close()
