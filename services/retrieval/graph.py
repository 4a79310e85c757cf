"""Follow the code: who uses a definition ("references") and what a chunk uses ("uses").

The index keeps, per file, the names its code uses and where (services/storage/code_graph.py); the
definitions are the catalogue's chunks. A name is resolved here, at query time: the definitions with
that name are its candidates; where the file using it imports it from a module (Python's `from m import
name`) the candidates in that module win, else those in the file itself; where neither tells, every
candidate stays (a method called on an object of unknown type). A target is a name (`parse`,
`Class.method`) or a chunk id (what the window and agents hold for a result).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from services.core import files
from services.core.models import Chunk, GotoHit, GraphAnswer, GraphFile, GraphLink
from services.storage.code_graph import KINDS, LOCAL, Use, decode
from services.retrieval import on_disk
from services.retrieval.goto import check_query
from services.retrieval.definitions import named, parts_of, whole

MAX_LINKS = 2000  # rows an answer lists; `total` still counts them all
MAX_MENTION_FILES = 400  # files read from disk for a name's mentions in text (a common word is in thousands)
MAX_CANDIDATES = 3  # a name none of whose definitions a file imports or holds links to this many at most
HOOK_FILES = 3  # a prefixed module-level function defined in this many files is a plugin hook's implementation
SELF = frozenset({"self", "cls", "this"})
CONTAINERS = frozenset({"class", "struct", "interface", "enum", "protocol"})
_CHUNK_ID = re.compile(r"^.+:\d+-\d+:[0-9a-f]{4,}(~\d+)?$")


@dataclass(frozen=True)
class Target:
    """A definition: its chunks merged (a long function is cut into several)."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    qualified_name: str
    kind: str
    language: str
    chunk_id: str
    hook: str = ""  # "impl" / "spec": decorated @hookimpl / @hookspec

    @property
    def key(self) -> tuple[str, str]:
        return self.path, self.qualified_name

    def hit(self) -> GotoHit:
        return GotoHit(self.path, self.start_line, self.end_line, self.symbol, self.qualified_name, self.kind,
                       self.language, 1.0, self.qualified_name or self.symbol)


def references(catalog, query: str, root: Path | None = None, limit: int = files.MAX_FILE_BYTES) -> GraphAnswer:
    """Every use of the target's name that may mean it, grouped by file, each with its enclosing chunk;
    then, with the workspace `root`, the name's other mentions as a word (comments, docstrings, strings:
    `how` "text"), as an editor lists usages in comments and strings after the code's."""
    started = time.perf_counter()
    query = check_query(query, 1)
    targets, symbol = resolve(catalog, query)
    if not catalog.graph.graph_ready():
        return _answer(query, "references", targets, [], started, NOT_READY)
    rivals = _definitions(catalog, [symbol]).get(symbol, [])
    wanted = {t.key for t in targets}
    rows = [(path, decode(text)) for _name, path, text in catalog.graph.uses_of([symbol])]
    if not targets and not rows:
        return _answer(query, "references", [], [], started, f"No symbol named {shown(query, targets)!r} in the index.")
    if root is not None:
        rows = _as_on_disk(catalog, root.resolve(), rows, limit)
    kept: list[tuple[str, Use]] = []
    # every line using the name in code, whichever definition (or local) it means
    coded = {(path, use.line) for path, uses in rows for use in uses}
    for path, uses in _unshadowed(catalog, rows):
        bound = _binding(path, uses, rivals)
        if not targets or len(wanted) >= len({r.key for r in rivals}) or not bound or wanted & {t.key for t in bound}:
            kept += [(path, use) for use in uses]
    places = [(path, use.line, KINDS.get(use.kind, "name")) for path, use in kept]
    if root is not None:
        places += _mentions(catalog, root.resolve(), symbol, coded, limit)
    links = _enclosed(catalog, symbol, places)
    message = "" if links else f"No uses of {shown(query, targets)!r} found in the index."
    if not targets and links:
        message = f"{symbol!r} is not defined in the indexed files; these are its uses by name."
    return _answer(query, "references", targets, links, started, message)


