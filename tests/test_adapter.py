"""The label adapter: training, held-out scoring, per-workspace persistence, the `tuned` strategy."""

from __future__ import annotations

import numpy as np
import pytest

from services.retrieval.strategies import query_adapter as adapter
from services.core.labelled import load_queries
from services.evaluation.formats import qrels_from_queries
from services.evaluation.runner import evaluate
from services.storage.labels import default_labels_file, record_label
from services.core.models import QueryOptions


def _skewed_task(n_docs=150, dim=24, seed=1):
    """Questions whose vectors are a fixed linear distortion of their answer's vector, plus noise:
    the plain search confuses them, a linear map on the question can undo the distortion."""
    rng = np.random.default_rng(seed)
    docs = rng.normal(size=(n_docs, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    distortion = np.eye(dim) + 2.0 * rng.normal(size=(dim, dim)) / np.sqrt(dim)
    queries = docs @ distortion.T + 0.3 * rng.normal(size=docs.shape)
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    positives = [np.array([i]) for i in range(n_docs)]
    return queries, positives, docs, np.arange(n_docs)


def test_mrr_counts_files_once_and_only_the_top_ten():
    docs = np.eye(12, dtype=np.float32)
    groups = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])  # chunks 0 and 1 are one file
    query = (docs[0] * 1.0 + docs[1] * 0.9 + docs[2] * 0.8)[None, :]
    assert adapter.mrr_at_10(query, [np.array([2])], docs, groups) == pytest.approx(0.5)
    far = np.array([11])  # its file is the 11th distinct file at best: beyond the top ten
    assert adapter.mrr_at_10(np.ones((1, 12), np.float32) - docs[11], [far], docs, groups) == 0.0


def test_adapter_learns_a_distortion_and_its_held_out_gain_is_measured():
    queries, positives, docs, groups = _skewed_task()
    train, test = np.arange(100), np.arange(100, 150)
    fitted = adapter.fit(queries[train], [positives[i] for i in train], docs, groups)
    held = fitted.held_out
    assert held.queries == 100 and held.folds == adapter.FOLDS
    assert held.useful and held.mrr_tuned > held.mrr_none + 0.05
    test_positives = [positives[i] for i in test]
    plain = adapter.mrr_at_10(queries[test], test_positives, docs, groups)
    tuned = adapter.mrr_at_10(fitted.apply(queries[test]), test_positives, docs, groups)
    assert tuned > plain + 0.05  # on questions it never saw


