"""Names first (issue 30): a name, a dotted name or a path typed as the question finds what it names
first, with every reranking strategy, on the real sample workspace (real model, real Chroma); `none`
stays the plain vector ranking; a sentence is still a search."""

from __future__ import annotations

import pytest

from services.core.models import QueryOptions
from services.retrieval import names
from services.retrieval.strategies import strategy_names

RERANKING = [n for n in strategy_names() if n != "none"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from tests.conftest import indexed_sample

    yield from indexed_sample(tmp_path_factory.mktemp("names"))


def options(workspace, strategy: str = "metadata", **extra) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), strategy=strategy, top_k=10, use_cache=False, **extra)


def where(item) -> str:
    return f"{item.chunk.path}::{item.chunk.qualified_name}"


@pytest.mark.parametrize("question, kind, name, line", [
    ("FixtureManager", names.NAME, "FixtureManager", None),
    ("`parse_config()`", names.NAME, "parse_config", None),
    ("Store.save", names.DOTTED, "Store.save", None),
    ("a::b::Parser", names.DOTTED, "a.b.Parser", None),
    ("printing/latex.py", names.PATH, "printing/latex.py", None),
    ("latex.py:120", names.PATH, "latex.py", 120),
    ("src/x.py#L7", names.PATH, "src/x.py", 7),
    ("fixture manager", names.NAME, "fixture manager", None),
    ("how do I save a note", names.QUESTION, "", None),
    ("Traceback (most recent call last):\n  File \"x.py\", line 3", names.QUESTION, "", None),
])
def test_a_question_is_read_as_navigation_only_when_it_is_a_name_or_a_path(question, kind, name, line):
    reading = names.read(question)
    assert (reading.kind, reading.name, reading.line) == (kind, name, line)


@pytest.mark.parametrize("strategy", RERANKING)
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_name_defined_twice_lists_both_definitions_first_each_labelled(indexed, strategy):
    service, workspace = indexed
    result = await service.query("findById", options(workspace, strategy))
    first = [where(r) for r in result.results[:2]]
    assert sorted(first) == ["java/src/main/java/notes/InMemoryNoteRepository.java::InMemoryNoteRepository.findById",
                             "java/src/main/java/notes/NoteRepository.java::NoteRepository.findById"]
    assert result.reading == "name" and "2 definitions first" in result.reading_note
    for item in result.results[:2]:
        assert any("defines `findById`, the name asked" in s.name and "of 2 definitions" in s.name
                   for s in item.signals)
    assert not any("the name asked" in s.name for r in result.results[2:] for s in r.signals)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_dotted_method_name_finds_that_method_not_its_namesakes(indexed):
    service, workspace = indexed
    result = await service.query("MarkdownExporter.Export", options(workspace))
    assert where(result.results[0]) == "csharp/NoteService.cs::MarkdownExporter.Export"
    assert result.reading == "dotted" and "1 definition first" in result.reading_note


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_path_with_a_line_opens_the_chunk_holding_that_line(indexed):
    service, workspace = indexed
    result = await service.query("index/index.go:25", options(workspace))
    top = result.results[0].chunk
    assert (top.path, top.qualified_name) == ("go/index/index.go", "InvertedIndex.Add")
    assert top.start_line <= 25 <= top.end_line
    assert result.reading == "path"


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_name_that_does_not_exist_says_so_and_still_answers(indexed):
    service, workspace = indexed
    result = await service.query("NoteArchiver_v2", options(workspace, min_relevance=0.0))
    assert result.reading_note.startswith("no definition named `NoteArchiver_v2`")
    assert result.results, "the usual answer follows the note"
    assert not any("the name asked" in s.name for r in result.results for s in r.signals)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_name_in_another_language_is_found_first(indexed):
    service, workspace = indexed
    for question, expected in [("InvertedIndex", "go/index/index.go::InvertedIndex"),
                               ("MarkdownExporter", "csharp/NoteService.cs::MarkdownExporter"),
                               ("inverted index", "go/index/index.go::InvertedIndex")]:
        result = await service.query(question, options(workspace))
        assert where(result.results[0]) == expected, question


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_none_keeps_the_plain_vector_ranking_for_a_name(indexed):
    service, workspace = indexed
    result = await service.query("findById", options(workspace, "none"))
    assert [r.chunk.id for r in result.results] == [r.chunk.id for r in result.original]
    assert result.reading == "name"


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_sentence_is_still_a_search(indexed):
    service, workspace = indexed
    result = await service.query("save a note to disk", options(workspace))
    assert result.reading == "question" and result.reading_note == ""
    assert not any("the name asked" in s.name for r in result.results for s in r.signals)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_language_filter_keeps_definitions_in_that_language(indexed):
    service, workspace = indexed
    result = await service.query("Export", options(workspace, languages=("kotlin",)))
    assert result.results and {r.chunk.language for r in result.results} == {"kotlin"}
    assert result.results[0].chunk.qualified_name.endswith("export")


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_sentence_naming_code_brings_its_definition_into_every_reranking_pool(indexed):
    """The vector search's two candidates (heuristic's pool for one result) miss NewInvertedIndex; the name
    channel adds it, and heuristic's name boost ranks it first. `none` keeps the vector ranking."""
    service, workspace = indexed
    question = "I wonder if NewInvertedIndex is slow with many notes"  # its vector rank: 3 (int8 and fp32 alike)
    one = QueryOptions(workspace=str(workspace), strategy="heuristic", top_k=1, use_cache=False, min_relevance=0.0)
    result = await service.query(question, one)
    top = result.results[0]
    assert (top.chunk.qualified_name, top.original_rank) == ("NewInvertedIndex", None)
    assert result.reading == "question"
    plain = await service.query(question, options(workspace, "none", min_relevance=0.0))
    assert "NewInvertedIndex" not in [r.chunk.qualified_name for r in plain.results[:1]]


