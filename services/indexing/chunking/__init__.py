"""Split a source file into retrievable chunks: one per definition, plus module code and text windows.

`chunk_file(path, text, language, file_hash, settings)` is the entry point; `count_references`
fills in `Chunk.references` once every chunk of a workspace is known.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import PurePosixPath

from services.indexing.chunking.references import count_references
from services.indexing.chunking.treesitter import Definition, find_definitions, has_grammar
from services.indexing.chunking.windows import (
    bounded_pieces, content_hash, normalise_newlines, split_lines, window_chunks, window_spans,
)
from services.core.models import Chunk
from services.core.settings import Settings

__all__ = ["chunk_file", "count_references"]

log = logging.getLogger(__name__)


def chunk_file(path: str, text: str, language: str, file_hash: str, settings: Settings) -> list[Chunk]:
    """Chunks of one file, in file order, each at most `settings.max_chunk_chars` long and with an id
    unique in the file. Line numbers count "\n", "\r\n" and "\r" line ends. Falls back to line
    windows when there is no grammar."""
    if not text.strip():
        return []
    text = normalise_newlines(text)
    return _number_duplicates(_chunks(path, text, language, file_hash, settings))


def _chunks(path: str, text: str, language: str, file_hash: str, settings: Settings) -> list[Chunk]:
    max_chars = max(1, settings.max_chunk_chars)
    if has_grammar(language):
        try:
            definitions = find_definitions(text.encode("utf-8"), language)
        except Exception as exc:  # a grammar crash must not lose the file
            log.warning("parsing %s failed (%s); using line windows", path, exc)
        else:
            return _CodeChunker(path, text, language, file_hash, settings).chunks(definitions)
    return window_chunks(path, split_lines(text), language, file_hash,
                         settings.text_window_lines, settings.text_window_overlap, max_chars)


def _number_duplicates(chunks: list[Chunk]) -> list[Chunk]:
    """Give the second, third... chunk with the same span and content an ordinal, so ids are unique
    (a class and its method on one minified line have the same span and text)."""
    seen: dict[str, int] = {}
    numbered = []
    for chunk in chunks:
        count = seen.get(chunk.id, 0)
        seen[chunk.id] = count + 1
        numbered.append(replace(chunk, ordinal=count) if count else chunk)
    return numbered


class _CodeChunker:
    def __init__(self, path: str, text: str, language: str, file_hash: str, settings: Settings) -> None:
        self.path = path
        self.lines = split_lines(text)
        self.max_chars = max(1, settings.max_chunk_chars)
        self.language = language
        self.file_hash = file_hash
        self.max_lines = max(10, settings.max_chunk_lines)
        self.overlap = min(settings.text_window_overlap, self.max_lines // 2)

    def chunks(self, definitions: list[Definition]) -> list[Chunk]:
        result: list[Chunk] = []
        for definition in definitions:
            self._emit(definition, result)
        result.extend(self._module_chunks(definitions))
        result.sort(key=lambda c: (c.start_line, -c.end_line))
        return result

    def _emit(self, definition: Definition, out: list[Chunk]) -> None:
        start, end = definition.start_row, min(definition.end_row, len(self.lines) - 1)
        if definition.is_container:
            if end - start + 1 > self.max_lines and definition.members:
                end = max(start, min(m.start_row for m in definition.members) - 1)
                end = min(end, start + self.max_lines - 1)
            out.extend(self._chunks(definition, start, end))
            for member in definition.members:
                self._emit(member, out)
        elif end - start + 1 > self.max_lines:
            for first, last in window_spans(end - start + 1, self.max_lines, self.overlap):
                out.extend(self._chunks(definition, start + first, start + last - 1))
        else:
            out.extend(self._chunks(definition, start, end))

    def _chunks(self, definition: Definition, start: int, end: int) -> list[Chunk]:
        """Rows start..end of a definition, as one chunk or, past max_chars, several."""
        return [
            Chunk(
                path=self.path, language=self.language, start_line=first + 1, end_line=last + 1,
                content=content, symbol=definition.symbol, qualified_name=definition.qualified_name,
                kind=definition.kind, bases=definition.bases, docstring=definition.docstring,
                content_hash=content_hash(content), file_hash=self.file_hash, contiguous=contiguous,
            )
            for first, last, content, contiguous in bounded_pieces(range(start, end + 1), self.lines, self.max_chars)
            if content.strip()
        ]

    def _module_chunks(self, definitions: list[Definition]) -> list[Chunk]:
        """Code outside every top-level definition, as one chunk (or a few if it is long)."""
        covered = [False] * len(self.lines)
        for definition in definitions:
            for row in range(definition.start_row, min(definition.end_row, len(self.lines) - 1) + 1):
                covered[row] = True
        rows = _collapse_blank_rows([r for r in range(len(self.lines)) if not covered[r]], self.lines)
        if not any(self.lines[r].strip() for r in rows):
            return []
        symbol = PurePosixPath(self.path).stem
        chunks = []
        for start in range(0, len(rows), self.max_lines):
            for first, last, content, contiguous in bounded_pieces(rows[start:start + self.max_lines],
                                                                   self.lines, self.max_chars):
                if content.strip():
                    chunks.append(Chunk(
                        path=self.path, language=self.language, start_line=first + 1, end_line=last + 1,
                        content=content, symbol=symbol, qualified_name=symbol, kind="module",
                        content_hash=content_hash(content), file_hash=self.file_hash, contiguous=contiguous,
                    ))
        return chunks


def _collapse_blank_rows(rows: list[int], lines: list[str]) -> list[int]:
    """Drop leading/trailing blank rows and keep at most one blank row in a row."""
    kept: list[int] = []
    for row in rows:
        blank = not lines[row].strip()
        if blank and (not kept or not lines[kept[-1]].strip()):
            continue
        kept.append(row)
    while kept and not lines[kept[-1]].strip():
        kept.pop()
    return kept