def test_no_gain_to_find_means_not_useful():
    rng = np.random.default_rng(3)
    docs = rng.normal(size=(60, 16)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    positives = [np.array([rng.integers(60)]) for _ in range(30)]  # random labels: nothing to learn
    queries = rng.normal(size=(30, 16)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    held = adapter.cross_validate(queries, positives, docs, np.arange(60))
    assert held.mrr_none < 0.5
    assert not adapter.HeldOut(30, 5, held.mrr_none, held.mrr_none).useful  # equal to none is not enough


def test_adapter_saves_and_loads(tmp_path):
    saved = adapter.Adapter(np.eye(4, dtype=np.float32) * 2, adapter.HeldOut(12, 5, 0.5, 0.4), "abc")
    saved.save(tmp_path / "a" / adapter.ADAPTER_FILE)
    loaded = adapter.Adapter.load(tmp_path / "a" / adapter.ADAPTER_FILE)
    assert loaded.stamp == "abc" and loaded.held_out == saved.held_out
    assert np.array_equal(loaded.matrix, saved.matrix)
    (tmp_path / "bad.npz").write_bytes(b"not numpy")
    assert adapter.Adapter.load(tmp_path / "bad.npz") is None


# --------------------------------------------------------------------------- on a real workspace

LABELS = [  # question, relevant file in tests/sample_workspace
    ("where are notes written to disk", "notes/store.py"),
    ("save a note as a json file atomically", "notes/store.py"),
    ("keep notes in memory for tests", "notes/store.py"),
    ("split a search query into keywords", "notes/search.py"),
    ("rank notes by how many keywords match", "notes/search.py"),
    ("the note data class with a title and tags", "notes/models.py"),
    ("check that a note title is valid", "notes/models.py"),
    ("inverted index from words to note ids", "go/index/index.go"),
    ("react component that lists notes", "web/src/NoteList.tsx"),
    ("export notes as markdown", "csharp/NoteService.cs"),
    ("tokenizer that drops stop words", "rust/src/lib.rs"),
    ("store note chunks on disk in swift", "swift/Sources/Notes/DiskChunkStore.swift"),
    ("in memory repository of notes in java", "java/src/main/java/notes/InMemoryNoteRepository.java"),
]

BUG_REPORT = '''SearchEngine.score crashes when a note has no tags

Searching for anything after adding an untagged note fails:

```
Traceback (most recent call last):
  File "/home/me/app/notes/search.py", line 47, in score
    hits = sum(1 for k in keywords if k in note.tags)
TypeError: 'NoneType' object is not iterable
```
'''


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from tests.conftest import indexed_sample

    yield from indexed_sample(tmp_path_factory.mktemp("adapter"))


def _label(service, workspace, pairs):
    labels = default_labels_file(service.data_dir, workspace)
    for question, path in pairs:
        record_label(labels, question, path, "", True)
    return labels


@pytest.mark.slow
async def test_tuned_strategy_trains_per_workspace_and_keeps_its_adapter(indexed):
    service, workspace = indexed
    options = QueryOptions(workspace=str(workspace), strategy="tuned", top_k=5, use_cache=False)
    _label(service, workspace, LABELS[:3])
    result = await service.query("where are notes saved", options)
    assert not result.reranked and "needs 10 questions" in result.fallback_reason  # too few labels yet

    _label(service, workspace, LABELS[3:12])
    result = await service.query("where are notes saved", options)  # answered at once, trained in the background
    assert not result.reranked and "being trained on your 12 labelled questions" in result.fallback_reason
    assert result.results  # the vector ranking answers meanwhile
    assert adapter.wait_for_training(120)
    result = await service.query("where are notes saved", options)
    stored = service.workspace_index(workspace).folder / adapter.ADAPTER_FILE
    assert stored.exists()
    saved = adapter.Adapter.load(stored)
    assert saved.held_out.queries == 12 and saved.held_out.folds == adapter.FOLDS
    if saved.held_out.useful:  # used only when it beat the vector ranking on held-out questions
        assert result.reranked and result.results[0].score > 0
    else:
        assert not result.reranked and "held-out" in result.fallback_reason
    first_write = stored.stat().st_mtime_ns

    await service.query("rank notes by keywords", options)  # same labels: loaded, not retrained
    assert stored.stat().st_mtime_ns == first_write
    _label(service, workspace, LABELS[12:])
    await service.query("rank notes by keywords", options)  # a new label: retrained
    assert adapter.wait_for_training(120) and adapter.Adapter.load(stored).held_out.queries == 13


@pytest.mark.slow
async def test_eval_on_the_labelled_sample_workspace_runs_the_new_strategies(indexed, tmp_path):
    service, workspace = indexed
    labels = tmp_path / "labels.jsonl"
    for question, path in LABELS:
        record_label(labels, question, path, "", True)
    record_label(labels, BUG_REPORT, "notes/search.py", "SearchEngine.score", True)
    queries = load_queries(labels)
    report = await evaluate(service, queries, qrels_from_queries(queries), ["none", "bug-report", "tuned"],
                            workspace, top_k=20)
    assert set(report.strategies) == {"none", "bug-report", "tuned"}
    bug_id = next(q.id for q in queries if q.text == BUG_REPORT.strip())
    assert report.rankings["bug-report"][bug_id][0] == "notes/search.py::SearchEngine.score"
    for question, _ in LABELS:  # short questions: bug-report keeps the vector ranking
        qid = next(q.id for q in queries if q.text == question)
        assert report.rankings["bug-report"][qid] == report.rankings["none"][qid]


@pytest.mark.slow
async def test_bug_report_signals_explain_its_scores(indexed):
    service, workspace = indexed
    options = QueryOptions(workspace=str(workspace), top_k=10, strategy="bug-report", min_relevance=0.0,
                           use_cache=False)
    ranked = (await service.query(BUG_REPORT, options)).results
    top = ranked[0]
    assert top.chunk.qualified_name == "SearchEngine.score"
    names = {s.name for s in top.signals}
    # it defines `score` and lives in the file of the traceback
    assert {"defines a name the question uses", "in a file the question names"} <= names
    for candidate in ranked:  # applying the signals in order reproduces the score
        assert sum(s.contribution for s in candidate.signals) == pytest.approx(candidate.score)
