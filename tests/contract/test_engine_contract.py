"""One contract for the three ways to reach the engine: in process, an engine process, a server.

Every test taking `subject` runs against all three (tests/contract/conftest.py); the same index gives
the same answers whichever way the call travels, and every error arrives as the same class."""

from __future__ import annotations

import inspect
from pathlib import Path
import pickle

import pytest

from services.core import codec
from services.core.errors import (
    ERRORS, EngineUnreachable, IndexBusyError, IndexMissingError, KnowledgeError, QueryError, WorkspaceError,
    error_from,
)
from services.core.models import QueryOptions
from services.engine.protocol import Engine, engine_methods
from services.engine.service import LocalEngine
from services.storage import labels
from services.core.models import PAUSED, RESUMED, WATCHING
from services.transport.engine_process import EngineProcess
from services.transport.remote import RemoteEngine
from tests.contract.conftest import KINDS, busy_engine
from tests.helpers.waiting import wait_for
from tests.helpers.workspaces import QUESTION, small_workspaces

pytestmark = pytest.mark.slow

PROTOCOL = list(engine_methods())
QUESTIONS = [("what implements ChunkStore", "metadata"), ("save a note", "hybrid"), ("parse front matter", "none")]


# --- the protocol itself ---
@pytest.mark.parametrize("cls", [LocalEngine, EngineProcess, RemoteEngine], ids=lambda c: c.__name__)
def test_each_engine_class_has_every_protocol_method_with_the_same_signature(cls):
    assert len(PROTOCOL) == 19  # set_owner_url is the server's alone (ServedEngine)
    for name in PROTOCOL:
        expected, actual = getattr(Engine, name), getattr(cls, name)
        assert inspect.signature(actual) == inspect.signature(expected), f"{cls.__name__}.{name}"
        assert inspect.iscoroutinefunction(actual) == inspect.iscoroutinefunction(expected), name


def test_the_error_table_rebuilds_every_class_from_its_code():
    assert len({cls.code for cls in ERRORS.values()}) == len(ERRORS)
    for code, cls in ERRORS.items():
        error = error_from(code, "message")
        assert type(error) is cls and str(error) == "message" and 400 <= cls.status < 600
    assert ERRORS["data_dir_busy"] is IndexBusyError and type(error_from("no_such_code", "m")) is KnowledgeError
    busy = pickle.loads(pickle.dumps(IndexBusyError("busy", owner="someone")))  # crosses the engine pipe
    assert (str(busy), busy.owner) == ("busy", "someone")


async def test_an_unreachable_server_is_reported_as_such():
    engine = RemoteEngine("http://127.0.0.1:9")  # the discard port: nothing answers
    try:
        with pytest.raises(EngineUnreachable, match="Cannot reach the engine"):
            await engine.strategies()
    finally:
        engine.close()


# --- every method, on every engine ---
async def test_is_an_engine_and_indexing_again_changes_nothing(subject):
    engine, workspace = subject.engine, subject.workspace
    assert isinstance(engine, Engine)
    events = []
    report = await engine.index(workspace, progress=events.append)
    health = await engine.health(workspace)
    assert report.files_indexed == 0 and report.files_unchanged == health.files > 5 and not report.cancelled
    assert events and events[-1].phase == "done"
    assert health.indexed and health.chunks == report.chunks_total > 50 and not health.stale_files


async def test_query_and_what_is_built_on_it(subject):
    engine, workspace = subject.engine, subject.workspace
    result = await engine.query("what implements ChunkStore",
                                QueryOptions(workspace=str(workspace), strategy="metadata", top_k=3))
    assert result.reranked and result.results[0].chunk.symbol in {"MemoryChunkStore", "DiskChunkStore"}
    assert [r.original_rank for r in result.original] == [1, 2, 3]
    answer = await engine.find_files("save a note to disk", QueryOptions(workspace=str(workspace), strategy="none"), max_files=3)
    assert answer.files[0].path == "notes/store.py" and [f.rank for f in answer.files] == [1, 2, 3]
    assert answer.files[0].chunks and {"bm25", "chunks"} <= {s.name for s in answer.files[0].signals}
    assert answer.history == "not a git repository" and answer.original[0] == "notes/store.py"
    assert "ChunkStore" in await engine.symbol_names(workspace)