def uses(catalog, query: str) -> GraphAnswer:
    """The definitions the target's code uses (its calls, attributes, imports, bases, types), grouped by
    the file that defines them, each with the lines of the target that use it."""
    started = time.perf_counter()
    query = check_query(query, 1)
    targets, _symbol = resolve(catalog, query)
    if not targets:
        return _answer(query, "uses", [], [], started, f"No definition named {shown(query, targets)!r} in the index.")
    if not catalog.graph.graph_ready():
        return _answer(query, "uses", targets, [], started, NOT_READY)
    found: dict[tuple[str, str], tuple[Target, list[int], str]] = {}
    for target in targets:
        for definition, lines, how in _used_by(catalog, target):
            if definition.key in found:
                found[definition.key][1].extend(lines)
            else:
                found[definition.key] = (definition, list(lines), how)
    home = {t.path for t in targets}
    ordered = sorted(found.values(), key=lambda f: (f[2] == "hook", f[0].path not in home, f[0].path, f[0].start_line))
    links = [GraphLink(d.path, d.start_line, d.symbol, how, d.qualified_name, hook_kind(d) if how == "hook" else d.kind,
                       d.chunk_id, tuple(sorted(set(lines))))
             for d, lines, how in ordered]
    message = "" if links else f"{shown(query, targets)!r} uses no definition of the indexed files."
    return _answer(query, "uses", targets, links, started, message)


NOT_READY = "The code graph is not built yet: index the workspace once more to add it (nothing is re-embedded)."


def shown(query: str, targets: list[Target]) -> str:
    """How a message names what was asked: a chunk id (what the window holds) as its definition's name, or
    as its file and line when it names none, never as the raw id."""
    if not _CHUNK_ID.match(query):
        return query
    if targets:
        return targets[0].qualified_name or targets[0].symbol or f"{targets[0].path}:{targets[0].start_line}"
    path, _, rest = query.rpartition(":")[0].rpartition(":")
    return f"{path}:{rest.split('-')[0]}" if path else query


def resolve(catalog, query: str) -> tuple[list[Target], str]:
    """The definitions a query names, and their symbol: a chunk id, `Class.method` / `module.name`, or a name
    (its exact case first, then any case)."""
    if _CHUNK_ID.match(query):
        chunks = catalog.chunks(ids=[query])
        if chunks:
            return _targets(chunks), chunks[0].symbol
    parts = parts_of(query) or [query]
    candidates = _definitions(catalog, [parts[-1]], exact=False)
    found = named([t for ts in candidates.values() for t in ts], parts)  # the rule questions and go-to read it by
    return found, (found[0].symbol if found else parts[-1])


def _definitions(catalog, names: list[str], exact: bool = True) -> dict[str, list[Target]]:
    """{symbol: its definitions} (exact case unless asked), each definition once."""
    wanted = set(names)
    found: dict[str, list[Target]] = defaultdict(list)
    for target in _targets([c for c in catalog.definitions(names) if not exact or c.symbol in wanted]):
        found[target.symbol].append(target)
    return found


def _targets(chunks: list[Chunk]) -> list[Target]:
    """One Target per definition, whole (definitions.whole)."""
    return [Target(g[0].path, g[0].start_line, max(c.end_line for c in g), g[0].symbol, g[0].qualified_name,
                   g[0].kind, g[0].language, g[0].id, _hook_mark(g[0].content)) for g in whole(chunks)]


def _hook_mark(content: str) -> str:
    """"spec" / "impl" for a definition decorated @hookspec / @hookimpl (its decorators are in its chunk)."""
    head = content.split("def ", 1)[0]
    return "spec" if "hookspec" in head else "impl" if "hookimpl" in head else ""


def _module(path: str) -> str:
    """`src/_pytest/python.py` -> `src._pytest.python`; a package's `__init__.py` is the package."""
    stem = re.sub(r"\.[^./]+$", "", path)
    return re.sub(r"/__init__$", "", stem).replace("/", ".")


def _binding(path: str, uses: list[Use], candidates: list[Target]) -> list[Target]:
    """The candidates a file's uses of a name mean, as far as the file tells: those of the module it
    imports the name from, else its own; [] when it does not tell."""
    for use in uses:
        if use.module:
            module = use.module.lstrip(".")
            chosen = [c for c in candidates if _is_module(c.path, module)]
            if chosen:
                return chosen
    return [c for c in candidates if c.path == path]


