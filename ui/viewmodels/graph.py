"""Follow the code in the window, Qt-free: for the selected result, who uses it ("Used by") and what it
uses ("Uses"), as rows grouped by file, and the code a row opens (a ResultChunk for the code pane, at the
row's line). Each row is a node of a call hierarchy: expanding a "Used by" row lists who uses the
definition it is in, a "Uses" row what that definition uses, asked of the engine when expanded; a
definition already above a row is marked recursive rather than followed again. The engine's answers are
services.core.models.GraphAnswer (services/retrieval/graph.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from services.core.models import GotoHit, GraphAnswer, GraphLink, ResultChunk
from ui.viewmodels.goto import code_item

USED_BY, USES = "references", "uses"
TITLES = {USED_BY: "Used by", USES: "Uses"}
NO_GRAPH = frozenset({"text", "markdown"})  # languages without a grammar have no references


CODE, HOOKS, TESTS, DOCS = "code", "hooks", "tests", "docs"
SECTIONS = {HOOKS: "Hook implementations", TESTS: "Tests", DOCS: "Documentation"}  # headed apart, after the code
NOT_FOLLOWED = frozenset({"module", "text", ""})  # kinds of chunk a row cannot be expanded from
RECURSIVE = "  ↻ recursive"


@dataclass(frozen=True)
class CallRow:
    """A node of the call tree: its text, the link it opens, and the definitions above it (path, qualified
    name), from the subject down, to mark a cycle rather than follow it."""

    text: str
    link: GraphLink
    trail: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return self.link.path, self.link.qualified_name

    @property
    def recursive(self) -> bool:
        return self.key in self.trail

    @property
    def expandable(self) -> bool:
        """A definition (function, method, class) not already above it; never a mention in text."""
        link = self.link
        return (link.how != "text" and link.kind not in NOT_FOLLOWED and bool(link.chunk_id or link.qualified_name)
                and not self.recursive)


@dataclass(frozen=True)
class Level:
    """An expanded row's children, or what it says when it has none."""

    rows: list[CallRow]
    empty: str = ""
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")


@dataclass(frozen=True)
class FileRows:
    """A file's heading ("pkg/first.py · 2"), its rows, each with the link it opens, and its section."""

    heading: str
    rows: list[CallRow]
    section: str = CODE


def section_of(path: str) -> str:
    """Documentation (.md, .rst, .txt, changelogs), tests (a test folder or file), else code."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(DOC_SUFFIXES) or "/" not in path and name.upper().startswith(("CHANGELOG", "README")):
        return DOCS
    folders = path.lower().split("/")[:-1]
    if any(f in ("test", "tests", "testing") for f in folders) or name.startswith("test_") \
            or name.endswith(("_test.py", "_tests.py")) or name == "conftest.py":
        return TESTS
    return CODE


class GraphViewModel:
    """Asks the engine for both lists of one chunk; only the newest selection's answers count."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.answers: dict[str, GraphAnswer | None] = {USED_BY: None, USES: None}
        self.subject: ResultChunk | None = None
        self._asked = 0

    @property
    def generation(self) -> int:
        """Counts the selections asked for: rows of an older one are gone."""
        return self._asked

    async def load(self, workspace: str, item: ResultChunk | None) -> bool:
        """Both answers for the chunk (none for no chunk); False when a newer selection came meanwhile."""
        self._asked += 1
        asked = self._asked
        self.subject = item
        target = target_of(item) if item is not None else ""
        if item is None or not target or not workspace or item.chunk.language in NO_GRAPH:  # a whole file has no name to follow
            self.answers = {USED_BY: None, USES: None}
            return True
        used_by, uses = await asyncio.gather(self.engine.references(target, workspace),
                                             self.engine.uses(target, workspace))
        if asked != self._asked:
            return False
        self.answers = {USED_BY: used_by, USES: uses}
        return True

    def groups(self, direction: str) -> list[FileRows]:
        answer = self.answers[direction]
        return [] if answer is None else file_rows(answer, self.trail())

    def trail(self) -> tuple[tuple[str, str], ...]:
        """The subject, above every row."""
        chunk = self.subject.chunk if self.subject is not None else None
        return ((chunk.path, chunk.qualified_name),) if chunk is not None and chunk.qualified_name else ()

    async def expand(self, workspace: str, direction: str, row: CallRow) -> Level | None:
        """One level deeper under `row`: who uses its definition (Used by), or what it uses (Uses); None when
        a newer selection came meanwhile (the rows it would go under are gone)."""
        asked = self._asked
        ask = self.engine.references if direction == USED_BY else self.engine.uses
        answer = await ask(row.link.chunk_id or row.link.qualified_name, workspace)
        if asked != self._asked:
            return None
        links = [link for group in answer.files for link in group.links]
        if direction == USED_BY:
            links = callers(links)
        trail = row.trail + (row.key,)
        rows = [CallRow(call_text(direction, link, trail), link, trail) for link in links]
        empty = answer.message or ("Nothing else uses it." if direction == USED_BY else "It uses no indexed definition.")
        return Level(rows, "" if rows else empty)

    def empty_text(self, direction: str) -> str:
        """What a list with no rows says."""
        answer = self.answers[direction]
        if self.subject is None:
            return "Select a result to see what uses it and what it uses."
        if answer is None and not target_of(self.subject):
            return "A whole file: put the cursor on a name in the code pane and press Alt+F7."
        if answer is None:
            return f"No code graph for {self.subject.chunk.language or 'this'} chunks."
        return answer.message or ("Nothing uses it." if direction == USED_BY else "It uses no indexed definition.")

    def title(self, direction: str) -> str:
        """The tab's title names what it lists: "Used by Session (117)"."""
        answer = self.answers[direction]
        name = self.subject_name()
        title = f"{TITLES[direction]} {name}" if name and answer is not None else TITLES[direction]
        return f"{title} ({answer.total})" if answer is not None and answer.total else title

    def subject_name(self) -> str:
        chunk = self.subject.chunk if self.subject is not None else None
        return (chunk.qualified_name or chunk.symbol) if chunk is not None else ""


