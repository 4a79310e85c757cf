"""Evaluation: formats, hand-computed metric values, labels, and `eval` end to end on a tiny corpus."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from services.core.labelled import LabelledQuery, RelevantItem, load_queries
from services.evaluation.formats import (
    CorpusDocIds, CorpusItem, WorkspaceDocIds, load_corpus, load_qrels, materialise_corpus, qrels_from_queries,
    ranked_doc_ids,
)
from services.evaluation.metrics import compute_metrics, percentile
from services.evaluation.report import EvalReport, StrategyReport, format_table
from services.storage.labels import default_labels_file, labels_for, query_id, record_label
from services.core.models import Chunk, QueryResult, ResultChunk


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
    cosqa = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "cosqa"  # shared/ beside the repo
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


# --------------------------------------------------------------------------- end to end (real model, real Chroma)

CORPUS = [
    ("c-sum", "def sum_list(values):\n    \"\"\"Add up all numbers in a list.\"\"\"\n    total = 0\n"
              "    for v in values:\n        total += v\n    return total"),
    ("c-reverse", "def reverse_string(text):\n    \"\"\"Return the string reversed.\"\"\"\n    return text[::-1]"),
    ("c-read", "def read_json_file(path):\n    \"\"\"Load a JSON document from a file on disk.\"\"\"\n"
               "    import json\n    with open(path) as f:\n        return json.load(f)"),
    ("c-sleep", "def wait_seconds(n):\n    \"\"\"Pause the program for n seconds.\"\"\"\n    import time\n"
                "    time.sleep(n)"),
    ("c-upper", "def shout(text):\n    \"\"\"Convert text to upper case letters.\"\"\"\n    return text.upper()"),
    ("c-prime", "def is_prime(n):\n    \"\"\"Check whether a number is prime.\"\"\"\n    if n < 2:\n        return False\n"
                "    return all(n % d for d in range(2, int(n ** 0.5) + 1))"),
    ("c-http", "def fetch_url(url):\n    \"\"\"Download a web page over HTTP.\"\"\"\n    import urllib.request\n"
               "    return urllib.request.urlopen(url).read()"),
    ("c-sort", "def sort_by_age(people):\n    \"\"\"Sort a list of people dictionaries by their age.\"\"\"\n"
               "    return sorted(people, key=lambda p: p['age'])"),
]
QUERIES = [("q1", "python check if number is prime", "c-prime"),
           ("q2", "how to reverse a string in python", "c-reverse"),
           ("q3", "python load json from file", "c-read"),
           ("q4", "python sleep for some seconds", "c-sleep")]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    import os
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from services.engine.service import LocalEngine
    from services.core.settings import Settings
    svc = LocalEngine(Settings(), data_dir=tmp_path_factory.mktemp("data"))
    yield svc
    svc.close()


def _eval_args(*argv):
    import argparse
    from app.eval_command import add_eval_parser
    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["eval", *argv])


@pytest.mark.slow
async def test_eval_on_a_tiny_corpus_reports_every_available_strategy(service, tmp_path, capsys):
    from app.eval_command import run_eval_command
    corpus, queries, qrels = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"
    corpus.write_text("".join(json.dumps({"id": i, "code": c, "language": "python"}) + "\n" for i, c in CORPUS))
    queries.write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t, _ in QUERIES))
    qrels.write_text("query_id\tdoc_id\trelevance\n" + "".join(f"{q}\t{d}\t1\n" for q, _, d in QUERIES))

    code = await run_eval_command(_eval_args("--queries", str(queries), "--qrels", str(qrels),
                                             "--corpus", str(corpus), "--json"), service)
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 4 and data["documents"] == 8
    available = {s.name for s in await service.strategies() if s.available}
    assert set(data["strategies"]) == available
    assert {"none", "hybrid", "rrf", "keyword-boost", "heuristic", "metadata"} <= available
    for name, row in data["strategies"].items():
        assert set(row) >= {"mrr@10", "ndcg@10", "p@5", "r@10", "r@100", "latency_ms_p50", "latency_ms_p95"}
        assert row["r@100"] == 1.0, name  # 8 documents, ranking depth 100: every relevant one is found
        assert 0 < row["latency_ms_p50"] <= row["latency_ms_p95"]
    assert data["strategies"]["none"]["mrr@10"] >= 0.75  # these questions are easy for the model
    assert (service.data_dir / "corpora").is_dir()

    code = await run_eval_command(_eval_args("--queries", str(queries), "--qrels", str(qrels), "--corpus",
                                             str(corpus), "--strategies", "none,rrf", "--limit", "2"), service)
    out = capsys.readouterr().out
    assert code == 0
    assert "| rrf |" in out and "| hybrid |" not in out and "2 queries, 8 documents" in out


@pytest.mark.slow
async def test_eval_on_a_workspace_with_labelled_symbols(service, tmp_path, capsys):
    from app.eval_command import run_eval_command
    workspace = tmp_path / "ws"
    (workspace / "text").mkdir(parents=True)
    (workspace / "text" / "strings.py").write_text("\n\n".join(c for i, c in CORPUS[1:5:3]) + "\n")
    (workspace / "maths.py").write_text("\n\n".join(c for i, c in CORPUS if i in ("c-sum", "c-prime")) + "\n")
    (workspace / "io.py").write_text("\n\n".join(c for i, c in CORPUS if i in ("c-read", "c-http")) + "\n")
    queries = tmp_path / "labels.jsonl"
    record_label(queries, "check whether a number is prime", "maths.py", "is_prime", True)
    record_label(queries, "check whether a number is prime", "maths.py", "sum_list", False)
    record_label(queries, "download a web page", "io.py", "", True)

    code = await run_eval_command(_eval_args("--queries", str(queries), "--workspace", str(workspace),
                                             "--strategies", "none", "--json"), service)
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["queries"] == 2 and data["documents"] == 3
    assert data["strategies"]["none"]["mrr@10"] == 1.0


@pytest.mark.slow
async def test_eval_reports_a_failing_strategy_as_failed_and_measures_the_others(service, tmp_path, capsys,
                                                                                 monkeypatch):
    """A strategy whose code raises (as `tuned` did on sympy: "too many SQL variables") is reported with its
    error; `none` and `rrf` are still measured, in the table and in JSON, and the exit status says so."""
    from app.eval_command import run_eval_command
    from services.retrieval.strategies import base

    class Crashing(base.BaseStrategy):  # a real strategy in the real engine, whose reranking raises
        name, label, description = "crashing", "Crashing", "raises on every question"

        def rerank(self, request):
            raise RuntimeError("too many SQL variables")

    monkeypatch.setitem(base._REGISTRY, "crashing", Crashing)  # registered for this test only
    corpus, queries, qrels = tmp_path / "corpus.jsonl", tmp_path / "queries.jsonl", tmp_path / "qrels.tsv"
    corpus.write_text("".join(json.dumps({"id": i, "code": c, "language": "python"}) + "\n" for i, c in CORPUS))
    queries.write_text("".join(json.dumps({"id": q, "text": t}) + "\n" for q, t, _ in QUERIES))
    qrels.write_text("query_id\tdoc_id\trelevance\n" + "".join(f"{q}\t{d}\t1\n" for q, _, d in QUERIES))
    args = ("--queries", str(queries), "--qrels", str(qrels), "--corpus", str(corpus), "--strategies", "crashing,rrf")

    assert await run_eval_command(_eval_args(*args, "--json"), service) == 1
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert set(data["strategies"]) == {"none", "rrf"} and data["queries"] == 4
    assert data["strategies"]["rrf"]["mrr@10"] > 0 and data["recommended"]["strategy"] in ("none", "rrf")
    assert data["failed"] == {"crashing": "RuntimeError: too many SQL variables"}
    assert "eval: strategy crashing failed: RuntimeError: too many SQL variables" in out.err

    assert await run_eval_command(_eval_args(*args), service) == 1
    table = capsys.readouterr().out
    assert "| rrf |" in table and "crashing: FAILED (RuntimeError: too many SQL variables)" in table


async def test_eval_explains_bad_input(service, tmp_path, capsys):
    from app.eval_command import run_eval_command
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q1", "text": "unlabelled"}) + "\n")
    code = await run_eval_command(_eval_args("--queries", str(queries), "--workspace", str(tmp_path)), service)
    assert code == 2
    assert "no query has a relevant document" in capsys.readouterr().err


def test_default_labels_file_lives_in_the_data_dir_one_per_workspace(tmp_path):
    first = default_labels_file(tmp_path / "data", tmp_path / "a" / "proj")
    assert first.parent == tmp_path / "data" / "labels" and first.name.startswith("proj-")
    assert default_labels_file(tmp_path / "data", tmp_path / "b" / "proj") != first
    assert default_labels_file(tmp_path / "data", str(tmp_path / "a" / "proj")) == first
