"""The cross-encoder strategy on a real (tiny, locally built) BERT cross-encoder."""

from __future__ import annotations

import math

import pytest

from services.core.errors import StrategyUnavailable
from services.retrieval import search_steps
from services.retrieval.strategies import RerankSkipped, create_strategy
from services.retrieval.strategies.cross_encoder import load_model, pair_text
from services.core.settings import Settings
from tests.helpers.reranking import chunk, names, ranked, request
from tests.helpers.tiny_cross_encoder import build_tiny_cross_encoder, direct_logits

pytestmark = pytest.mark.slow
MAX_LENGTH = 64
QUERY = "how does the cache save a session"
BODIES = {
    "save_session": "def save session ( self ) : self . cache . save ( session )",
    "load_config": "def load config ( path ) : return open ( path ) . read ( )",
    "parse_token": "def parse token ( value ) : return value . name",
    "search_index": "def search index ( query ) : return index . query ( query )",
    "close_file": "def close file ( file ) : file . close ( )",
    "list_chunks": "def list chunks ( self ) : return list ( self . chunks )",
}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"))


@pytest.fixture(scope="module")
def expected(model_folder):
    """name -> sigmoid(raw logit) computed without the strategy."""
    chunks = [chunk(n, body) for n, body in BODIES.items()]
    pairs = [(QUERY, pair_text(c, MAX_LENGTH * 4)) for c in ranked(chunks, [0.5] * len(chunks))]
    logits = direct_logits(model_folder, pairs, MAX_LENGTH)
    return {c.symbol: 1 / (1 + math.exp(-x)) for c, x in zip(chunks, logits)}


def settings_for(folder, **changes) -> Settings:
    return Settings().with_changes(cross_encoder_model=str(folder),
                                   cross_encoder_max_length=MAX_LENGTH, **changes)


def candidates_against(expected):
    """Vector scores in the reverse of the cross-encoder's order, so reranking must reorder."""
    ce_order = sorted(expected, key=expected.get, reverse=True)
    vector_order = list(reversed(ce_order))
    scores = [0.60 - 0.02 * i for i in range(len(vector_order))]
    return ranked([chunk(n, BODIES[n]) for n in vector_order], scores), ce_order


def test_scores_are_one_sigmoid_of_the_model_output_and_order_follows_them(model_folder, expected):
    assert len({round(p, 6) for p in expected.values()}) == len(expected), "tiny model gives distinct scores"
    candidates, ce_order = candidates_against(expected)
    strategy = create_strategy("cross-encoder", settings_for(model_folder))
    result = strategy.rerank(request(QUERY, candidates))
    assert names(result) == ce_order != names(candidates)
    for candidate in result:
        assert 0.0 <= candidate.score <= 1.0
        assert candidate.score == pytest.approx(expected[candidate.chunk.symbol], abs=1e-4)
        assert [(sig.name, sig.contribution) for sig in candidate.signals] == [
            ("cross-encoder relevance", candidate.score)]
    originals = {c.chunk.id: (c.original_score, c.original_rank) for c in candidates}
    assert all(originals[c.chunk.id] == (c.original_score, c.original_rank) for c in result)


def test_sigmoid_stored_in_the_model_config_is_not_applied_twice(model_folder, expected, tmp_path):
    import torch
    from sentence_transformers import CrossEncoder
    saved = tmp_path / "with-sigmoid"
    CrossEncoder(str(model_folder), activation_fn=torch.nn.Sigmoid(), local_files_only=True).save(str(saved))
    candidates, ce_order = candidates_against(expected)
    result = create_strategy("cross-encoder", settings_for(saved)).rerank(request(QUERY, candidates))
    assert names(result) == ce_order
    for candidate in result:
        assert candidate.score == pytest.approx(expected[candidate.chunk.symbol], abs=1e-4)


def test_identical_across_runs_and_batch_sizes(model_folder, expected):
    candidates, _ = candidates_against(expected)
    one = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_batch_size=1))
    many = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_batch_size=32))
    first = one.rerank(request(QUERY, candidates))
    assert first == one.rerank(request(QUERY, candidates))
    other = many.rerank(request(QUERY, candidates))
    assert names(other) == names(first)
    assert [c.score for c in other] == pytest.approx([c.score for c in first], abs=1e-5)


