"""The lean index of issue #8: fewer dimensions for a big index, short vector ids and no metadata in
Chroma, filters from the catalogue, and older indexes asking to be rebuilt.
Real model, real ChromaDB; "big" is made small with settings."""

from __future__ import annotations

import sqlite3
import zlib

import pytest

from services.core.errors import IndexMissingError
from services.engine.service import LocalEngine
from services.core.models import QueryOptions
from services.core.settings import Settings
from services.storage.vector_store import VectorStore

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

QUESTIONS = ("save a note to disk", "tokenize keywords in a query", "parse command line arguments")
REDUCED = Settings(reduce_from_chunks=20, vector_dimensions=32, projection_sample=400)  # 121 chunks here


def options(workspace, **changes) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), use_cache=False, **{"strategy": "none", **changes})


async def top_paths(service, workspace, question, k=3):
    result = await service.query(question, options(workspace, top_k=k, min_relevance=0.0))
    return [r.chunk.path for r in result.results]


async def test_a_big_index_stores_fewer_dimensions_and_finds_what_the_full_one_finds(tmp_path, workspace):
    full = LocalEngine(data_dir=tmp_path / "full")
    reduced = LocalEngine(REDUCED, data_dir=tmp_path / "reduced")
    try:
        await full.index(workspace)
        report = await reduced.index(workspace)
        assert report.chunks_embedded == report.chunks_total  # the sample's vectors were not embedded twice
        health = await reduced.health(workspace)
        assert health.dimension == 32 and health.vectors.startswith("32 of 384 dimensions")
        index = reduced.workspace_index(workspace)
        some_id = index.catalog().chunks()[0].id
        assert len(index.store().embeddings([some_id])[some_id]) == 32
        assert (await full.health(workspace)).dimension == 384  # by default only from 20,000 chunks on
        for question in QUESTIONS:
            assert (await top_paths(full, workspace, question, 1))[0] in await top_paths(reduced, workspace, question)
    finally:
        full.close()
        reduced.close()


async def test_a_reduced_index_updates_in_place_and_rebuilds_when_its_projection_is_lost(tmp_path, workspace):
    service = LocalEngine(REDUCED, data_dir=tmp_path / "data")
    try:
        first = await service.index(workspace)
        note = next(workspace.rglob("*.py"))
        note.write_text(note.read_text() + "\n\ndef archive_old_notes(folder):\n    return sorted(folder.iterdir())\n")
        again = await service.index(workspace)
        assert 0 < again.chunks_embedded < first.chunks_embedded / 4  # only the edited file's new chunk
        result = await service.query("archive old notes in a folder", options(workspace, top_k=3))
        assert result.results[0].chunk.qualified_name == "archive_old_notes"
        assert "sorted(folder.iterdir())" in result.results[0].chunk.content  # the new text, not a cached one
        assert (await service.health(workspace)).dimension == 32

        service.workspace_index(workspace).projection_path.unlink()
        rebuilt = await service.index(workspace)
        assert "projection file was missing" in rebuilt.rebuilt_reason
        assert rebuilt.chunks_embedded == rebuilt.chunks_total
        assert (await service.health(workspace)).dimension == 32
    finally:
        service.close()


async def test_a_filter_too_big_for_chroma_filters_a_wider_search_with_the_same_answer(tmp_path, workspace,
                                                                                      monkeypatch):
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        filtered = options(workspace, top_k=6, languages=("java", "kotlin"), path_glob="java/*,kotlin/*",
                           min_relevance=0.0)
        inside = await service.query("store a note", filtered)
        monkeypatch.setattr(VectorStore, "IDS_FILTER_MAX", 1)  # every filter takes the wider-search path
        wider = await service.query("store a note", filtered)
        assert [r.chunk.id for r in wider.original] == [r.chunk.id for r in inside.original]
        assert len(inside.original) == 6 and {r.chunk.language for r in inside.original} <= {"java", "kotlin"}
    finally:
        service.close()


async def test_an_index_in_the_older_format_asks_for_a_rebuild_and_gets_one(tmp_path, workspace):
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        service.workspace_index(workspace).catalog().set_meta(index_format="2")
        with pytest.raises(IndexMissingError, match="older format: reindex"):
            await service.query("save a note to disk", options(workspace))
        report = await service.index(workspace)
        assert "short vector ids" in report.rebuilt_reason and report.chunks_embedded == report.chunks_total
        assert (await service.query("save a note to disk", options(workspace))).results
    finally:
        service.close()


async def test_a_catalogue_of_format_2_is_rebuilt_and_says_why(tmp_path, workspace):
    """A manifest written before vector ids, file numbers and packed docstrings (format 2's layout)."""
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        folder = service.workspace_index(workspace).folder
        folder.mkdir(parents=True)
        db = sqlite3.connect(folder / "manifest.sqlite")
        db.executescript("""
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL, language TEXT NOT NULL,
                start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, content TEXT NOT NULL,
                symbol TEXT NOT NULL, qualified_name TEXT NOT NULL, kind TEXT NOT NULL, bases TEXT NOT NULL,
                docstring TEXT NOT NULL, content_hash TEXT NOT NULL, file_hash TEXT NOT NULL,
                refs INTEGER NOT NULL DEFAULT 0, ordinal INTEGER NOT NULL DEFAULT 0,
                contiguous INTEGER NOT NULL DEFAULT 1);
            CREATE INDEX chunks_by_path ON chunks(path);""")
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("model", "all-MiniLM-L6-v2"), ("index_format", "2")])
        db.execute("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   ("a.py:1-2:" + "0" * 16, "a.py", "python", 1, 2, zlib.compress(b"def f(): pass"), "f", "f",
                    "function", "[]", "", "0" * 64, "1" * 64, 0, 0, 1))
        db.commit()
        db.close()
        assert (await service.health(workspace)).chunks == 1  # health still reads it
        with pytest.raises(IndexMissingError, match="older format: reindex"):
            await service.query("save a note to disk", options(workspace))
        report = await service.index(workspace)
        assert "short vector ids" in report.rebuilt_reason and report.chunks_embedded == report.chunks_total > 50
        assert (await service.query("save a note to disk", options(workspace))).results
    finally:
        service.close()
