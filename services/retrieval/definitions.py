"""What a definition is and what a name names. `whole`: one definition from the chunker's pieces, for go to
symbol and references alike. `named`: the one rule by which a question (names.find), go to symbol's exact tier
(goto.SymbolFinder) and references (graph.resolve) resolve `name`, `Class.method` and `module.name` to
definitions, so that `query a.b.C`, `goto a.b.C` and `refs a.b.C` name the same ones (tests/test_names_agree.py).
Go to symbol adds its fuzzy tier after these; a question ranks them (names.find)."""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence, TypeVar


class Named(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def symbol(self) -> str: ...
    @property
    def qualified_name(self) -> str: ...


class Piece(Named, Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


N = TypeVar("N", bound=Named)
P = TypeVar("P", bound=Piece)


def whole(pieces: Iterable[P]) -> list[list[P]]:
    """The pieces of each definition, grouped: the chunker cuts a long one into several, each with the
    definition's file, names and kind, their lines touching or overlapping. Two definitions of one name
    in one file (`@overload`s, a property's setter) stay two. By file and first line."""
    runs: dict[tuple[str, str, str, str], list[list[P]]] = {}
    ends: dict[tuple[str, str, str, str], int] = {}  # the last line of each key's latest definition
    for piece in sorted(pieces, key=lambda p: (p.path, p.start_line, p.end_line)):
        key = (piece.path, piece.qualified_name, piece.symbol, piece.kind)
        groups = runs.setdefault(key, [])
        if groups and piece.start_line <= ends[key] + 1:
            groups[-1].append(piece)
            ends[key] = max(ends[key], piece.end_line)
        else:
            groups.append([piece])
            ends[key] = piece.end_line
    return sorted((g for gs in runs.values() for g in gs), key=lambda g: (g[0].path, g[0].start_line, g[0].end_line))


def parts_of(name: str) -> list[str]:
    """`a.b.C`, `a::b::C`, `a#C` -> ["a", "b", "C"]."""
    return [p for p in name.replace("::", ".").replace("#", ".").split(".") if p]


def named(items: Sequence[N], parts: list[str]) -> list[N]:
    """Of `items` (definitions whose symbol is the name's last part in some case), those the name names: its
    exact case (any case where none has it); for a dotted name, those the whole name names, else those a tail
    of it names in the module its head names."""
    last = parts[-1]
    same = [d for d in items if d.symbol == last] or [d for d in items if d.symbol.lower() == last.lower()]
    if len(parts) == 1:
        return same
    sizes = [dotted_size(d.path, d.qualified_name, parts) for d in same]
    full = [d for d, size in zip(same, sizes) if size == len(parts)]
    return full or [d for d, size in zip(same, sizes) if size]


def dotted_size(path: str, qualified_name: str, parts: list[str]) -> int:
    """How many of the dotted name's last parts the definition's qualified name ends with, the parts
    before them naming its module (`nodes.Node` in `…/nodes.py`); 0: it is not what the name names."""
    qualified = qualified_name.lower()
    for size in range(len(parts), 0, -1):
        tail = ".".join(parts[-size:]).lower()
        if qualified == tail or qualified.endswith("." + tail):
            return size if size == len(parts) or in_module(path, parts[:-size]) else 0
    return 0


def in_module(path: str, module: list[str]) -> bool:
    """Whether `path` is module `a.b` (`…/a/b.py`) or in package `a.b` (`…/a/b/…`), by path components."""
    folders = "/" + path.lower().rsplit(".", 1)[0]
    wanted = "/" + "/".join(module).lower()
    return folders.endswith(wanted) or wanted + "/" in folders
