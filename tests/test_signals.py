"""Every strategy explains each score: applying a result's signals in order gives its reranked score,
and the signals name what a user would look for (exact name, BM25 rank, implements X, stub...)."""

from __future__ import annotations

import pytest

from services.retrieval.strategies import create_strategy
from services.retrieval.strategies._ranking import apply_signals
from services.core.settings import Settings
from tests.helpers.reranking import by_name, chunk, keyword_hits, ranked, request

OFFLINE = ["none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata"]


def strategy(name: str):
    return create_strategy(name, Settings())


def notes_request(query: str):
    """Candidates with names, docstrings, bases, a stub and a much-referenced symbol; BM25 finds one more."""
    chunks = [
        chunk("NoteStore", kind="interface", docstring="Stores notes."),
        chunk("FileNoteStore", kind="class", bases=("NoteStore",), docstring="Saves notes as files."),
        chunk("save_note", references=9, docstring="Save a note to the store."),
        chunk("stub", "def stub(): pass"),
        chunk("render_note"),
    ]
    candidates = ranked(chunks, [0.62, 0.55, 0.51, 0.44, 0.40])
    only_bm25 = chunk("MemoryNoteStore", kind="class", bases=("NoteStore",))
    hits = keyword_hits([chunks[1], only_bm25, chunks[0]], [7.5, 6.0, 2.0], candidates)
    return request(query, candidates, hits)


QUERIES = ["what implements the NoteStore interface", "note store", "save note", "NoteStore",
           "zzz nothing matches"]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("name", OFFLINE)
def test_signals_reproduce_every_reranked_score(name, query):
    result = strategy(name).rerank(notes_request(query))
    assert result
    for candidate in result:
        assert candidate.signals, f"{name} gave {candidate.chunk.symbol} no explanation"
        assert apply_signals(candidate.signals) == pytest.approx(candidate.score, abs=1e-12)


def test_heuristic_names_its_boosts():
    result = by_name(strategy("heuristic").rerank(notes_request("NoteStore")))
    signals = {s.name: s.contribution for s in result["NoteStore"].signals}
    assert signals == {"cosine similarity": 0.62, "exact name": 2.0, "'notestore' in the name": 0.5}
    assert {s.name: s.contribution for s in result["stub"].signals}["stub"] == -0.3
    assert {s.name: s.contribution for s in result["save_note"].signals}["much referenced"] == 0.2


def test_metadata_multiplies_what_implements_the_named_type():
    result = by_name(strategy("metadata").rerank(notes_request("what implements the NoteStore interface")))
    boost = result["FileNoteStore"].signals[-1]
    assert (boost.name, boost.op, boost.contribution) == ("implements notestore", "mul", 1.5)
    assert [s.name for s in result["render_note"].signals] == ["cosine similarity"]


def test_hybrid_shows_both_rankings_and_the_scaling():
    result = by_name(strategy("hybrid").rerank(notes_request("note store")))
    names = [s.name for s in result["FileNoteStore"].signals]
    assert names[:4] == ["vector rank 2", "vector score 0.55", "BM25 rank 1", "BM25 score 7.5"]
    assert names[-1] == "minus the weakest candidate"
    bm25_only = [s.name for s in result["MemoryNoteStore"].signals]
    assert not any(n.startswith("vector") for n in bm25_only) and "BM25 rank 2" in bm25_only


def test_keyword_boost_shows_each_keyword_and_the_cap():
    many = "alpha beta gamma delta epsilon zeta eta"
    candidates = ranked([chunk("c", f"def c():\n    return '{many}'\n" + "x = 1\n" * 5)], [0.5])
    (only,) = strategy("keyword-boost").rerank(request(many, candidates))
    names = [s.name for s in only.signals]
    assert names[0] == "cosine similarity" and "exact phrase" in names and "keyword 'alpha'" in names
    assert names[-1] == "boost capped at +0.3"
    assert only.score == pytest.approx(0.8)


def test_rrf_shows_vector_and_keyword_ranks():
    result = strategy("rrf").rerank(notes_request("save note"))
    top = result[0]
    assert top.signals[0].name.startswith("vector rank ") and top.signals[1].name.startswith("keyword rank ")
    assert top.score == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["hybrid", "metadata"])
def test_path_prior_demotes_tests_docs_and_examples(name):
    code = chunk("save_note", path="src/notes/store.py")
    test = chunk("test_save_note", path="tests/test_store.py")
    doc = chunk("guide", path="project/docs/guide.py")
    far = chunk("unrelated", path="src/other.py")
    candidates = ranked([test, doc, code, far], [0.60, 0.59, 0.58, 0.30])
    req = request("save a note", candidates, keyword_hits([test, doc, code, far], [3.0, 2.9, 2.8, 0.5], candidates))
    off = create_strategy(name, Settings().with_changes(path_prior_factor=1.0)).rerank(req)
    assert [c.chunk.symbol for c in off][0] == "test_save_note"
    on = create_strategy(name, Settings().with_changes(path_prior_factor=0.8)).rerank(req)
    assert [c.chunk.symbol for c in on][0] == "save_note"
    demoted = by_name(on)["guide"].signals
    assert any(s.name == "demoted path" and "docs/*" in s.note for s in demoted)
    assert all(apply_signals(c.signals) == pytest.approx(c.score, abs=1e-12) for c in on)
