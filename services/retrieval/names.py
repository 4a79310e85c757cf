"""Names first: what a question asks for, and the definitions it names (the name channel).

`read(question)` tells navigation from a search: a bare name (`FixtureManager`), a dotted name
(`Store.save`, `pkg.mod.func`, `a::b`), a path (`printing/latex.py`, `latex.py:120`) or a few words that spell
one name (`fixture manager`) are navigation; anything else (a sentence, a bug report) is a question.
`find(catalog, reading)` looks the name up in the catalogue: the chunks that define it, best match first
(the qualified name as asked, then the symbol with the same case, then ignoring case, then spelled in words),
then as an editor's go-to-symbol lists them (sources before tests, by path); a dotted module path
(`_pytest.nodes`) gives the module's file. The query flow adds them to the pool every strategy reranks and, for
navigation, puts them first in this order.
Pure logic over the catalogue's `definitions` / `paths_ending` reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.core.files import is_test_file
from services.core.models import Chunk
from services.core.text import STOP_WORDS, split_identifier
from services.retrieval.definitions import dotted_size, whole
from services.retrieval.query_signals import extract, is_long, looks_like_code

NAME = "name"
DOTTED = "dotted"
PATH = "path"
QUESTION = "question"

_IDENT = r"[A-Za-z_$][\w$]*"
_NAME = re.compile(rf"{_IDENT}")
_DOTTED = re.compile(rf"{_IDENT}(?:(?:\.|::|#){_IDENT})+")
_PATH = re.compile(r"(?P<path>[\w.$@+-]*(?:/[\w.$@+-]+)*\.[A-Za-z][\w]*|[\w.$@+-]+(?:/[\w.$@+-]+)+)"
                   r"(?:(?::|#L|, line )(?P<line>\d+)(?::\d+)?)?")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*){1,4}")
_CODE_SUFFIXES = frozenset("""py pyi js jsx mjs cjs ts tsx java go rs rb php c h cc cpp hpp cs kt kts swift md rst
txt cfg toml ini json yaml yml html css scss sh bash m mm scala lua sql xml vue svelte""".split())
MAX_DEFINITIONS = 20  # a name defined more often than this is not one place to go
MENTIONED_NAMES = 20  # names of a sentence or a report looked up (the first ones)
PER_MENTIONED_NAME = 3  # and definitions taken for each


@dataclass(frozen=True)
class Reading:
    """How a question was read: `kind` is NAME, DOTTED, PATH or QUESTION; `name` what it names."""

    kind: str
    name: str = ""  # the name, dotted name or path as asked
    line: int | None = None  # a path's line (`latex.py:120`)

    @property
    def navigation(self) -> bool:
        return self.kind != QUESTION


@dataclass(frozen=True)
class Definition:
    chunk: Chunk
    match: str  # how it matched: "qualified name", "name", "name, other case", "name in words", "path", "line"

    @property
    def rank(self) -> int:
        """0 the best kind of match (for a bare name: a class or module-level function; 1: a method)."""
        return _ORDER[self.match]


def read(question: str) -> Reading:
    """The question as navigation (a name, a dotted name, a path) or as a question."""
    text = question.strip().strip("`'\"").strip()
    if text.endswith("()"):
        text = text[:-2]
    if not text or len(text) > 300:
        return Reading(QUESTION)
    path = _PATH.fullmatch(text)
    if path and _is_path(path.group("path")):
        return Reading(PATH, path.group("path").lstrip("./") or path.group("path"),
                       int(path.group("line")) if path.group("line") else None)
    if _DOTTED.fullmatch(text):
        return Reading(DOTTED, re.sub(r"::|#", ".", text))
    if _NAME.fullmatch(text):
        return Reading(NAME, text)
    if _WORDS.fullmatch(text) and not any(w.lower() in STOP_WORDS for w in text.split()):
        return Reading(NAME, text)  # "fixture manager": navigation only if a name is spelled so (see find)
    return Reading(QUESTION)


def _is_path(text: str) -> bool:
    if "/" in text:
        return True
    suffix = text.rsplit(".", 1)[-1].lower() if "." in text else ""
    return suffix in _CODE_SUFFIXES


def spelled(name: str) -> list[str]:
    """The identifiers a name may be written as: itself, and for words their CamelCase and snake_case."""
    if " " not in name:
        return [name]
    words = name.split()
    return ["".join(w[:1].upper() + w[1:] for w in words), "_".join(w.lower() for w in words)]


def find(catalog, reading: Reading) -> list[Definition]:
    """The chunks the reading names, best match first (empty for a question)."""
    if reading.kind == PATH:
        found = _path_definitions(catalog, reading)
        if not found and reading.line is None and _DOTTED.fullmatch(reading.name):
            found = _dotted_definitions(catalog, reading.name)  # `sphinx.builders.html`: a module, not a file
        return found
    if reading.kind == QUESTION:
        return []
    if reading.kind == DOTTED:
        return _dotted_definitions(catalog, reading.name)
    return _name_definitions(catalog, reading.name)


def _name_definitions(catalog, name: str) -> list[Definition]:
    forms = spelled(name)
    chunks = catalog.definitions(forms)
    words = " " in name

    def match(chunk: Chunk) -> str:
        if words:
            return "name in words"
        if chunk.symbol == name and chunk.qualified_name in ("", name):
            return "qualified name"
        return "name" if chunk.symbol == name else "name, other case"

    return _ranked([Definition(c, match(c)) for c in chunks])


def _dotted_definitions(catalog, dotted: str) -> list[Definition]:
    """`pkg.mod` naming a module: the module's file; else `Class.method`: chunks named `method` whose qualified
    name ends with the dotted name (or with its tail, for `module.Class` asked with the module)."""
    parts = dotted.split(".")
    module = _module_definitions(catalog, parts)
    if module:
        return module
    found = _dotted_matches(catalog.definitions([parts[-1]], ending=".".join(parts[-2:])), parts)
    if not found:  # `nodes.Node`: the module and a module-level name
        found = _dotted_matches(catalog.definitions([parts[-1]]), parts)
    return _ranked(found)


def _dotted_matches(chunks: list[Chunk], parts: list[str]) -> list[Definition]:
    """The chunks whose qualified name ends with the dotted name, or with its tail in the module it names.
    (Those ending with its last two parts are read first: `Config.__init__` among thousands of `__init__`.)"""
    found = []
    for chunk in chunks:
        size = dotted_size(chunk.path, chunk.qualified_name, parts)
        if size:
            found.append(Definition(chunk, _dotted_match(chunk, parts, size)))
    return found


def _dotted_match(chunk: Chunk, parts: list[str], size: int) -> str:
    """The whole dotted name matched first; a tail matched in the module asked (`nodes.Node`) after it."""
    if chunk.symbol != parts[-1]:
        return "name, other case"
    return "qualified name" if size == len(parts) else "name"


def _module_definitions(catalog, parts: list[str]) -> list[Definition]:
    """The file of module `a.b.c`, by suffix and case as asked (`Config.__init__` is no module `config`):
    `…/a/b/c.py`, else the package's `…/a/b/c/__init__.py`."""
    for tail in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
        found = [d for d in _path_definitions(catalog, Reading(PATH, tail)) if f"/{d.chunk.path}".endswith("/" + tail)]
        if found:
            return found
    return []