def _imported_modules(in_file: dict[str, list[Use]]) -> set[str]:
    """The modules a file imports from, and those it imports as names (`from pkg import tools`: `pkg` and
    `pkg.tools`)."""
    modules = set()
    for name, uses in in_file.items():
        for use in uses:
            module = use.module.lstrip(".")
            if module:
                modules |= {module, f"{module}.{name}"}
    return modules


def _is_module(path: str, module: str) -> bool:
    """Whether the file at `path` is `module` (`src/_pytest/config/__init__.py` is `_pytest.config`)."""
    name = _module(path)
    return name == module or name.endswith("." + module)


def _mentions(catalog, root: Path, symbol: str, coded: set[tuple[str, int]],
              limit: int) -> list[tuple[str, int, str]]:
    """(path, line, "text") of the lines of indexed files, read as they are on disk, that hold the name
    as a word (as `grep -w` finds it) and are neither a use the graph holds (`coded`, any meaning of the
    name) nor a definition of it. Files are those whose keywords hold the name, MAX_MENTION_FILES at most."""
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(symbol)}(?![A-Za-z0-9_])")
    defines = re.compile(rf"\b(?:def|class|function|func|fn|interface|struct|enum|trait|type)\s+{re.escape(symbol)}\b")
    found = []
    for path in catalog.keywords.paths_holding(symbol.lower())[:MAX_MENTION_FILES]:
        text = on_disk.read_text(root, path, limit)
        for number, line in enumerate(text.splitlines(), 1):
            if (path, number) not in coded and word.search(line) and not defines.search(line):
                found.append((path, number, "text"))
    return found


def _as_on_disk(catalog, root: Path, rows: list[tuple[str, list[Use]]],
                limit: int) -> list[tuple[str, list[Use]]]:
    """The index's uses, per file, at the lines the file on disk has now: in a file changed since it was
    indexed (size or mtime, then its hash, differ from the catalogue's), each use moves to the line that now
    holds its indexed line's text (the nearest), and is dropped when none does, so the file's mentions read
    from disk never list it a second time. A file that cannot be read keeps the index's lines."""
    records = catalog.files([path for path, _uses in rows])
    moved: dict[str, dict[int, int] | None] = {}
    out = []
    for path, uses in rows:
        if path not in moved:
            moved[path] = on_disk.moved_lines(catalog, root, path, records.get(path), limit)
        lines = moved[path]
        if lines is None:
            out.append((path, uses))
        else:
            out.append((path, [replace(u, line=lines[u.line]) for u in uses if u.line in lines]))
    return out


def _unshadowed(catalog, rows: list[tuple[str, list[Use]]]) -> list[tuple[str, list[Use]]]:
    """Each file's uses less those of a local of the same name (a parameter, an assigned name): a plain use
    inside the innermost function that binds the name means that local; the bindings go too."""
    bound = [path for path, uses in rows if any(u.kind == LOCAL for u in uses)]
    spans = defaultdict(list)
    for row in catalog.graph.chunk_spans(bound):
        if row[6] in ("function", "method"):
            spans[row[0]].append((row[2], row[3]))
    out = []
    for path, uses in rows:
        scopes = [_innermost(spans[path], u.line) for u in uses if u.kind == LOCAL]
        out.append((path, [u for u in uses if u.kind != LOCAL and (u.receiver or not any(
            a <= u.line <= b for a, b in scopes))]))
    return out


def _innermost(spans: list[tuple[int, int]], line: int) -> tuple[int, int]:
    """The narrowest span holding the line; (0, -1), holding none, when none does."""
    holding = [s for s in spans if s[0] <= line <= s[1]]
    return min(holding, key=lambda s: s[1] - s[0]) if holding else (0, -1)


