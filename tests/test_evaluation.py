"""Evaluation: formats, hand-computed metric values, labels, and `eval` end to end on a tiny corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from services.evaluation import (
    CorpusDocIds, CorpusItem, EvalReport, LabelledQuery, RelevantItem, StrategyReport, WorkspaceDocIds,
    compute_metrics, format_table, load_corpus, load_qrels, load_queries, materialise_corpus, percentile,
    qrels_from_queries, ranked_doc_ids,
)
from services.labels import labels_for, query_id, record_label
from services.models import Chunk, QueryResult, ResultChunk


# --------------------------------------------------------------------------- metrics by hand

def test_relevant_document_at_rank_two():
    m = compute_metrics({"q": {"b": 1}}, {"q": ["a", "b", "c"]})
    assert m["mrr@10"] == pytest.approx(0.5)
    assert m["ndcg@10"] == pytest.approx(1 / math.log2(3))  # DCG 1/log2(3), ideal DCG 1
    assert m["p@5"] == pytest.approx(1 / 5)
    assert m["r@10"] == pytest.approx(1.0)
    assert m["r@100"] == pytest.approx(1.0)


def test_two_relevant_documents_at_ranks_one_and_three():
    m = compute_metrics({"q": {"a": 1, "c": 1}}, {"q": ["a", "b", "c", "d"]})
    assert m["mrr@10"] == pytest.approx(1.0)
    assert m["ndcg@10"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))  # 0.9197
    assert m["p@5"] == pytest.approx(2 / 5)


def test_graded_relevance_uses_the_grade_as_gain():
    m = compute_metrics({"q": {"a": 1, "b": 2}}, {"q": ["a", "b"]})
    assert m["ndcg@10"] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))  # 0.8597


def test_relevant_document_beyond_ten_counts_only_for_recall_at_100():
    ranking = [f"x{i}" for i in range(10)] + ["hit"]
    m = compute_metrics({"q": {"hit": 1}}, {"q": ranking})
    assert m["mrr@10"] == 0.0 and m["r@10"] == 0.0
    assert m["r@100"] == pytest.approx(1.0)


def test_means_over_queries_and_a_missing_ranking_scores_zero():
    m = compute_metrics({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": ["a"]})
    assert m["mrr@10"] == pytest.approx(0.5)  # (1 + 0) / 2


def test_judged_not_relevant_documents_do_not_count():
    m = compute_metrics({"q": {"a": 0, "b": 1}}, {"q": ["a", "b"]})
    assert m["mrr@10"] == pytest.approx(0.5)


def test_percentiles():
    assert percentile([10, 20, 30, 40, 50], 50) == 30
    assert percentile([10, 20], 95) == pytest.approx(19.5)
    assert percentile([], 50) == 0.0


# --------------------------------------------------------------------------- formats

def test_qrels_tsv_needs_header_and_reads_grades(tmp_path):
    path = tmp_path / "qrels.tsv"
    path.write_text("query_id\tdoc_id\trelevance\nq1\td1\t1\nq1\td2\t2\nq2\td3\t0\n")
    assert load_qrels(path) == {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 0}}
    path.write_text("q1\td1\t1\n")
    with pytest.raises(ValueError, match="header"):
        load_qrels(path)


def test_labelled_queries_give_qrels_by_path_and_symbol(tmp_path):
    path = tmp_path / "queries.jsonl"
    lines = [
        {"id": "q1", "text": "save a note", "relevant": [{"path": "store.py", "symbol": "save", "grade": 2},
                                                         {"path": "README.md"}]},
        {"id": "q2", "text": "no labels yet"},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    queries = load_queries(path)
    assert queries[0].relevant[0] == RelevantItem("store.py", "save", 2)
    assert queries[1].relevant == ()
    assert qrels_from_queries(queries) == {"q1": {"store.py::save": 2, "README.md": 1}}


def test_cosqa_files_load():
    cosqa = Path("/work/shared/benchmarks/cosqa")
    if not cosqa.exists():
        pytest.skip("CoSQA data not present")
    assert len(load_queries(cosqa / "queries_dev.jsonl")) == 500
    qrels = load_qrels(cosqa / "qrels_dev.tsv")
    assert len(qrels) == 500 and qrels["cosqa-train-8333"] == {"cosqa-code-1640": 1}


def test_corpus_items_become_one_file_each_with_stable_names(tmp_path):
    items = [CorpusItem("c/1", "def a():\n    return 1", "python"), CorpusItem("c-2", "fn b() {}", "rust"),
             CorpusItem("c_1", "x", "cobol")]
    mapping = materialise_corpus(items, tmp_path / "ws")
    assert mapping == {"c_1.py": "c/1", "c-2.rs": "c-2", "c_1.txt": "c_1"}
    assert (tmp_path / "ws" / "c_1.py").read_text() == "def a():\n    return 1\n"
    before = (tmp_path / "ws" / "c_1.py").stat().st_mtime_ns
    assert materialise_corpus(items, tmp_path / "ws") == mapping
    assert (tmp_path / "ws" / "c_1.py").stat().st_mtime_ns == before  # untouched: re-index stays incremental


def test_load_corpus_reads_cosqa_style_lines(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"id": "c0", "func_name": "f", "code": "def f(): pass", "language": "python"}) + "\n")
    assert load_corpus(path) == [CorpusItem("c0", "def f(): pass", "python", "f")]


# --------------------------------------------------------------------------- results -> doc ids

def _chunk(path, symbol="", qualified=""):
    return Chunk(path=path, language="python", start_line=1, end_line=2, content="x", symbol=symbol,
                 qualified_name=qualified or symbol, kind="function" if symbol else "module")


def _result(chunks):
    rows = [ResultChunk(chunk=c, rank=i, score=1 / i, original_rank=i, original_score=1 / i)
            for i, c in enumerate(chunks, 1)]
    return QueryResult("q", "none", rows, rows, [], len(rows), len(rows), False, None, False, {})


def test_a_file_found_by_several_chunks_keeps_its_best_rank():
    result = _result([_chunk("b.py", "f"), _chunk("a.py", "g"), _chunk("b.py", "h"), _chunk("c.py")])
    ids = ranked_doc_ids("q", result, CorpusDocIds({"a.py": "A", "b.py": "B", "c.py": "C"}))
    assert ids == ["B", "A", "C"]


def test_workspace_doc_ids_follow_the_granularity_of_the_judgements():
    qrels = {"files": {"a.py": 1}, "symbols": {"a.py::Store.save": 1}}
    mapper = WorkspaceDocIds(qrels)
    save = _chunk("a.py", "save", "Store.save")
    other = _chunk("b.py", "load")
    assert mapper("files", save) == "a.py"
    assert mapper("files", other) == "b.py"
    assert mapper("symbols", save) == "a.py::Store.save"
    assert mapper("symbols", other) == "b.py::load"
    assert mapper("symbols", _chunk("a.py")) == "a.py"


def test_table_shows_change_against_none():
    base = StrategyReport("none", {"mrr@10": 0.5, "ndcg@10": 0.5, "p@5": 0.1, "r@10": 0.6, "r@100": 0.9},
                          [10.0, 12.0])
    better = StrategyReport("hybrid", {"mrr@10": 0.6, "ndcg@10": 0.55, "p@5": 0.1, "r@10": 0.7, "r@100": 0.9},
                            [20.0, 30.0])
    report = EvalReport({"none": base, "hybrid": better}, queries=2, documents=5,
                        skipped={"cross-encoder": "model not installed"})
    table = format_table(report)
    assert "| hybrid | 0.600 (+0.100) |" in table
    assert "cross-encoder: not run (model not installed)" in table
    data = report.to_json()
    assert data["strategies"]["hybrid"]["latency_ms_p50"] == 25.0
    assert data["queries"] == 2 and data["documents"] == 5


# --------------------------------------------------------------------------- labels

def test_labels_append_and_update_with_stable_ids(tmp_path):
    file = tmp_path / "labels" / "queries.jsonl"
    first = record_label(file, "How do I save a note?", "store.py", "save", True)
    assert first.id == query_id("how do i  save a note?")
    record_label(file, "how do I save a note?", "db.py", "", False)
    record_label(file, "How do I save a note?", "store.py", "save", False)  # changed my mind
    record_label(file, "load notes", "store.py", "load", True)
    queries = load_queries(file)
    assert [q.text for q in queries] == ["How do I save a note?", "load notes"]
    assert set(queries[0].relevant) == {RelevantItem("store.py", "save", 0), RelevantItem("db.py", "", 0)}
    assert labels_for(file, "LOAD notes") == {("store.py", "load"): 1}
    assert qrels_from_queries(queries)[queries[1].id] == {"store.py::load": 1}


def test_labels_never_label_an_empty_question(tmp_path):
    with pytest.raises(ValueError):
        record_label(tmp_path / "q.jsonl", "   ", "a.py", "", True)
    assert not (tmp_path / "q.jsonl").exists()


def test_labelled_query_round_trips_through_json():
    query = LabelledQuery("q1", "t", (RelevantItem("a.py", "f", 2), RelevantItem("b.md")))
    assert query.to_json() == {"id": "q1", "text": "t", "relevant": [
        {"path": "a.py", "symbol": "f", "grade": 2}, {"path": "b.md", "grade": 1}]}
