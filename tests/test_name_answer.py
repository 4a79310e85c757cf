"""A name asked with `auto` (issue 44): its definitions first, then the chunks that use it by keyword, with no
vectors: an engine whose model cannot load still answers it, and the CLI never imports chromadb for it. Real
catalogue, real Chroma, the sample workspace indexed once with the real model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.core.errors import ModelLoadError
from services.core.models import QueryOptions
from services.core.settings import Settings
from services.engine.service import LocalEngine

ROOT = Path(__file__).resolve().parents[1]
NO_MODEL = Settings(embedding_model="nobody/no-such-model")  # any question that needs a vector fails


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """(data dir, workspace): the sample workspace indexed with the real model; the indexing engine closed,
    so each test opens its own engine on the data dir."""
    from tests.conftest import indexed_sample

    root = tmp_path_factory.mktemp("name-answer")
    service, workspace = next(indexed_sample(root))
    service.close()
    return root / "data", workspace


@pytest.fixture
def no_model(indexed):
    """An engine over the indexed data dir whose encoder cannot load."""
    data_dir, workspace = indexed
    engine = LocalEngine(NO_MODEL, data_dir=data_dir)
    yield engine, workspace
    engine.close()


async def ask(engine, workspace, question: str, strategy: str = "auto", **extra):
    options = QueryOptions(workspace=str(workspace), strategy=strategy, top_k=10, use_cache=False, **extra)
    return await engine.query(question, options)


@pytest.mark.slow  # indexes the sample workspace with the real model
async def test_a_name_lists_its_definition_then_the_chunks_using_it_without_the_encoder(no_model):
    engine, workspace = no_model
    result = await ask(engine, workspace, "FileNoteStore")
    first = result.results[0].chunk
    assert (first.path, first.qualified_name) == ("notes/store.py", "FileNoteStore")
    uses = result.results[1:]
    assert uses and all("FileNoteStore" in f"{r.chunk.qualified_name} {r.chunk.content}" for r in uses)
    assert {r.chunk.path for r in uses} >= {"notes/__init__.py"}
    assert result.reading == "name"
    assert result.strategy_note == result.reading_note == (
        f"read as a name `FileNoteStore`: 1 definition first, then {len(uses)} chunk{'s' if len(uses) > 1 else ''} "
        "that use it (keyword match, no vectors)")
    assert [r.original_score for r in result.original] == sorted((r.original_score for r in result.original),
                                                               reverse=True)  # the keyword order
    assert all(0.0 <= r.score <= 1.0 for r in result.results)


@pytest.mark.slow
async def test_a_dotted_name_finds_its_method_first_without_the_encoder(no_model):
    engine, workspace = no_model
    result = await ask(engine, workspace, "MarkdownExporter.Export")
    top = result.results[0].chunk
    assert (top.path, top.qualified_name) == ("csharp/NoteService.cs", "MarkdownExporter.Export")
    assert result.reading == "dotted" and result.strategy_note.endswith("(keyword match, no vectors)")


@pytest.mark.slow
async def test_min_relevance_keeps_the_definitions_and_drops_weaker_uses(no_model):
    engine, workspace = no_model
    loose = await ask(engine, workspace, "FileNoteStore", min_relevance=0.0)
    strict = await ask(engine, workspace, "FileNoteStore", min_relevance=0.99)
    assert strict.results[0].chunk.qualified_name == "FileNoteStore"
    assert len(strict.results) < len(loose.results)
    assert all(r.score >= 0.99 for r in strict.results[1:])


@pytest.mark.slow
@pytest.mark.parametrize("question, strategy", [
    ("how are notes saved to disk", "auto"),  # a question in words needs vectors
    ("FileNoteStore", "metadata"),  # a strategy chosen by name keeps the vector path
    ("FileNoteStore", "none"),
    ("NoteArchiver_v2", "auto"),  # a name the index does not define falls back to the vectors
])
async def test_everything_else_still_searches_by_vector(no_model, question, strategy):
    engine, workspace = no_model
    with pytest.raises(ModelLoadError, match="no-such-model"):
        await ask(engine, workspace, question, strategy)


@pytest.mark.slow
async def test_a_file_answer_to_a_name_still_reads_the_vector_ranking(no_model):
    engine, workspace = no_model
    options = QueryOptions(workspace=str(workspace), strategy="auto", use_cache=False)
    with pytest.raises(ModelLoadError, match="no-such-model"):
        await engine.find_files("FileNoteStore", options, 3)


@pytest.mark.slow
async def test_a_name_not_defined_says_so_and_answers_by_vector(indexed):
    data_dir, workspace = indexed
    engine = LocalEngine(data_dir=data_dir)
    try:
        result = await ask(engine, workspace, "NoteArchiver_v2", min_relevance=0.0)
    finally:
        engine.close()
    assert result.reading_note.startswith("no definition named `NoteArchiver_v2`")
    assert "no vectors" not in result.strategy_note and result.results


def cli_modules(data_dir: Path, workspace: Path, question: str) -> str:
    """`knowledge-explorer query` run in a fresh interpreter; its output, then whether chromadb was imported."""
    code = ("import sys; from app.cli import main; code = main(sys.argv[1:]); "
            "print('chromadb imported:', 'chromadb' in sys.modules); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "query", "--data-dir", str(data_dir), str(workspace), question],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_the_cli_answers_a_name_without_importing_chromadb(indexed):
    data_dir, workspace = indexed
    name = cli_modules(data_dir, workspace, "FileNoteStore")
    assert "(keyword match, no vectors)" in name and "notes/store.py" in name
    assert "chromadb imported: False" in name
    words = cli_modules(data_dir, workspace, "how are notes saved to disk")
    assert "chromadb imported: True" in words  # the same check sees a question that needs the vectors
