"""Each strategy's arithmetic pinned to its spec, on hand-made candidates."""

from __future__ import annotations

import time

import pytest

from services.core.models import Availability
from services.retrieval.strategies import (
    PROBABILITY, RELATIVE, SIMILARITY, RerankStrategy, create_strategy, strategy_names,
)
from services.retrieval.strategies.metadata import detect_intent
from services.retrieval.strategies.rrf import keyword_frequency
from services.core.settings import Settings
from tests.helpers.reranking import by_name, chunk, keyword_hits, names, ranked, request

SETTINGS = Settings()
ALL = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata", "cross-encoder", "llm"]
OFFLINE = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata"]


def strategy(name: str, **changes):
    return create_strategy(name, SETTINGS.with_changes(**changes))


def scored(candidates) -> list[tuple[str, float]]:
    """What a ranking shows: each chunk and its score, in order."""
    return [(c.chunk.id, c.score) for c in candidates]


def text_chunk(name: str, text: str):
    """A chunk whose name carries no keywords: only `text` can match."""
    return chunk(name, text + "\n" + "x = 1\n" * 10)


# --- registry -------------------------------------------------------------------------------------

def test_registry_lists_every_strategy_with_the_default_auto_first_then_none():
    listed = strategy_names()
    assert set(ALL) <= set(listed)
    assert listed[:2] == ["auto", "none"]


@pytest.mark.parametrize("name", ALL)
def test_every_strategy_reports_availability(name):
    s = strategy(name)
    available = s.availability()
    assert isinstance(available, Availability)
    assert available.available or available.reason
    assert s.label and s.description and s.scale in (SIMILARITY, RELATIVE, PROBABILITY)


def test_capabilities_are_declared_by_every_strategy():
    made = {name: strategy(name, cross_encoder_score_threshold=0.3) for name in strategy_names()}
    assert all(isinstance(s, RerankStrategy) for s in made.values())
    assert [n for n, s in made.items() if not s.reranks] == ["none"]
    assert [n for n, s in made.items() if s.loads_model] == ["cross-encoder"]
    assert {n: s.score_threshold for n, s in made.items() if s.score_threshold} == {"cross-encoder": 0.3}


def test_model_strategies_say_how_to_enable_them():
    llm = strategy("llm").availability()
    assert not llm.available and "KE_LLM_BASE_URL" in llm.reason
    missing = strategy("cross-encoder", cross_encoder_model="nobody/no-such-model").availability()
    assert not missing.available and "KE_CROSS_ENCODER_MODEL" in missing.reason


@pytest.mark.parametrize("name", OFFLINE)
def test_strategy_is_deterministic_keeps_everything_and_the_originals(name):
    chunks = [chunk(n, docstring=f"{n} parses tokens") for n in
              ("parse_tokens", "TokenStore", "lexer", "Parser", "render", "tokenize")]
    candidates = ranked(chunks, [0.8, 0.7, 0.7, 0.6, 0.5, 0.5])
    req = request("parse tokens protocol", candidates)
    first = strategy(name).rerank(req)
    assert first == strategy(name).rerank(req)
    assert sorted(c.chunk.id for c in first) == sorted(c.chunk.id for c in candidates)
    originals = {c.chunk.id: (c.original_score, c.original_rank) for c in candidates}
    assert all(originals[c.chunk.id] == (c.original_score, c.original_rank) for c in first)
    assert [c.score for c in first] == sorted((c.score for c in first), reverse=True)


@pytest.mark.parametrize("name", OFFLINE)
def test_equal_scores_keep_the_original_rank_order(name):
    same = ranked([chunk("zeta"), chunk("mid"), chunk("alpha")], [0.5, 0.5, 0.5])
    result = strategy(name).rerank(request("nothing matches here zzz", same))
    assert names(result) == ["zeta", "mid", "alpha"]


@pytest.mark.parametrize("name", OFFLINE)
def test_empty_candidate_list(name):
    assert strategy(name).rerank(request("parse tokens", [])) == []


def test_none_keeps_the_vector_ranking():
    candidates = ranked([chunk("a"), chunk("b")], [0.9, 0.4])
    out = strategy("none").rerank(request("b", candidates))
    assert scored(out) == scored(candidates)
    assert [s.name for s in out[0].signals] == ["cosine similarity"]