async def test_go_to_symbol_and_file(subject):
    """Issue 30's cases: a name defined twice, a dotted method, a path with a line, a name that does not
    exist, names in other languages than Python."""
    engine, workspace = subject.engine, subject.workspace
    twice = await engine.goto_symbols("Note", workspace)
    assert [(h.path, h.kind) for h in twice.hits[:2]] == [("notes/models.py", "class"),
                                                         ("java/src/main/java/notes/Note.java", "class")]
    assert {h.language for h in twice.hits[:2]} == {"python", "java"} and twice.hits[0].start_line == 12
    dotted = await engine.goto_symbols("NoteStore.save", workspace)
    assert (dotted.hits[0].path, dotted.hits[0].start_line, dotted.hits[0].end_line) == ("notes/store.py", 19, 21)
    assert dotted.hits[0].label == "NoteStore.save" and dotted.hits[0].positions == tuple(range(14))
    go = (await engine.goto_symbols("InvertedIndex", workspace, limit=1)).hits
    assert [(h.path, h.kind, h.language) for h in go] == [("go/index/index.go", "struct", "go")]
    humps = await engine.goto_symbols("rsp", workspace)
    assert (humps.hits[0].qualified_name, humps.hits[0].language) == ("RemoteSearchProvider", "typescript")
    missing = await engine.goto_symbols("Frobnicate", workspace)
    assert not missing.hits and missing.message == "No symbol named 'Frobnicate'."
    opened = await engine.goto_files("store.py:40", workspace)
    assert opened.line == 40 and (opened.hits[0].path, opened.hits[0].start_line) == ("notes/store.py", 40)
    files = await engine.goto_files("search", workspace)
    assert {h.path for h in files.hits[:2]} == {"notes/search.py", "web/src/search.ts"}
    assert all(h.kind == "file" for h in files.hits)


async def test_one_question_over_three_workspaces_gives_one_labelled_merged_ranking(subject):
    engine, workspace = subject.engine, subject.workspace
    backend, frontend = small_workspaces(workspace.parent / "more")
    for folder in (backend, frontend):
        await engine.index(folder)
    folders = [str(workspace), str(backend), str(frontend)]
    result = await engine.query_many(QUESTION, folders + [str(backend)], QueryOptions(workspace="", top_k=6, strategy="none"))
    assert result.workspaces == folders  # named twice, asked once
    assert [h.rank for h in result.results] == [1, 2, 3, 4, 5, 6]
    # merged by evidence (the question's cosine, comparable across one data dir's workspaces), each row labelled,
    # each workspace's own order kept, the best evidence first
    evidence = [h.evidence for h in result.results]
    assert evidence == sorted(evidence, reverse=True)
    assert {h.name for h in result.results} <= {"workspace", "backend", "frontend"}
    for name in {h.name for h in result.results}:
        own = [h.result.rank for h in result.results if h.name == name]
        assert own == sorted(own) and own[0] == 1, name
    best = {h.workspace: h.result.original_score for h in result.results if h.result.rank == 1}
    assert result.results[0].evidence == pytest.approx(max(s for s in best.values() if s is not None), abs=1e-6)
    assert set(result.searched) == set(folders)
    assert result.searched[str(backend)] == 1 and result.searched[str(workspace)] >= 3


async def test_strategies_warm_up_and_rerank_documents(subject):
    engine = subject.engine
    await engine.warm_up()
    strategies = {s.name: s for s in await engine.strategies()}
    assert {"none", "hybrid", "metadata", "tuned"} <= set(strategies)
    assert strategies["hybrid"].available and not strategies["cross-encoder"].available
    documents = ["How to make authentic Neapolitan pizza at home", "History of the Roman empire",
                 "Pizza delivery services in New York"]
    boosted = await engine.rerank_documents("make pizza at home", documents, "keyword-boost", 2)
    assert [r.index for r in boosted.results] == [0, 2] and boosted.reranked
    fallback = await engine.rerank_documents("pizza", documents)  # cross-encoder: no model offline
    assert not fallback.reranked and fallback.fallback_reason


async def test_watch_pause_and_unwatch(subject):
    engine, workspace = subject.engine, subject.workspace
    events = []
    await engine.watch(workspace, auto_reindex=True, on_event=events.append)
    await wait_for(lambda: any(e.kind == WATCHING for e in events), what="the engine to say it is watching")
    await engine.pause_watch(workspace)  # Ctrl+. on an automatic run: none starts until a user's run
    await wait_for(lambda: any(e.kind == PAUSED for e in events), what="the engine to say it paused")
    await engine.index(workspace)  # which resumes automatic indexing
    await wait_for(lambda: any(e.kind == RESUMED for e in events), what="the engine to say it resumed")
    await engine.unwatch(workspace)
    assert (await engine.health(workspace)).indexed