def test_overloads_are_each_a_definition_and_a_long_class_cut_in_pieces_is_one():
    from services.core.models import Chunk

    def chunk(start, end, content, symbol="parse", qualified="Parser.parse", kind="method"):
        return names.Definition(Chunk("p.py", "python", start, end, content, symbol, qualified, kind), "qualified name")

    overloads = [chunk(10, 12, "@overload\ndef parse(self, x: int) -> int: ..."),
                 chunk(14, 16, "@overload\ndef parse(self, x: str) -> str: ..."),
                 chunk(18, 30, "def parse(self, x):\n    return x")]
    assert len(names._ranked(overloads)) == 3
    pieces = [chunk(1, 200, "class Big:\n    a = 1", "Big", "Big", "class"),
              chunk(201, 400, "    def more(self):\n        pass", "Big", "Big", "class")]
    assert [d.chunk.start_line for d in names._ranked(pieces)] == [1]


def test_a_name_defined_thousands_of_times_reads_a_bounded_number_spelled_as_asked_first(tmp_path):
    """`__init__` in a big repository: the catalogue gives at most `limit` definitions (each costs its file's
    text), the ones spelled as asked first; a real SQLite catalogue."""
    from services.storage.catalog import Catalog
    from tests.test_goto import chunk, commit

    catalog = Catalog(tmp_path / "manifest.sqlite")
    for n in range(4):
        path = f"pkg/m{n}.py"
        commit(catalog, path, [chunk(path, "run", f"K{i}.run", "method", 2 * i + 1, 2 * i + 1) for i in range(200)])
    commit(catalog, "zzz/last.py", [chunk("zzz/last.py", "Run", "Run", "class", 1, 3)])
    found = catalog.definitions(["Run"], limit=50)
    assert len(found) == 50 and found[0].path == "zzz/last.py"  # the one spelled "Run" comes first
    assert len(catalog.definitions(["run"])) == 500
    catalog.close()