# --- keyword boost (reranking-strategies.md) ------------------------------------------------------

def test_keyword_boost_adds_five_percent_per_keyword():
    candidates = ranked([text_chunk("c1", "def parse(config): pass")], [0.5])
    result = strategy("keyword-boost").rerank(request("parse config", candidates))
    assert result[0].score == pytest.approx(0.5 + 2 * 0.05)
    assert result[0].original_score == 0.5


def test_keyword_boost_adds_ten_percent_for_the_exact_phrase():
    candidates = ranked([text_chunk("c1", "# Parse Config files here")], [0.5])
    result = strategy("keyword-boost").rerank(request("parse config", candidates))
    assert result[0].score == pytest.approx(0.5 + 0.10 + 2 * 0.05)


def test_keyword_boost_is_capped_at_thirty_percent_and_one():
    text = "load user profile settings cache: load user profile settings cache"
    candidates = ranked([text_chunk("c1", text), text_chunk("c2", text)], [0.5, 0.9])
    result = by_name(strategy("keyword-boost").rerank(
        request("load user profile settings cache", candidates)))
    assert result["c1"].score == pytest.approx(0.5 + 0.30)  # 0.10 + 5 x 0.05 = 0.35, capped
    assert result["c2"].score == pytest.approx(1.0)


def test_keyword_boost_matches_whole_words_only():
    candidates = ranked([text_chunk("c1", "username = users[0]"), text_chunk("c2", "user.name = 1")],
                        [0.6, 0.5])
    result = by_name(strategy("keyword-boost").rerank(request("find user", candidates)))
    assert result["c1"].score == 0.6  # 'username' and 'users' are not the word 'user'
    assert result["c2"].score == pytest.approx(0.55)


def test_keyword_boost_can_overtake_and_ignores_stop_words():
    candidates = ranked([text_chunk("c1", "def unrelated(): return None"),
                         text_chunk("c2", "def refresh_token(token): ...")], [0.60, 0.57])
    result = strategy("keyword-boost").rerank(request("how is the token refreshed", candidates))
    assert names(result) == ["c2", "c1"]
    assert scored(strategy("keyword-boost").rerank(request("how is it", candidates))) == scored(candidates)


# --- RRF (reranking-strategies.md) ----------------------------------------------------------------

def test_rrf_formula():
    assert strategy("rrf").rrf_score(1, 3) == pytest.approx(1.0 / 61 + 0.8 / 63)


def test_keyword_frequency_counts_occurrences_plus_half_per_whole_word():
    assert keyword_frequency("token", ["token"]) == 1.5
    assert keyword_frequency("tokens token", ["token"]) == 2.5


def test_rrf_fuses_semantic_and_keyword_ranks_and_normalises():
    a = text_chunk("a", "token = 1")
    b = text_chunk("b", "nothing here")
    c = text_chunk("c", "token token token")
    result = strategy("rrf").rerank(request("token", ranked([a, b, c], [0.9, 0.8, 0.7])))
    # keyword ranks: c 1, a 2, b 3; semantic ranks: a 1, b 2, c 3
    raw = {"a": 1 / 61 + 0.8 / 62, "b": 1 / 62 + 0.8 / 63, "c": 1 / 63 + 0.8 / 61}
    low, high = min(raw.values()), max(raw.values())
    assert names(result) == ["a", "c", "b"]
    for candidate in result:
        expected = (raw[candidate.chunk.symbol] - low) / (high - low)
        assert candidate.score == pytest.approx(expected)
    assert result[0].score == 1.0 and result[-1].score == 0.0
    assert by_name(result)["c"].original_score == 0.7


def test_rrf_without_keywords_keeps_the_original_scores():
    candidates = ranked([chunk("a"), chunk("b")], [0.9, 0.4])
    assert scored(strategy("rrf").rerank(request("what is it", candidates))) == scored(candidates)


# --- hybrid (hybrid-fusion-and-metadata-reranking.md) ---------------------------------------------

def contribution(weight, rank, normalised, alpha=0.7, k=60):
    return weight * (alpha / (k + rank) + (1 - alpha) * normalised)