async def test_labels_round_trip_and_land_in_the_engines_data_dir(subject):
    engine, workspace = subject.engine, subject.workspace
    question = f"how is a note saved ({subject.kind})"
    assert await engine.labels_for(workspace, question) == {}
    await engine.record_label(workspace, question, "notes/store.py", "NoteStore.save", True)
    await engine.record_label(workspace, question.upper(), "notes/db.py", "", True)  # the same question
    await engine.record_label(workspace, question, "notes/db.py", "", False)  # changed my mind
    expected = {("notes/store.py", "NoteStore.save"): 1, ("notes/db.py", ""): 0}
    assert await engine.labels_for(workspace, question) == expected
    # where evaluation and the `tuned` strategy read them: on a server, the server's data dir
    assert labels.labels_for(labels.default_labels_file(subject.data_dir, workspace), question) == expected


async def test_the_compare_tabs_labels_reach_the_engine(subject):
    """The Compare tab labels a ranked result through its view-model: the engine keeps the label (for a
    remote engine its server, not the window's machine), and the tab reads it back from there."""
    from ui.viewmodels.compare import CompareViewModel, grade_of

    engine, workspace = subject.engine, str(subject.workspace)
    compare = CompareViewModel(engine)
    question = f"where are notes kept ({subject.kind})"
    names, _ = await compare.strategies()
    result = await compare.rank(question, workspace, names[0], 5)
    first, second = result.results[0], result.results[1]
    await compare.mark(workspace, question, first, True)
    await compare.mark(workspace, question, second, False)
    grades = await compare.grades(workspace, question)
    assert (grade_of(first, grades), grade_of(second, grades)) == (1, 0)
    stored = labels.labels_for(labels.default_labels_file(subject.data_dir, workspace), question)
    assert stored == grades == await engine.labels_for(workspace, question)
    if subject.kind == "remote":  # nothing on the client's side
        assert not (Path(engine.data_dir) / "labels").exists()


# --- every error, on every engine ---
ERROR_CASES = {
    "unknown strategy": (QueryError, lambda e, ws, tmp: e.query("x", QueryOptions(workspace=ws, strategy="bogus"))),
    "empty question": (QueryError, lambda e, ws, tmp: e.query("", QueryOptions(workspace=ws, strategy="none"))),
    "blank question": (QueryError, lambda e, ws, tmp: e.query("  ", QueryOptions(workspace=ws, strategy="none"))),
    "top_k 0": (QueryError, lambda e, ws, tmp: e.query("x", QueryOptions(workspace=ws, top_k=0, strategy="none"))),
    "no documents": (QueryError, lambda e, ws, tmp: e.rerank_documents("x", [], "none")),
    "label of no question": (QueryError, lambda e, ws, tmp: e.record_label(ws, "", "a.py", "", True)),
    "missing workspace": (WorkspaceError,
                          lambda e, ws, tmp: e.query("x", QueryOptions(workspace=str(tmp / "missing"), strategy="none"))),
    "index a missing workspace": (WorkspaceError, lambda e, ws, tmp: e.index(tmp / "missing")),
    "no workspaces": (QueryError, lambda e, ws, tmp: e.query_many("x", [], QueryOptions(workspace=ws, strategy="none"))),
    "only unindexed ones": (IndexMissingError, lambda e, ws, tmp: e.query_many(
        "x", [str(unindexed(tmp))], QueryOptions(workspace=ws, strategy="none"))),
    "not indexed": (IndexMissingError, lambda e, ws, tmp: e.query("x", QueryOptions(workspace=str(unindexed(tmp)), strategy="none"))),
    "go to an empty name": (QueryError, lambda e, ws, tmp: e.goto_symbols("  ", ws)),
    "go to file, limit 0": (QueryError, lambda e, ws, tmp: e.goto_files("a.py", ws, 0)),
    "go to in an unindexed folder": (IndexMissingError, lambda e, ws, tmp: e.goto_symbols("a", str(unindexed(tmp)))),
}


def unindexed(tmp):
    folder = tmp / "never-indexed"
    folder.mkdir(exist_ok=True)
    (folder / "a.py").write_text("def a():\n    return 1\n")
    return folder


