"""Chunking of the sample workspace: kinds, names, bases, docstrings, splitting, windows, references."""

import hashlib
from pathlib import Path

import pytest

from services.indexing.chunking import chunk_file, count_references
from services.core.models import Chunk
from services.indexing.scanning import read_source, scan_workspace
from services.core.settings import Settings

SAMPLE = Path(__file__).parent / "sample_workspace"
SETTINGS = Settings()


@pytest.fixture(scope="module")
def chunks():
    result = []
    for file in scan_workspace(SAMPLE).files:
        text, digest = read_source(file)
        result.extend(chunk_file(file.path, text, file.language, digest, SETTINGS))
    return count_references(result)


def find(chunks, path_end, qualified_name, kind=None):
    found = [c for c in chunks if c.path.endswith(path_end) and c.qualified_name == qualified_name
             and (kind is None or c.kind == kind)]
    assert found, f"no chunk {qualified_name} in {path_end}"
    return found[0]


def test_python_classes_methods_bases_docstrings(chunks):
    store = find(chunks, "notes/store.py", "FileNoteStore", "class")
    assert store.bases == ("NoteStore",)
    assert find(chunks, "notes/store.py", "NoteStore", "class").bases == ("ABC",)
    save = find(chunks, "notes/store.py", "FileNoteStore.save", "method")
    assert save.symbol == "save"
    assert save.docstring.startswith("Save a note to disk atomically")
    tokenize = find(chunks, "notes/search.py", "tokenize_query", "function")
    assert "keywords" in tokenize.docstring
    module = find(chunks, "notes/search.py", "search", "module")
    assert "STOP_WORDS =" in module.content and "def tokenize_query" not in module.content


def test_typescript_and_tsx(chunks):
    provider = find(chunks, "web/src/search.ts", "RemoteSearchProvider", "class")
    assert provider.bases == ("CachedProvider", "SearchProvider")
    assert find(chunks, "search.ts", "SearchProvider").kind == "interface"
    assert find(chunks, "search.ts", "RemoteSearchProvider.search").kind == "method"
    assert find(chunks, "search.ts", "tokenizeQuery").docstring.startswith("Tokenize a query")
    assert find(chunks, "NoteList.tsx", "NoteList", "function").language == "tsx"


def test_java_extends_implements_and_nested_class(chunks):
    repo = find(chunks, "InMemoryNoteRepository.java", "InMemoryNoteRepository", "class")
    assert repo.bases == ("AbstractRepository", "NoteRepository", "Comparable")
    assert repo.docstring == "Keeps notes in insertion order in memory."
    assert find(chunks, "NoteRepository.java", "NoteRepository", "interface").bases == ()
    nested = find(chunks, "InMemoryNoteRepository.java", "InMemoryNoteRepository.TitleLister.titles")
    assert nested.kind == "method"


def test_swift_protocol_conformances_and_extension(chunks):
    protocol = find(chunks, "ChunkStore.swift", "ChunkStore", "protocol")
    assert protocol.docstring.startswith("Stores note chunks")
    conforming = {c.symbol for c in chunks if c.language == "swift" and "ChunkStore" in c.bases}
    assert conforming == {"MemoryChunkStore", "DiskChunkStore"}
    extension = [c for c in chunks if c.symbol == "DiskChunkStore" and c.bases == ("ChunkStore",)]
    assert extension and "extension DiskChunkStore: ChunkStore" in extension[0].content
    assert find(chunks, "ChunkStore.swift", "StoreKind").kind == "enum"
    assert find(chunks, "DiskChunkStore.swift", "DiskChunkStore", "struct").bases == ()


def test_go_structs_interfaces_and_receiver_methods(chunks):
    assert find(chunks, "index.go", "InvertedIndex").kind == "struct"
    assert find(chunks, "index.go", "Searcher").kind == "interface"
    search = find(chunks, "index.go", "InvertedIndex.Search")
    assert search.kind == "method" and search.symbol == "Search"
    assert search.docstring.startswith("Search returns the ids")
    assert find(chunks, "index.go", "Tokenize").kind == "function"


def test_rust_trait_and_impl_trait_for_type(chunks):
    assert find(chunks, "lib.rs", "Tokenizer").kind == "interface"
    impls = [c for c in chunks if c.path.endswith("lib.rs") and c.bases == ("Tokenizer",)]
    assert [c.symbol for c in impls] == ["KeywordTokenizer"]
    assert find(chunks, "lib.rs", "KeywordTokenizer.tokenize").kind == "method"
    assert find(chunks, "lib.rs", "KeywordTokenizer", "struct").docstring.startswith("Splits on whitespace")


def test_csharp_and_kotlin_bases(chunks):
    exporter = find(chunks, "NoteService.cs", "MarkdownExporter", "class")
    assert exporter.bases == ("INoteExporter", "IDisposable")
    assert exporter.docstring == "Writes note titles as a Markdown bullet list."
    assert find(chunks, "NoteService.cs", "ExportOptions").kind == "struct"
    plain = find(chunks, "NoteExporter.kt", "PlainTextExporter", "class")
    assert plain.bases == ("NumberedWriter", "Exporter")
    assert find(chunks, "NoteExporter.kt", "Exporter").kind == "interface"


def test_every_chunk_is_well_formed_and_matches_its_lines(chunks):
    texts = {f.path: read_source(f)[0].splitlines() for f in scan_workspace(SAMPLE).files}
    for chunk in chunks:
        assert chunk.content_hash == hashlib.sha256(chunk.content.encode()).hexdigest()
        assert chunk.file_hash and 1 <= chunk.start_line <= chunk.end_line
        lines = texts[chunk.path][chunk.start_line - 1:chunk.end_line]
        if chunk.kind == "module":  # module code is the lines outside definitions, in order
            assert chunk.content.splitlines()[0] == lines[0]
            assert chunk.content.splitlines()[-1] == lines[-1]
        else:
            assert chunk.content == "\n".join(lines), chunk.id