def test_hybrid_handles_disjoint_sets_and_ranks_the_shared_chunk_first():
    a, b, c, d, e = (chunk(n) for n in "ABCDE")
    semantic = ranked([c, d, e], [0.8, 0.7, 0.6])
    hits = keyword_hits([a, b, c], [10.0, 8.0, 6.0], semantic)
    result = strategy("hybrid").rerank(request("q", semantic, hits))
    assert sorted(names(result)) == list("ABCDE")
    assert names(result)[0] == "C"
    fused = {"A": contribution(0.3, 1, 1.0), "B": contribution(0.3, 2, 0.5),
             "C": contribution(0.7, 1, 1.0) + contribution(0.3, 3, 0.0),
             "D": contribution(0.7, 2, 0.5), "E": contribution(0.7, 3, 0.0)}
    low, high = min(fused.values()), max(fused.values())
    for candidate in result:
        assert candidate.score == pytest.approx((fused[candidate.chunk.symbol] - low) / (high - low))
    found = by_name(result)
    assert found["A"].original_rank is None and found["A"].keyword_rank == 1
    assert found["C"].original_rank == 1 and found["C"].keyword_rank == 3
    assert found["C"].keyword_score == 6.0


def test_hybrid_is_score_aware():
    """BM25 finds A with 0.99 (exact match), far above the rest; semantically A is a close second
    to B. With the spec's alpha the score gap lifts A above B; pure rank fusion (alpha 1) would not."""
    a, b = chunk("A"), chunk("B")
    others = [chunk(f"other{i}") for i in range(3)]
    semantic = ranked([b, a, *others], [0.60, 0.59, 0.40, 0.35, 0.30])
    hits = keyword_hits([a, b], [0.99, 0.10], semantic)
    score_aware = strategy("hybrid").rerank(request("exact name", semantic, hits))
    rank_only = strategy("hybrid", hybrid_alpha=1.0).rerank(request("exact name", semantic, hits))
    assert names(score_aware)[:2] == ["A", "B"]
    assert by_name(score_aware)["A"].score - by_name(score_aware)["B"].score > 0.2
    assert names(rank_only)[:2] == ["B", "A"]


def test_hybrid_semantic_weight_setting_lets_semantic_results_dominate():
    a, b, c, d = (chunk(n) for n in "ABCD")
    semantic = ranked([a, b], [0.8, 0.5])
    hits = keyword_hits([c, d], [9.0, 1.0])
    result = strategy("hybrid", hybrid_semantic_weight=0.9, hybrid_bm25_weight=0.1).rerank(
        request("q", semantic, hits))
    assert names(result)[0] == "A"
    bm25_heavy = strategy("hybrid", hybrid_semantic_weight=0.1, hybrid_bm25_weight=0.9).rerank(
        request("q", semantic, hits))
    assert names(bm25_heavy)[0] == "C"


def test_hybrid_without_keyword_hits_keeps_the_vector_order():
    semantic = ranked([chunk("a"), chunk("b"), chunk("c")], [0.9, 0.8, 0.2])
    result = strategy("hybrid").rerank(request("q", semantic))
    assert names(result) == ["a", "b", "c"]
    assert result[0].score == 1.0 and result[-1].score == 0.0


def test_hybrid_uses_the_keyword_index():
    assert strategy("hybrid").uses_keyword_index
    assert not strategy("rrf").uses_keyword_index


# --- heuristic (heuristic-and-llm-reranking.md) ---------------------------------------------------

@pytest.mark.parametrize("query", ["EntityStore", "entitystore", "entity store", "entity_store"])
def test_heuristic_puts_the_exact_name_first(query):
    candidates = ranked([chunk("search_entities"), chunk("StoreHelper"), chunk("EntityStore")],
                        [0.8, 0.6, 0.5])
    result = strategy("heuristic").rerank(request(query, candidates))
    assert names(result)[0] == "EntityStore"
    assert result[0].score >= 0.5 + 2.0
    assert result[0].original_score == 0.5


def test_heuristic_name_term_and_summary_boosts():
    candidates = ranked([chunk("open_connection", docstring="Opens a database connection pool."),
                         chunk("unrelated", docstring="Talks to the database.")], [0.5, 0.5])
    result = by_name(strategy("heuristic").rerank(request("database connection", candidates)))
    # 'connection' in the name: +0.5; both terms in the summary: +0.3
    assert result["open_connection"].score == pytest.approx(0.5 + 0.5 + 0.3)
    assert result["unrelated"].score == pytest.approx(0.5 + 0.3 / 2)