@pytest.mark.parametrize("case", list(ERROR_CASES))
async def test_errors_arrive_as_the_engines_own_classes(subject, case, tmp_path):
    kind, call = ERROR_CASES[case]
    with pytest.raises(kind) as raised:
        await call(subject.engine, str(subject.workspace), tmp_path)
    assert str(raised.value) and "Traceback" not in str(raised.value)


async def test_a_workspace_not_indexed_among_several_is_named_and_the_others_answer(subject, tmp_path):
    """Not an error for the whole question (issue 40): the indexed workspace answers, the other is named."""
    missing = unindexed(tmp_path)
    result = await subject.engine.query_many(QUESTION, [str(subject.workspace), str(missing)],
                                             QueryOptions(workspace=str(subject.workspace), strategy="none"))
    assert list(result.unanswered) == [str(missing.resolve())] and "index" in result.unanswered[str(missing.resolve())]
    assert result.results and {hit.workspace for hit in result.results} == {str(Path(subject.workspace).resolve())}


@pytest.mark.parametrize("kind", KINDS)
async def test_a_busy_data_dir_raises_index_busy_naming_the_owner(kind, tmp_path):
    workspace = unindexed(tmp_path)
    with busy_engine(kind, tmp_path / "data") as engine:
        with pytest.raises(IndexBusyError, match="in use by a cli process"):
            await engine.query("x", QueryOptions(workspace=str(workspace), strategy="none"))
        with pytest.raises(IndexBusyError, match="in use by a cli process"):
            await engine.record_label(workspace, "x", "a.py", "", True)
    engine.close()  # closing twice is safe


# --- the same index gives the same answers everywhere ---
def comparable(value) -> object:
    """JSON of a result without what differs by run (timings, cache, vectors the last run found in the data
    dir's shared cache) or by copy (the folder's path)."""
    data = codec.encode(value)
    if isinstance(data, dict):
        for key in ("timings_ms", "cache_hit", "workspace", "created_at", "updated_at", "size_bytes",
                    "last_run_reused"):
            data.pop(key, None)
    return data


async def test_the_same_index_gives_the_same_answers_on_every_engine(in_process, engine_process, remote):
    subjects = [in_process, engine_process, remote]

    async def answers(subject):
        engine, ws = subject.engine, subject.workspace
        out = {}
        for question, strategy in QUESTIONS:
            options = QueryOptions(workspace=str(ws), strategy=strategy, top_k=5, use_cache=False)
            out[question] = comparable(await engine.query(question, options))
        out["file answer"] = comparable(await engine.find_files(
            "save a note to disk", QueryOptions(workspace=str(ws), strategy="metadata"), max_files=4))
        out["symbols"] = sorted(await engine.symbol_names(ws))
        out["goto symbols"] = comparable(await engine.goto_symbols("store", ws))
        out["goto files"] = comparable(await engine.goto_files("notes/s.py:3", ws))
        out["strategies"] = [codec.encode(s) for s in await engine.strategies()]
        out["health"] = comparable(await engine.health(ws))
        return out

    first, *others = [await answers(s) for s in subjects]
    for subject, other in zip(subjects[1:], others):
        for key in first:
            assert other[key] == first[key], f"{subject.kind} differs from in-process on {key}"


async def test_find_references_and_uses(subject):
    """Issue 35: who uses a function (two callers in a file, an import in another), what a method uses, a name
    in another language, and a name nobody defines."""
    engine, workspace = subject.engine, subject.workspace
    refs = await engine.references("tokenize_query", workspace)
    assert [(t.path, t.start_line) for t in refs.targets] == [("notes/search.py", 16)]
    assert [(g.path, [(link.line, link.how, link.qualified_name) for link in g.links]) for g in refs.files] == [
        ("notes/__init__.py", [(4, "import", "__init__"), (7, "text", "__init__")]),  # 7: the name in `__all__`
        ("notes/search.py", [(38, "call", "SearchEngine.search"), (47, "call", "SearchEngine.score"),
                             (48, "call", "SearchEngine.score")])]
    uses = await engine.uses("SearchEngine.score", workspace)
    assert ("notes/search.py", 16, (47, 48)) in {(link.path, link.line, link.lines) for g in uses.files for link in g.links}
    go = await engine.references("InvertedIndex", workspace)
    assert go.targets[0].language == "go" and {g.path for g in go.files} == {"go/index/index.go"}
    missing = await engine.references("Frobnicate", workspace)
    assert not missing.files and missing.message == "No symbol named 'Frobnicate' in the index."