def test_batches_of_the_configured_size(model_folder, expected):
    candidates, _ = candidates_against(expected)  # 6 candidates
    strategy = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_batch_size=4))
    calls = []
    hook = load_model(str(model_folder), MAX_LENGTH)[0].register_forward_hook(lambda *a: calls.append(1))
    try:
        strategy.rerank(request(QUERY, candidates))
    finally:
        hook.remove()
    assert len(calls) == 2  # 4 + 2


def test_model_is_loaded_once_and_shared(model_folder):
    first = create_strategy("cross-encoder", settings_for(model_folder))
    second = create_strategy("cross-encoder", settings_for(model_folder))
    first.warm_up()
    second.warm_up()
    assert first._model() is second._model()


def test_candidates_below_the_threshold_go_last_but_stay(model_folder, expected):
    candidates, ce_order = candidates_against(expected)
    cut = sorted(expected.values())[len(expected) // 2]  # half are below
    strategy = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_score_threshold=cut))
    result = strategy.rerank(request(QUERY, candidates))
    assert len(result) == len(candidates)
    below = [c.score < cut for c in result]
    assert below == sorted(below)  # every above-threshold candidate precedes every below one
    assert names(result) == ce_order


def test_adaptive_mode_skips_confident_rankings(model_folder, expected):
    candidates, _ = candidates_against(expected)
    confident = ranked([c.chunk for c in candidates], [0.90, 0.85, 0.80, 0.80, 0.78, 0.76])
    strategy = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_adaptive=True))
    with pytest.raises(RerankSkipped, match="adaptive"):
        strategy.rerank(request(QUERY, confident))
    kept, reranked, why = search_steps.rerank(strategy, request(QUERY, confident))
    assert [(c.chunk, c.score) for c in kept] == [(c.chunk, c.score) for c in confident]
    assert not reranked and "mean similarity 0.81" in why
    assert all(c.signals[0].name == "cosine similarity" for c in kept)  # fallback results keep their cosine row
    unsure, reranked, why = search_steps.rerank(strategy, request(QUERY, candidates))  # mean 0.55 < 0.75
    assert names(unsure) != names(candidates) and reranked and why is None


def test_pool_size_is_at_least_the_configured_pool(model_folder):
    strategy = create_strategy("cross-encoder", settings_for(model_folder, cross_encoder_pool=50))
    assert strategy.pool_size(10) == 50
    assert strategy.pool_size(80) == 80


def test_local_folder_is_available(model_folder):
    available = create_strategy("cross-encoder", settings_for(model_folder)).availability()
    assert available.available


def test_missing_model_is_reported_and_rerank_raises(tmp_path):
    for model in ("nobody/not-downloaded-model", str(tmp_path / "no-such-folder")):
        strategy = create_strategy("cross-encoder", Settings().with_changes(cross_encoder_model=model))
        available = strategy.availability()
        assert not available.available and "KE_CROSS_ENCODER_MODEL" in available.reason
        with pytest.raises(StrategyUnavailable, match="not on this machine"):
            strategy.rerank(request(QUERY, ranked([chunk("a")], [0.5])))


def test_folder_without_a_model_is_unavailable(tmp_path):
    strategy = create_strategy("cross-encoder", Settings().with_changes(cross_encoder_model=str(tmp_path)))
    assert not strategy.availability().available
    assert "config.json" in strategy.availability().reason


def test_broken_model_folder_raises_a_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    strategy = create_strategy("cross-encoder", Settings().with_changes(cross_encoder_model=str(tmp_path)))
    with pytest.raises(StrategyUnavailable, match="could not be loaded"):
        strategy.warm_up()


def test_downloaded_model_id_in_the_hub_cache_loads_offline(model_folder, tmp_path, monkeypatch):
    from huggingface_hub import constants
    snapshot = tmp_path / "models--tiny--ce" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    for item in model_folder.iterdir():
        (snapshot / item.name).write_bytes(item.read_bytes())
    (tmp_path / "models--tiny--ce" / "refs").mkdir()
    (tmp_path / "models--tiny--ce" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    strategy = create_strategy("cross-encoder", Settings().with_changes(cross_encoder_model="tiny/ce"))
    assert strategy.availability().available
    result = strategy.rerank(request(QUERY, ranked([chunk("a", BODIES["save_session"])], [0.5])))
    assert 0.0 <= result[0].score <= 1.0