def test_heuristic_penalises_stubs():
    candidates = ranked([chunk("store_stub", "def s(): pass"), chunk("real_one")], [0.7, 0.6])
    result = strategy("heuristic").rerank(request("anything else", candidates))
    assert names(result) == ["real_one", "store_stub"]
    assert by_name(result)["store_stub"].score == pytest.approx(0.7 - 0.3)


def test_heuristic_boosts_well_connected_symbols():
    candidates = ranked([chunk("five", references=5), chunk("six", references=6)], [0.6, 0.5])
    result = by_name(strategy("heuristic").rerank(request("nothing", candidates)))
    assert result["five"].score == pytest.approx(0.6)
    assert result["six"].score == pytest.approx(0.5 + 0.2)


# --- metadata (hybrid-fusion-and-metadata-reranking.md) -------------------------------------------

def metadata_candidates():
    return ranked([
        chunk("search", kind="function"),
        chunk("SqliteChunkStore", kind="class", bases=("store.ChunkStore",)),
        chunk("MemoryStore", kind="class", bases=("ChunkStore[Chunk]", "abc.ABC")),
        chunk("Embedder", kind="protocol"),
        chunk("ChunkStore", kind="protocol"),
    ], [0.60, 0.55, 0.50, 0.48, 0.45])


def test_metadata_boosts_the_named_protocol_by_1_3():
    result = strategy("metadata").rerank(request("ChunkStore protocol", metadata_candidates()))
    found = by_name(result)
    assert found["ChunkStore"].score == pytest.approx(0.45 * 1.3)
    assert found["Embedder"].score == 0.48  # another protocol, not the one asked for
    assert names(result)[0] == "search"  # 0.585 < 0.60: a boost, not a jump to the top
    assert names(result).index("ChunkStore") < names(result).index("SqliteChunkStore")


def test_metadata_boosts_every_protocol_when_none_is_named():
    found = by_name(strategy("metadata").rerank(request("which interfaces exist", metadata_candidates())))
    assert found["ChunkStore"].score == pytest.approx(0.45 * 1.3)
    assert found["Embedder"].score == pytest.approx(0.48 * 1.3)
    assert found["search"].score == 0.60


@pytest.mark.parametrize("query", ["what implements ChunkStore", "classes that conform to ChunkStore",
                                   "subclasses of chunkstore", "who inherits from the ChunkStore"])
def test_metadata_boosts_implementations_by_1_5(query):
    result = strategy("metadata").rerank(request(query, metadata_candidates()))
    found = by_name(result)
    assert names(result)[:2] == ["SqliteChunkStore", "MemoryStore"]
    assert found["SqliteChunkStore"].score == pytest.approx(0.55 * 1.5)
    assert found["MemoryStore"].score == pytest.approx(0.50 * 1.5)
    assert found["ChunkStore"].score == 0.45


def test_metadata_without_intent_keeps_the_order():
    candidates = metadata_candidates()
    assert scored(strategy("metadata").rerank(request("how are chunks saved", candidates))) == scored(candidates)


def test_metadata_intent_detection():
    assert detect_intent("protocol ChunkStore").kind == "protocol"
    assert detect_intent("interface for storage").target == "storage"
    assert detect_intent("what extends abc.ABC").target == "abc"
    assert detect_intent("how does search work") is None


def test_candidate_pools():
    """max(50, 5 x top_k) by default; heuristic, keyword-boost and rrf keep 2 x top_k (measured); the
    cross-encoder its own pool."""
    assert strategy("none").pool_size(10) == 50 and strategy("hybrid").pool_size(20) == 100
    assert strategy("hybrid", candidate_pool_min=1, candidate_pool_factor=2).pool_size(10) == 20
    assert [strategy(n).pool_size(10) for n in ("heuristic", "keyword-boost", "rrf")] == [20, 20, 20]
    assert strategy("metadata").pool_size(10) == 50
    assert strategy("cross-encoder").pool_size(10) == 50
