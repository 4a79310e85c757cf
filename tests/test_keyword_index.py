"""The incremental keyword indexes (issue 22, item 2): SQLite FTS5 tables in the catalogue, per chunk and
per file, written in each file's commit. Real model, real ChromaDB, real SQLite; the sample workspace edited on disk."""

from __future__ import annotations

import pytest

import sqlite3
import zlib

from services.core.models import Chunk, QueryOptions
from services.engine.service import LocalEngine
from services.retrieval.file_ranking import FileIndex
from services.storage.catalog import Catalog, FileRecord
from services.storage.file_words import CatalogFileWords
from services.storage.keyword_index import KeywordIndex

NEW_FUNCTION = "def zanzibar_quokka_total(items):\n    \"\"\"Add up the quokkas.\"\"\"\n    return sum(items)\n"


def options(workspace, strategy="hybrid") -> QueryOptions:
    return QueryOptions(workspace=str(workspace), strategy=strategy, min_relevance=0.0, use_cache=False)


def keyword_paths(service, workspace, question: str) -> list[str]:
    index = service.workspace_index(workspace)
    return [i.split(":", 1)[0] for i, _ in index.keywords.search(question, 10)]


async def test_an_edit_is_keyword_searchable_after_its_run_and_a_deletion_removes_it(service, workspace):
    await service.index(workspace)
    assert keyword_paths(service, workspace, "zanzibar quokka") == []

    (workspace / "quokka.py").write_text(NEW_FUNCTION)
    report = await service.index(workspace)
    assert report.files_indexed == 1
    assert keyword_paths(service, workspace, "zanzibar quokka") == ["quokka.py"]
    assert keyword_paths(service, workspace, "zanzibarQuokkaTotal") == ["quokka.py"]  # code-aware tokens
    result = await service.query("zanzibar quokka", options(workspace))
    assert result.results[0].chunk.path == "quokka.py"

    (workspace / "quokka.py").write_text(NEW_FUNCTION.replace("zanzibar", "madagascar"))
    await service.index(workspace)
    assert keyword_paths(service, workspace, "zanzibar") == []  # the old words went with the old version
    assert keyword_paths(service, workspace, "madagascar") == ["quokka.py"]

    (workspace / "quokka.py").unlink()
    await service.index(workspace)
    assert keyword_paths(service, workspace, "madagascar quokka") == []
    assert service.workspace_index(workspace).catalog().keywords.keyword_problem() == ""


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_an_index_with_the_old_bm25_files_is_upgraded_on_open_without_re_embedding(data_dir, workspace):
    service = LocalEngine(data_dir=data_dir)
    try:
        first = await service.index(workspace)
        folder = service.workspace_index(workspace).folder
    finally:
        service.close()
    # What the previous version left: BM25 files beside a catalogue without the keyword table.
    db = sqlite3.connect(folder / "manifest.sqlite")
    db.execute("DROP TABLE chunk_words")
    db.execute("DELETE FROM meta WHERE key = 'keyword_tokens'")
    db.commit()
    db.close()
    (folder / "bm25").mkdir()
    (folder / "bm25" / "chunk_ids.json.z").write_bytes(zlib.compress(b"[]"))

    service = LocalEngine(data_dir=data_dir)
    try:
        result = await service.query("save note", options(workspace, "metadata"))
        assert result.results and not (folder / "bm25").exists()
        assert service.workspace_index(workspace).catalog().keywords.keyword_problem() == ""
        assert keyword_paths(service, workspace, "NoteStore")
        report = await service.index(workspace)
        assert report.chunks_embedded == 0 and report.chunks_total == first.chunks_total
        assert (await service.health(workspace)).state == "ready"
    finally:
        service.close()


def chunk(path: str, name: str, body: str) -> Chunk:
    return Chunk(path=path, language="python", start_line=1, end_line=2, content=f"def {name}():\n    {body}\n",
                 symbol=name, qualified_name=name, kind="function", content_hash="ab" * 8, file_hash="cd" * 8)


