"""Go to symbol / go to file (services/retrieval/goto.py): the matcher ranks as an editor's does, over a real
catalogue, and what is kept of the names follows every write. Through every engine: tests/contract."""

from __future__ import annotations

import hashlib

import pytest

from services.core.errors import QueryError
from services.core.models import Chunk
from services.retrieval.goto import FileFinder, Finders, SymbolFinder, align, goto_files, goto_symbols, parse_target
from services.storage.catalog import Catalog, FileRecord


def symbols(*names: str) -> SymbolFinder:
    """A finder over definitions named `names` (a dotted name is a method of its class), one file each."""
    rows = [(f"src/f{i}.py", "python", 1, 2, name.rsplit(".", 1)[-1], name, "method" if "." in name else "class")
            for i, name in enumerate(names)]
    return SymbolFinder(rows)


def found(finder, query: str, limit: int = 10) -> list[str]:
    return [hit.qualified_name for hit in finder.find(query, limit)[0]]


def test_characters_in_order_match_at_word_starts_and_camel_humps_first():
    finder = symbols("affirm", "FixtureManager", "from_module_items_list_of_things", "Unrelated")
    assert found(finder, "fixman") == ["FixtureManager"]
    assert found(finder, "fm")[:2] == ["FixtureManager", "from_module_items_list_of_things"]  # `affirm`: mid-word
    assert found(finder, "fm")[-1] == "affirm" and "Unrelated" not in found(finder, "fm")


def test_an_exact_name_then_a_prefix_come_first_and_shorter_names_before_longer():
    finder = symbols("FixtureManagerHelper", "fixtures", "Fixture", "MyFixture", "FixtureManager")
    assert found(finder, "fixture") == ["Fixture", "fixtures", "FixtureManager", "FixtureManagerHelper", "MyFixture"]


def test_a_dotted_name_matches_qualified_names():
    finder = symbols("NoteStore", "NoteStore.save", "FileNoteStore.save", "NoteStore.load", "save")
    assert found(finder, "NoteStore.save") == ["NoteStore.save", "FileNoteStore.save"]
    assert found(finder, "NoteStore::save")[0] == "NoteStore.save"  # as C++ or Rust write it
    assert found(finder, "ns.sa")[0] == "NoteStore.save"


def test_a_module_and_a_name_go_to_that_module_s_definition_first():
    """`nodes.Node` names `Node` in nodes.py, as a question and references read it (services/retrieval/definitions.py):
    go to symbol's first tier, though no qualified name holds the module's name."""
    finder = SymbolFinder([("src/pkg/nodes.py", "python", 1, 9, "Node", "Node", "class"),
                           ("src/pkg/other.py", "python", 1, 9, "Node", "Node", "class"),
                           ("src/pkg/nodes.py", "python", 10, 19, "visit", "NodeVisitor.visit", "method")])
    hits, matched, _ = finder.find("nodes.Node", 10)
    assert [(h.path, h.qualified_name) for h in hits] == [("src/pkg/nodes.py", "Node")] and matched == 1
    assert [h.path for h in finder.find("Node", 10)[0]][:2] == ["src/pkg/nodes.py", "src/pkg/other.py"]


def test_matched_characters_are_given_for_highlighting():
    hit = symbols("FixtureManager").find("fixman", 1)[0][0]
    assert hit.label == "FixtureManager" and hit.positions == (0, 1, 2, 7, 8, 9)
    assert "".join(hit.label[i] for i in hit.positions) == "FixMan"
    assert align("xyz", "FixtureManager") is None


def test_files_match_their_file_name_first_and_shorter_paths_first():
    finder = FileFinder([("testing/deep/conftest.py", "python", 40), ("src/conftest_helpers.py", "python", 9),
                         ("conftest.py", "python", 12), ("testing/conftest.py", "python", 30),
                         ("docs/contents/figures.py", "python", 5)])
    paths = [hit.path for hit in finder.find("conftest.py", 10, None)[0]]
    assert paths[:3] == ["conftest.py", "testing/conftest.py", "testing/deep/conftest.py"]
    assert [hit.path for hit in finder.find("testing/conf", 10, None)[0]][0] == "testing/conftest.py"


@pytest.mark.parametrize("text, expected", [
    ("latex.py:120", ("latex.py", 120)), ("printing/latex.py:120:7", ("printing/latex.py", 120)),
    ("latex.py#L33", ("latex.py", 33)), ("latex.py", ("latex.py", None)), ("  Store.save ", ("Store.save", None)),
    ("a:b", ("a:b", None)),
])
def test_a_line_number_after_a_path_is_read(text, expected):
    assert parse_target(text) == expected