def _path_definitions(catalog, reading: Reading) -> list[Definition]:
    """The file's chunks: the one holding the line asked first, else the file's chunks in order."""
    out: list = []
    for path in catalog.paths_ending(reading.name)[:MAX_DEFINITIONS]:
        chunks = catalog.chunks(path=path)
        if reading.line is not None:
            holding = [c for c in chunks if c.start_line <= reading.line <= c.end_line]
            holding.sort(key=lambda c: c.end_line - c.start_line)  # the innermost chunk holding the line
            out.extend(Definition(c, "line") for c in holding[:1])
        elif chunks:  # the module-level chunk, else the file's first
            out.append(Definition(next((c for c in chunks if c.kind == "module"), chunks[0]), "path"))
    return out


_ORDER = {"qualified name": 0, "line": 0, "path": 0, "name": 1, "name, other case": 2, "name in words": 3,
          "mentioned": 4}


def _ranked(found: list[Definition]) -> list[Definition]:
    """Best match first, then sources before tests, by path and line (an editor's go-to-symbol); of a definition
    cut into pieces (a long class), only its first piece (definitions.whole: overloads stay definitions each)."""
    firsts = {id(group[0]) for group in whole(d.chunk for d in found)}
    ranked = sorted(found, key=lambda d: (d.rank, is_test_file(d.chunk.path), d.chunk.path, d.chunk.start_line))
    return [d for d in ranked if id(d.chunk) in firsts][:MAX_DEFINITIONS]


def mentioned(catalog, question: str) -> list[Definition]:
    """For a sentence: the definitions of the names it mentions that look like code (`get_records`,
    `LogCaptureFixture`), a few per name, the first names first. Not for a long question (a bug report):
    `bug-report` matches a report's names itself, and the file answers' own mention signal counts them
    (measured: adding them to the pool cost hybrid and heuristic 0.011-0.016 MRR@10 on file answers)."""
    if is_long(question):
        return []
    wanted = [n for n in extract(question).identifiers if looks_like_code(n) and len(n) > 3][:MENTIONED_NAMES]
    if not wanted:
        return []
    by_name: dict[str, list[Chunk]] = {}
    for chunk in catalog.definitions(wanted):
        by_name.setdefault(chunk.symbol.lower(), []).append(chunk)
    return [Definition(c, "mentioned") for n in wanted for c in by_name.get(n.lower(), [])[:PER_MENTIONED_NAME]]


def is_code_name(name: str) -> bool:
    """Whether an unknown name reads as code (`get_recordz`) rather than a word (`logging`)."""
    return " " not in name and (looks_like_code(name) or len(split_identifier(name)) > 1)
