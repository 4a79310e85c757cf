"""Property-based tests (hypothesis) of the scanner and the chunker, for every supported language:
arbitrary text and bytes never raise, chunk ids are unique, line ranges lie inside the file, and a
chunk's content is exactly its lines (or it says it is not contiguous), never over the size bound."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings as hypothesis_settings, strategies as st

from services.indexing.chunking import chunk_file
from services.indexing.chunking.languages import GRAMMARS
from services.indexing.scanning import SkipFileError, read_source, scan_workspace
from services.core.settings import Settings

LANGUAGES = sorted(GRAMMARS) + ["markdown", "text"]
SMALL = Settings(max_chunk_lines=12, max_chunk_chars=120, text_window_lines=8, text_window_overlap=3)
# Pieces of real syntax, so the grammars see definitions, nesting and broken code, not only noise.
SNIPPETS = [
    "def f(a):\n    return a\n", "class A(B):\n    def m(self):\n        pass\n", "@decorator\n",
    "function g() { return 1 }", "class C { m() { return 2 } }", "const h = () => 3;",
    "fn main() { let x = 1; }", "struct S { a: i32 }", "impl S { fn new() -> S { S { a: 1 } } }",
    "func (s *S) Run() error { return nil }", "public class J { void run() {} }",
    "interface I { void x(); }", "protocol P {}", "extension P { func y() {} }",
    "int main(void) { return 0; }", "namespace N { class K {} }", "module M\n  def z; end\nend\n",
    "<?php function p() {} ?>", "# Heading\n", "```\ncode\n```\n", "/** doc */", "// comment\n",
    "}", "{", "(", "\"unterminated", "'", "\t", "    ", "\n", "\r\n", "\r", "\n\n\n", "\x00", "é漢字🙂",
    "x" * 300, ";" * 50,
]
source_text = st.lists(st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=40)), max_size=40).map("".join)
PROPERTY = hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def file_lines(text: str) -> list[str]:
    """Lines as the chunker numbers them: "\\n", "\\r\\n" and "\\r" each end a line."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


@PROPERTY
@given(text=source_text, language=st.sampled_from(LANGUAGES))
@example(text="class C { m() { return 2 } }", language="javascript")  # issue #14: one line, two chunks
@example(text="class C { m() { return 2 } }" * 20, language="typescript")
def test_chunks_are_unique_bounded_and_exactly_their_lines(text, language):
    chunks = chunk_file("src/file", text, language, "filehash", SMALL)
    lines = file_lines(text)
    assert len({c.id for c in chunks}) == len(chunks)
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.content.strip() and len(chunk.content) <= SMALL.max_chunk_chars
        span = lines[chunk.start_line - 1:chunk.end_line]
        if chunk.contiguous:
            assert chunk.content == "\n".join(span)
        else:  # rows left out (module code around definitions) or a piece of one long line
            assert all(any(part in line for line in span) for part in chunk.content.split("\n"))


@PROPERTY
@given(text=source_text, language=st.sampled_from(LANGUAGES))
def test_chunking_is_stable_so_ids_survive_a_reindex(text, language):
    first = [c.id for c in chunk_file("a.x", text, language, "h", SMALL)]
    assert first == [c.id for c in chunk_file("a.x", text, language, "h", SMALL)]


@hypothesis_settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=3000), name=st.sampled_from(
    ["a.py", "b.js", "c.min.js", "d", "e.unknownext", "Makefile", "f.png", "g.md", "h.rs", "i.lock"]))
def test_scanning_and_reading_any_bytes_never_raise_and_account_for_the_file(data, name):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / name).write_bytes(data)
        result = scan_workspace(Path(folder))
        listed = [f.path for f in result.files] + [s.path for s in result.skipped]
        assert listed == [name]
        for source in result.files:
            try:
                text, _ = read_source(source)
            except SkipFileError as skip:
                assert skip.reason in ("binary file", "not UTF-8 text", "minified/generated")
            else:
                chunk_file(source.path, text, source.language, "h", SMALL)