def chunk(path: str, symbol: str, qualified: str, kind: str, start: int, end: int) -> Chunk:
    content = f"def {symbol}(): pass\n"
    return Chunk(path=path, language="python", start_line=start, end_line=end, content=content, symbol=symbol,
                 qualified_name=qualified, kind=kind, content_hash=hashlib.sha256(f"{path}{start}".encode()).hexdigest())


def commit(catalog: Catalog, path: str, chunks: list[Chunk]) -> None:
    catalog.commit_file(FileRecord(path, hashlib.sha256(path.encode()).hexdigest(), 10, 0, "python"), chunks)


def test_over_a_real_catalogue_the_names_follow_every_write(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    finders = Finders()
    commit(catalog, "pkg/fixtures.py", [chunk("pkg/fixtures.py", "fixtures", "fixtures", "module", 1, 90),
                                        chunk("pkg/fixtures.py", "FixtureManager", "FixtureManager", "class", 10, 60),
                                        chunk("pkg/fixtures.py", "FixtureManager", "FixtureManager", "class", 61, 80)])
    answer = goto_symbols(finders, catalog, "FixtureManager")
    # a module chunk is no definition; a class the chunker cut in two is one definition
    assert [(h.path, h.start_line, h.end_line, h.kind) for h in answer.hits] == [("pkg/fixtures.py", 10, 80, "class")]
    assert goto_symbols(finders, catalog, "Frobnicate").message == "No symbol named 'Frobnicate'."
    commit(catalog, "pkg/frob.py", [chunk("pkg/frob.py", "Frobnicate", "Frobnicate", "function", 3, 9)])
    assert [h.path for h in goto_symbols(finders, catalog, "Frobnicate").hits] == ["pkg/frob.py"]
    assert goto_symbols(finders, catalog, "FixtureMangaer").message == \
        "No symbol named 'FixtureMangaer'. Did you mean FixtureManager?"
    opened = goto_files(finders, catalog, "frob.py:7")
    assert (opened.line, opened.hits[0].path, opened.hits[0].start_line) == (7, "pkg/frob.py", 7)
    catalog.remove_file("pkg/frob.py")
    assert not goto_symbols(finders, catalog, "Frobnicate").hits
    assert goto_files(finders, catalog, "frob").message == "No file matching 'frob'."
    catalog.close()


@pytest.mark.parametrize("query, limit, message", [("", 10, "the name is empty"), ("   ", 10, "the name is empty"),
                                                   ("x" * 201, 10, "too long"), ("x", 0, "1 to 500")])
def test_bad_input_is_one_clear_message(tmp_path, query, limit, message):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    with pytest.raises(QueryError, match=message):
        goto_symbols(Finders(), catalog, query, limit)
    catalog.close()


def test_terms_apart_match_where_every_term_does_in_the_name_or_the_path():
    """"fill_fixtures conftest" (VS Code's Ctrl+T, Ctrl+P): the name in the conftest files, not elsewhere; a
    term only in a path never lists every definition of the file; files match each term in their path."""
    rows = [(path, "python", 1, 2, name, name, "function") for path, name in [
        ("testing/python/conftest.py", "fill_fixtures"), ("src/fixtures.py", "fill_fixtures"),
        ("testing/io/conftest.py", "fill_fixtures"), ("testing/io/conftest.py", "other")]]
    hits = SymbolFinder(rows).find("fill_fixtures conftest", 10)[0]
    assert sorted(hit.path for hit in hits) == ["testing/io/conftest.py", "testing/python/conftest.py"]
    assert hits[0].label == "fill_fixtures" and hits[0].positions == tuple(range(len("fill_fixtures")))
    assert SymbolFinder(rows).find("conftest testing", 10)[0] == []
    files = FileFinder([(path, "python", 9) for path, *_ in rows[:3]])
    assert [hit.path for hit in files.find("python conftest", 10, None)[0]] == ["testing/python/conftest.py"]
    assert [hit.path for hit in files.find("conftest testing", 10, None)[0]] == [
        "testing/io/conftest.py", "testing/python/conftest.py"]


def test_the_finder_shows_what_the_engine_says_it_does_not_see_yet_before_its_own_building_line():
    """Ctrl+T while step 1 of a first index commits files: the list says the engine's answer (how many files it
    does not see yet), not its own "still being built"; that line is only for before the engine can answer."""
    from services.core.models import GotoAnswer
    from ui.viewmodels.goto import BUILDING, SYMBOLS, empty_text

    said = ("No symbol named 'Frob'. An index run is committing files: 1 of 24 so far; the rest are not in this "
            "answer yet.")
    assert empty_text(SYMBOLS, "/ws", GotoAnswer("Frob", "symbols", [], 0, message=said), "Frob", True) == said
    assert empty_text(SYMBOLS, "/ws", None, "Frob", True) == BUILDING