def _enclosed(catalog, symbol: str, places: list[tuple[str, int, str]]) -> list[GraphLink]:
    """Links for (path, line, how), each with the innermost chunk holding its line; a file's code uses
    first, its mentions in text after them."""
    spans = defaultdict(list)
    for row in catalog.graph.chunk_spans([path for path, _line, _how in places]):
        spans[row[0]].append(row)
    links = []
    for path, line, how in sorted(places, key=lambda p: (p[0], p[2] == "text", p[1])):
        holders = [r for r in spans[path] if r[2] <= line <= r[3]]
        inner = min(holders, key=lambda r: r[3] - r[2]) if holders else None
        links.append(GraphLink(path, line, symbol, how,
                               inner[5] if inner else "", inner[6] if inner else "", inner[7] if inner else ""))
    return links


def _used_by(catalog, target: Target) -> list[tuple[Target, list[int], str]]:
    """(definition, lines, how) for each definition the target's lines use (a class's: its members' lines
    too). A name bound in those lines (a parameter, a local) is no use of a definition elsewhere; a member
    used on an object (`obj.attr`) is followed only where the object's class is known or one candidate is
    left; a hook's implementations come with how "hook"."""
    in_file = {name: decode(text) for name, text in catalog.graph.uses_in(target.path)}
    spans, own = _spans(catalog, target)
    inside = {name: [u for u in uses if any(a <= u.line <= b for a, b in spans)] for name, uses in in_file.items()}
    local = {name for name, uses in inside.items() if any(u.kind == LOCAL for u in uses)}
    inside = {name: [u for u in uses if u.kind != LOCAL and (u.receiver or name not in local)]
              for name, uses in inside.items()}
    inside = {name: uses for name, uses in inside.items() if uses}
    definitions = _definitions(catalog, list(inside))
    imported = _imported_modules(in_file)
    found = []
    for name, uses in sorted(inside.items()):
        candidates = [d for d in definitions.get(name, []) if d.key != target.key and d.key not in own]
        by_receiver: dict[str, list[Use]] = defaultdict(list)
        for use in uses:
            by_receiver[use.receiver].append(use)
        hook = _is_hook(name, definitions.get(name, []))
        chosen: dict[tuple[str, str], tuple[Target, list[int]]] = {}
        for receiver, group in by_receiver.items():
            bound = _hooks(candidates) if hook else _bound(target, name, receiver, in_file, candidates, imported)
            for definition in bound:
                chosen.setdefault(definition.key, (definition, []))[1].extend(u.line for u in group)
        for definition, lines in chosen.values():
            found.append((definition, sorted(lines), "hook" if hook else KINDS.get(uses[0].kind, "name")))
    return found


def _bound(target: Target, name: str, receiver: str, in_file: dict[str, list[Use]], candidates: list[Target],
           imported: set[str]) -> list[Target]:
    """The candidates a use of `name` on `receiver` ("" for none) means, as far as the file tells."""
    if receiver in SELF:
        owner = target.qualified_name if target.kind in CONTAINERS else target.qualified_name.rpartition(".")[0]
        mine = [c for c in candidates if c.path == target.path and c.qualified_name == f"{owner}.{name}"]
        if mine:
            return mine
    elif receiver and receiver != "?":
        module = any(u.kind == "i" for u in in_file.get(receiver, []))  # `from pkg import tools`, `import a as b`
        dotted = f"{receiver}.{name}"
        named = [c for c in candidates if (c.qualified_name == dotted or c.qualified_name.endswith("." + dotted)
                                           or module and c.qualified_name == name and _is_module(c.path, receiver))
                 and (c.path == target.path or any(_is_module(c.path, m) for m in imported) or module)]
        if named:  # a class's member (`Base.run`), a module's name (`tools.prepare`)
            return named
    known = _binding(target.path, in_file.get(name, []), candidates) or [
        d for d in candidates if any(_is_module(d.path, module) for module in imported)][:MAX_CANDIDATES]
    if receiver:  # a member of an object of unknown class: only when one candidate is left
        return known if len(known) == 1 else []
    return known  # a name the file neither imports nor defines is not guessed at by name


def _spans(catalog, target: Target) -> tuple[list[tuple[int, int]], set[tuple[str, str]]]:
    """The target's lines, and for a class its members' lines too; with the members' keys."""
    spans = [(target.start_line, target.end_line)]
    if target.kind not in CONTAINERS:
        return spans, set()
    prefix = target.qualified_name + "."
    members = [r for r in catalog.graph.chunk_spans([target.path]) if r[5].startswith(prefix)]
    return spans + [(r[2], r[3]) for r in members], {(target.path, r[5]) for r in members}