def test_large_class_is_split_by_member():
    methods = "\n".join(f"    def step_{i}(self):\n        return {i}\n" for i in range(40))
    text = f"class Big(Base):\n    '''A big class.'''\n    limit = 3\n\n{methods}"
    result = chunk_file("big.py", text, "python", "h", SETTINGS.with_changes(max_chunk_lines=20))
    header = [c for c in result if c.kind == "class"]
    assert len(header) == 1 and header[0].end_line < 10 and header[0].bases == ("Base",)
    assert len([c for c in result if c.kind == "method"]) == 40
    assert max(c.end_line - c.start_line + 1 for c in result) <= 20


def test_huge_function_is_split_into_windows():
    body = "\n".join(f"    x{i} = {i}" for i in range(100))
    result = chunk_file("f.py", f"def huge():\n{body}\n", "python", "h", SETTINGS.with_changes(max_chunk_lines=30))
    assert len(result) >= 4
    assert all(c.symbol == "huge" and c.end_line - c.start_line < 30 for c in result)
    assert result[-1].end_line == 101


def test_markdown_windows_take_nearest_heading(chunks):
    readme = [c for c in chunks if c.path == "README.md"]
    assert readme and all(c.kind == "text" for c in readme)
    text = "# Title\n" + "\n".join(f"line {i}" for i in range(30)) + "\n## Second\n" + "more\n" * 30
    windows = chunk_file("doc.md", text, "markdown", "h", SETTINGS.with_changes(text_window_lines=20, text_window_overlap=5))
    assert windows[0].symbol == "Title"
    assert windows[-1].symbol == "Second"
    assert windows[1].start_line == windows[0].end_line - 4  # overlap of 5 lines


def test_language_without_grammar_uses_windows():
    text = "\n".join(f"val x{i} = {i}" for i in range(100))
    result = chunk_file("a.scala", text, "scala", "h", SETTINGS)
    assert [(c.start_line, c.end_line) for c in result] == [(1, 40), (31, 70), (61, 100)]
    assert all(c.kind == "text" for c in result)


def test_empty_file_gives_no_chunks():
    assert chunk_file("e.py", "\n\n  \n", "python", "h", SETTINGS) == []


def test_reference_counts(chunks):
    note = find(chunks, "notes/models.py", "Note", "class")
    assert note.references >= 5
    assert find(chunks, "notes/models.py", "validate_title").references == 0
    assert all(c.references == 0 for c in chunks if c.kind in ("module", "text"))


def test_reference_counting_on_ten_thousand_chunks():
    """Its speed is measured by `benchmarks/latency.py paths`."""
    many = [Chunk(path=f"f{i}.py", language="python", start_line=1, end_line=3, kind="function",
                  symbol=f"func_{i}", content=f"def func_{i}():\n    return func_{i - 1}() + helper_{i % 7}")
            for i in range(10_000)]
    counted = count_references(many)
    assert counted[5].references == 1 and counted[-1].references == 0


def test_a_huge_single_line_is_cut_into_bounded_pieces_with_unique_ids():
    line = "var table = [" + "'entry', " * 5000 + "];"
    for language in ("javascript", "text"):
        pieces = chunk_file("big.js", line + "\n", language, "h", SETTINGS)
        assert len(pieces) > 1 and all(len(c.content) <= SETTINGS.max_chunk_chars for c in pieces)
        assert all((c.start_line, c.end_line, c.contiguous) == (1, 1, False) for c in pieces)
        assert "".join(dict.fromkeys(c.content for c in pieces)) == line
        assert len({c.id for c in pieces}) == len(pieces)


def test_unknown_language_is_chunked_in_line_windows_and_crlf_counts_lines():
    text = "".join(f"resource line {n}\r\n" for n in range(1, 101))
    windows = chunk_file("main.tf", text, "terraform", "h", SETTINGS)
    assert [(c.start_line, c.end_line) for c in windows][:2] == [(1, 40), (31, 70)]
    assert windows[0].content.split("\n")[0] == "resource line 1" and windows[-1].end_line == 100
    assert all(c.kind == "text" and c.contiguous for c in windows)


def test_module_chunk_that_skips_rows_says_it_is_not_contiguous():
    text = "import os\n\n\ndef f():\n    return 1\n\n\nX = 2\n"
    module = [c for c in chunk_file("m.py", text, "python", "h", SETTINGS) if c.kind == "module"]
    assert len(module) == 1 and not module[0].contiguous
    assert module[0].content == "import os\n\nX = 2"


def test_the_catalogue_counts_references_a_few_files_at_a_time_as_all_at_once(chunks, tmp_path):
    from services.indexing.indexer import refresh_references
    from services.storage.catalog import Catalog, FileRecord

    class Index:  # what refresh_references reads: the catalogue
        def __init__(self, catalog):
            self._catalog = catalog

        def catalog(self):
            return self._catalog

    catalog = Catalog(tmp_path / "manifest.sqlite")
    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_path.setdefault(c.path, []).append(c)
    for path, file_chunks in by_path.items():
        catalog.commit_file(FileRecord(path, file_chunks[0].file_hash, 1, 1, file_chunks[0].language), file_chunks)
    assert sum(len(b) for b in catalog.chunk_batches(files=2)) == len(chunks)  # each chunk once
    refresh_references(Index(catalog))
    stored = {c.id: c.references for c in catalog.chunks()}
    assert stored == {c.id: c.references for c in chunks} and max(stored.values()) >= 5