def target_of(item: ResultChunk) -> str:
    """What to ask about: a catalogued chunk by its id; a definition opened by go to symbol by its name."""
    chunk = item.chunk
    return chunk.id if chunk.content_hash else (chunk.qualified_name or chunk.symbol)


def file_rows(answer: GraphAnswer, trail: tuple[tuple[str, str], ...] = ()) -> list[FileRows]:
    """Per file: a heading and one row per link, "  42  call in Loader.load" (Used by) or
    "   4  function normalise · line 6" (Uses); the code's files first, then the hook implementations a
    call reaches (Uses), the tests', then the documentation's (each in the engine's order)."""
    groups = []
    for group in answer.files:
        for hooks in (False, True):
            links = [link for link in group.links if (link.how == "hook") == hooks]
            rows = [CallRow(row_text(answer.direction, link) + recursive_mark(link, trail), link, trail)
                    for link in links]
            if rows:
                groups.append(FileRows(f"{group.path} · {len(rows)}", rows, HOOKS if hooks else section_of(group.path)))
    order = [CODE, HOOKS, TESTS, DOCS]
    return sorted(groups, key=lambda g: order.index(g.section))


def callers(links: list[GraphLink]) -> list[GraphLink]:
    """The uses in code, one per definition using them (its first line, `lines` all of them)."""
    merged: dict[tuple[str, str], GraphLink] = {}
    for link in links:
        if link.how == "text":
            continue
        key = (link.path, link.qualified_name)
        first = merged.get(key, link)
        merged[key] = replace(first, lines=first.lines + (link.line,))
    return list(merged.values())


def call_text(direction: str, link: GraphLink, trail: tuple[tuple[str, str], ...]) -> str:
    """A deeper row: "SearchEngine.score · notes/search.py:47, 48" (who uses it, where) or
    "function tokenize_query · notes/search.py:16" (what it uses, where it is)."""
    if direction == USES:
        text = f"{link.kind} {link.qualified_name} · {link.path}:{link.line}"
    else:
        lines = ", ".join(map(str, link.lines[:5])) + ("…" if len(link.lines) > 5 else "")
        text = f"{link.qualified_name or '(file)'} · {link.path}:{lines or link.line}"
    return text + recursive_mark(link, trail)


def recursive_mark(link: GraphLink, trail: tuple[tuple[str, str], ...]) -> str:
    return RECURSIVE if link.qualified_name and (link.path, link.qualified_name) in trail else ""


def row_text(direction: str, link: GraphLink) -> str:
    if direction == USES:
        lines = ", ".join(map(str, link.lines[:5])) + ("…" if len(link.lines) > 5 else "")
        return f"{link.line:>5}  {link.kind} {link.qualified_name} · used on line {lines}"
    how = "mentioned" if link.how == "text" else link.how  # in a comment, docstring or string
    return f"{link.line:>5}  {how} in {link.qualified_name or '(file)'}"


def link_item(workspace: str, link: GraphLink, language: str) -> ResultChunk:
    """The code pane's item for a row: its file around its line, the line marked."""
    hit = GotoHit(link.path, link.line, link.line, link.name, link.qualified_name, link.kind, language, 1.0,
                  link.qualified_name)
    return code_item(workspace, hit)