def test_question_text_is_only_words_never_fts_syntax(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    catalog.commit_file(FileRecord("a.py", "cd" * 8, 1, 1, "python"), [chunk("a.py", "near_total", "return 1")])
    index = KeywordIndex(lambda: catalog)
    for question in ('near_total" OR "x', "NEAR(near_total)", "near_total AND NOT *", "col:near_total ^ -"):
        assert [i.split(":")[0] for i, _ in index.search(question, 5)] == ["a.py"]
    assert index.search('"" () * : ^', 5) == []


def test_hits_point_at_their_chunks_after_removals_and_a_vacuum(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    for n in range(300):
        catalog.commit_file(FileRecord(f"f{n}.py", "cd" * 8, 1, 1, "python"),
                            [chunk(f"f{n}.py", f"name_{n}", "return " + "filler " * 200)])
    for n in range(250):
        catalog.remove_file(f"f{n}.py")
    catalog.compact()  # over a quarter free: VACUUM
    index = KeywordIndex(lambda: catalog)
    for n in (250, 299):
        assert [i.split(":")[0] for i, _ in index.search(f"name_{n}", 1)] == [f"f{n}.py"]
    assert catalog.keywords.keyword_problem() == ""


def test_weighted_search_sums_each_tokens_weighted_score(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    bodies = {"a.py": "parse parse config", "b.py": "config config value", "c.py": "parse value",
              **{f"other{n}.py": "unrelated words" for n in range(10)}}  # common words score ~0 in FTS5's BM25
    for path, body in bodies.items():
        catalog.commit_file(FileRecord(path, "cd" * 8, 1, 1, "python"), [chunk(path, "f", body)])
    index = KeywordIndex(lambda: catalog)
    single = {t: dict(index.search(t, 10)) for t in ("parse", "config")}
    got = dict(index.search_weighted({"parse": 1.0, "config": 3.0}, 10))
    for chunk_id, score in got.items():
        assert score == sum(w * single[t].get(chunk_id, 0.0) for t, w in (("parse", 1.0), ("config", 3.0)))
    assert set(got) == {i for s in single.values() for i in s}
    assert [i.split(":")[0] for i in sorted(got, key=got.get, reverse=True)] == ["a.py", "b.py", "c.py"]
    assert [i.split(":")[0] for i, _ in index.search_weighted({"parse": 1.0, "config": 0.1}, 1)] == ["a.py"]


# --- whole-file keywords for file answers (services/storage/file_words.py) ---

def file_hits(catalog: Catalog, term: str) -> list[str]:
    paths = dict(catalog.keywords.file_listing())
    return sorted(paths[n] for n, _ in catalog.keywords.file_term_scores(term))


async def test_a_file_answer_sees_an_edit_after_its_run_without_any_rebuild(service, workspace):
    await service.index(workspace)
    (workspace / "quokka.py").write_text(NEW_FUNCTION)
    await service.index(workspace)
    answer = await service.find_files("zanzibar quokka total", options(workspace, "none"), max_files=3)
    assert answer.files[0].path == "quokka.py"
    assert "zanzibar" in {s.name: s for s in answer.files[0].signals}["bm25"].note

    (workspace / "quokka.py").write_text(NEW_FUNCTION.replace("zanzibar", "madagascar"))
    await service.index(workspace)
    catalog = service.workspace_index(workspace).catalog()
    assert file_hits(catalog, "zanzibar") == [] and file_hits(catalog, "madagascar") == ["quokka.py"]
    answer = await service.find_files("madagascar quokka total", options(workspace, "none"), max_files=3)
    assert answer.files[0].path == "quokka.py"

    (workspace / "quokka.py").unlink()
    await service.index(workspace)
    answer = await service.find_files("madagascar quokka total", options(workspace, "none"), max_files=3)
    assert "quokka.py" not in [f.path for f in answer.files] and file_hits(catalog, "madagascar") == []
    assert catalog.keywords.keyword_problem(verify=True) == ""


def test_the_file_table_stays_exact_through_edits_and_scores_as_the_in_memory_one(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    texts = {"a.py": "return parse(config)", "b.py": "return config.value", "c.py": "return parse(value)"}
    for round_ in range(3):  # each commit deletes the file's row with the words it was added with
        for path, body in texts.items():
            catalog.commit_file(FileRecord(path, "cd" * 8, round_, 1, "python"),
                                [chunk(path, f"{path[0]}_name_{round_}", body)])
    catalog.commit_file(FileRecord("gone.py", "cd" * 8, 1, 1, "python"), [chunk("gone.py", "gone", "return 0")])
    catalog.remove_file("gone.py")
    assert catalog.keywords.keyword_problem(verify=True) == ""
    assert file_hits(catalog, "a_name_0") == [] and file_hits(catalog, "a_name_2") == ["a.py"]
    assert file_hits(catalog, "gone") == []

    stored = FileIndex(CatalogFileWords(catalog))
    in_memory = FileIndex.from_texts({p: chunk(p, f"{p[0]}_name_2", body).content for p, body in texts.items()})
    assert stored.paths == in_memory.paths == ["a.py", "b.py", "c.py"]
    for term in ("parse", "config", "value", "b_name_2"):
        assert stored.term_scores({term: 1.0})[term].tolist() == in_memory.term_scores({term: 1.0})[term].tolist()
    assert stored.names.by_name["c_name_2"] == ["c.py#c_name_2"]


def test_a_manifest_from_before_the_file_table_gets_it_filled_on_open(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    catalog.commit_file(FileRecord("a.py", "cd" * 8, 1, 1, "python"), [chunk("a.py", "near_total", "return 1")])
    catalog.close()
    db = sqlite3.connect(tmp_path / "manifest.sqlite")  # what the previous version left
    db.execute("DROP TABLE file_words")
    db.execute("DROP TABLE file_names")
    db.execute("DELETE FROM meta WHERE key = 'file_words'")
    db.commit()
    db.close()
    reopened = Catalog(tmp_path / "manifest.sqlite")
    assert reopened.keywords.keyword_problem(verify=True) == "" and file_hits(reopened, "near_total") == ["a.py"]


def test_a_short_question_on_a_big_index_is_answered_by_its_telling_words(tmp_path, monkeypatch):
    from services.storage import keyword_index

    catalog = Catalog(tmp_path / "manifest.sqlite")
    for n in range(30):
        catalog.commit_file(FileRecord(f"f{n}.py", "cd" * 8, 1, 1, "python"), [chunk(f"f{n}.py", f"n{n}", "common")])
    catalog.commit_file(FileRecord("r.py", "cd" * 8, 1, 1, "python"), [chunk("r.py", "r", "common rare")])
    index = KeywordIndex(lambda: catalog)
    assert len(index.search("common rare", 100)) == 31  # under the row bound: every word is scored
    monkeypatch.setattr(keyword_index, "MAX_ROWS", 10)  # as if `common` were in a big share of a huge index
    assert [i.split(":")[0] for i, _ in index.search("common rare", 100)] == ["r.py"]
    assert len(index.search("common", 100)) == 31  # the most telling word is kept whatever it reaches