def _is_hook(name: str, definitions: list[Target]) -> bool:
    """A plugin hook (pluggy's `pytest_*`): a definition marked @hookimpl / @hookspec, or a prefixed name
    defined as a module-level function in HOOK_FILES files or more."""
    if any(d.hook for d in definitions):
        return True
    files = {d.path for d in definitions if d.qualified_name == d.symbol and d.kind == "function"}
    return "_" in name.strip("_") and len(files) >= HOOK_FILES


def _hooks(definitions: list[Target]) -> list[Target]:
    """A hook's specification and implementations: its module-level functions, wherever they are."""
    return [d for d in definitions if d.qualified_name == d.symbol and d.kind == "function"]


def hook_kind(definition: Target) -> str:
    """How a hook's definition reads in "Uses": its specification or one of its implementations."""
    spec = definition.hook == "spec" or definition.path.rsplit("/", 1)[-1].startswith("hookspec")
    return "hook specification" if spec else "hook implementation"


def _answer(query: str, direction: str, targets: list[Target], links: list[GraphLink], started: float,
            message: str) -> GraphAnswer:
    by_file: dict[str, list[GraphLink]] = {}
    for link in links[:MAX_LINKS]:
        by_file.setdefault(link.path, []).append(link)
    if len(links) > MAX_LINKS:
        message = message or f"Showing the first {MAX_LINKS} of {len(links)} uses."
    return GraphAnswer(query, direction, [t.hit() for t in targets],
                       [GraphFile(path, rows) for path, rows in by_file.items()], len(links), message,
                       {"total": round((time.perf_counter() - started) * 1000, 2)})


# --- the graph as evidence for file answers (services/retrieval/file_answer.py) ---
FOLLOWED = frozenset({"call", "attribute", "base", "hook"})  # the uses a caller's vote follows (not imports or mere names)


def chunk_target(chunk: Chunk) -> Target:
    """A retrieved chunk as a definition whose lines are followed."""
    return Target(chunk.path, chunk.start_line, chunk.end_line, chunk.symbol, chunk.qualified_name, chunk.kind,
                  chunk.language, chunk.id)


def frame_targets(catalog, frames) -> list[Target]:
    """The definitions a traceback's frames run in (`File ".../_pytest/python.py", line 12, in parse`):
    the frame's function defined in a file whose last two path components are the frame's."""
    names = [f.function for f in frames if f.function and not f.function.startswith("<")]
    if not names:
        return []
    found = _definitions(catalog, names)
    out: list[Target] = []
    for frame in frames:
        parts = frame.path.replace("\\", "/").split("/")
        for target in found.get(frame.function, []):
            own = target.path.split("/")
            n = min(2, len(parts), len(own))
            if parts[-n:] == own[-n:] and target not in out:
                out.append(target)
    return out


def named_targets(catalog, names: list[str], skip: Sequence[Target] = ()) -> list[Target]:
    """The definitions of the names a question uses (`lambdify`), those of names defined MAX_CANDIDATES times
    at most (a common method name says nothing), less `skip` (e.g. the traceback's)."""
    found = _definitions(catalog, names)
    out: list[Target] = []
    for name in names:
        candidates = found.get(name, [])
        if len({c.key for c in candidates}) <= MAX_CANDIDATES:
            out += [t for t in candidates if t not in skip and t not in out]
    return out


def caller_files(catalog, callee: Target) -> set[str]:
    """The other files whose code calls the callee (or uses it as an attribute or base), as `references`
    resolves its name."""
    if not callee.symbol or callee.kind in ("module", "text"):
        return set()
    answer = references(catalog, callee.chunk_id or callee.qualified_name or callee.symbol)
    return {f.path for f in answer.files
            if f.path != callee.path and any(link.how in FOLLOWED for link in f.links)}


def callee_files(catalog, caller: Target) -> set[str]:
    """The other files defining what the caller's lines call, or whose attributes or bases it uses."""
    return {definition.path for definition, _lines, how in _used_by(catalog, caller)
            if how in FOLLOWED and definition.path != caller.path}
