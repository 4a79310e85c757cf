"""Go to file (Ctrl+P) and go to symbol (Ctrl+T), Qt-free: what the finder asks the engine, the rows it
shows (matched characters marked) and the code it previews and opens (a ResultChunk for the code pane)."""

from __future__ import annotations

import asyncio
import html
import textwrap
from pathlib import Path

from services.core import files
from services.core.models import Chunk, GotoAnswer, GotoHit, ResultChunk

SYMBOLS, FILES = "symbols", "files"
LIMIT = 50
CONTEXT_LINES = 300  # shown around a definition in the code pane (a whole file up to about this size)
PLACEHOLDERS = {SYMBOLS: "Go to symbol: a name, camel humps (fm: FixtureManager) or Class.method",
                FILES: "Go to file: a file name or path, latex.py:120 for a line"}


class GotoViewModel:
    """One finder: asks the engine as the user types; only the newest question's answer counts."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.target = SYMBOLS
        self.workspace = ""
        self.answer: GotoAnswer | None = None
        self._asked = 0  # numbers the questions: an older answer arriving late is dropped

    def start(self, target: str, workspace: str) -> None:
        self.target, self.workspace, self.answer = target, workspace, None

    async def search(self, text: str) -> GotoAnswer | None:
        """The engine's answer for `text`, or None when a newer question was asked meanwhile (or none)."""
        self._asked += 1
        asked = self._asked
        if not text.strip():
            self.answer = None
            return None
        find = self.engine.goto_files if self.target == FILES else self.engine.goto_symbols
        answer = await find(text, self.workspace, LIMIT)
        if asked != self._asked:
            return None
        self.answer = answer
        return answer

    async def definition(self, name: str, workspace: str) -> ResultChunk | None:
        """Go to definition: `name`'s definition (`Class.method`, or a bare name) among go to symbol's
        matches, as the code pane shows it; None when no match has that very name (a fuzzy match would be
        another definition)."""
        answer = await self.engine.goto_symbols(name, workspace, LIMIT)
        hit = definition_of(name, answer.hits)
        return None if hit is None else await asyncio.to_thread(code_item, workspace, hit)

    async def preview(self, hit: GotoHit) -> ResultChunk:
        """The hit as the code pane shows a result: its lines marked, with the lines around them."""
        return await asyncio.to_thread(code_item, self.workspace, hit)


def definition_of(name: str, hits: list[GotoHit]) -> GotoHit | None:
    """The first hit (the finder's best first) defining `name` itself: the same qualified name, else a
    member or function of that name (`getini` finds `Config.getini`)."""
    last = name.rsplit(".", 1)[-1]
    for matches in (lambda h: h.qualified_name == name,
                    lambda h: "." in name and h.qualified_name.endswith("." + name),
                    lambda h: "." not in name and h.symbol == last):
        hit = next((h for h in hits if h.kind != "file" and matches(h)), None)
        if hit is not None:
            return hit
    return None


def hover_text(item: ResultChunk) -> str:
    """What a name is, as an editor's hover says it: its definition's first line(s) up to the body (the
    decorators left out) and the first lines of its docstring, with where it is."""
    lines = item.chunk.content.split("\n")
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    signature: list[str] = []
    for line in lines[:12]:
        signature.append(line.rstrip())
        if line.rstrip().endswith((":", "{", ";")) or line.strip().startswith(("class ", "def ")) and "(" not in line:
            break
    rest = [line.strip() for line in lines[len(signature):]]
    doc: list[str] = []
    if rest and rest[0][:3] in ('"""', "'''"):
        quote, first = rest[0][:3], rest[0][3:]
        for line in [first, *rest[1:8]]:
            end = line.find(quote)
            doc.append(line[:end] if end >= 0 else line)
            if end >= 0:
                break
    text = textwrap.dedent("\n".join(signature)).strip()
    docstring = "\n".join(line for line in doc if line).strip()
    return f"{text}\n\n{docstring}\n\n{item.chunk.path}:{item.chunk.start_line}" if docstring \
        else f"{text}\n\n{item.chunk.path}:{item.chunk.start_line}"


def count_text(matched: int, shown: int) -> str:
    """"8 matches", "1 match", "1,204 matches, best 50 shown"."""
    text = f"{matched:,} match{'' if matched == 1 else 'es'}"
    return text + (f", best {shown} shown" if matched > shown else "")


BUILDING = ("The index is still being built: names and files appear as their files are indexed; try again when "
            "it is done.")


def empty_text(target: str, workspace: str, answer: GotoAnswer | None, text: str, building: bool = False) -> str:
    """What the list says when it has no rows: the engine's answer's message, else `building` (a first index run is
    under way, before the engine could answer)."""
    if not workspace:
        return "Open a workspace first."
    if answer is not None and answer.message:  # while step 1 commits, it says how many files it does not see yet
        return answer.message
    if building and text.strip():
        return BUILDING
    return "Type a name to find its definition." if target == SYMBOLS else "Type a file name or a path."


def row_html(hit: GotoHit, selected: bool = False, fits=lambda _text: True, keep: int = 0) -> str:
    """One row: the matched characters in bold, then its kind, path:line and language (a file: its language),
    quieter; white on the selection's colour when `selected`. A label or path too long for `fits` (a width
    test of the row's plain text) is cut in the middle, its file name and last `keep` folders (at least
    one) kept: what tells it from the other rows (`distinct_tails`)."""
    path = f"{hit.path}:{hit.start_line}"
    details = lambda shown: hit.language if hit.kind == "file" else f"{hit.kind} · {shown} · {hit.language}"  # noqa: E731
    label_text = hit.label
    if hit.kind == "file":  # the label is the path
        label_text = cut_path(hit.label, lambda shown: fits(f"{shown}  {details(path)}"), keep)
    else:
        path = cut_path(path, lambda shown: fits(f"{hit.label}  {details(shown)}"), keep)
    label = marked(hit.label, hit.positions) if label_text == hit.label else html.escape(label_text)
    color, quiet = ("white", "#e8eefc") if selected else ("", "gray")
    text = f"{label}&nbsp;&nbsp;<span style='color:{quiet}'>{html.escape(details(path))}</span>"
    return f"<span style='color:{color}'>{text}</span>" if color else text


def cut_path(path: str, fits, keep: int = 0) -> str:
    """`path` whole if it `fits`, else cut in the middle, its file name and its last `keep` folders (at least
    one) always kept: `src/…/_io/saferepr.py:12` keeps the first folder and as many of the last ones as fit,
    then `…/_io/saferepr.py:12` drops the first; when none of these fits, the shortest of them."""
    if fits(path):
        return path
    folders, name = path.split("/")[:-1], path.rsplit("/", 1)[-1]
    if not folders:
        return name
    least = min(max(keep, 1), len(folders))
    tails = [folders[len(folders) - kept:] for kept in range(len(folders) - 1, least - 1, -1)]
    shapes = [[folders[0], "…", *tail] for tail in tails if len(tail) < len(folders) - 1]
    shapes += [["…", *tail] for tail in tails]
    for shape in shapes:
        if fits("/".join([*shape, name])):
            return "/".join([*shape, name])
    return "/".join(["…", *folders[len(folders) - least:], name])


def distinct_tails(paths: list[str]) -> dict[str, int]:
    """Per path, how many of its last folders tell it from the other paths with the same file name, as
    VS Code labels two `conftest.py` (`testing/python/conftest.py`, `testing/io/conftest.py`: 1 each)."""
    split = {path: path.split("/") for path in set(paths)}
    tails = {}
    for path, parts in split.items():
        others = [o for p, o in split.items() if p != path and o[-1] == parts[-1]]
        kept = 0
        while kept < len(parts) - 1 and any(o[-kept - 1:] == parts[-kept - 1:] for o in others):
            kept += 1
        tails[path] = kept
    return tails


def marked(label: str, positions: tuple[int, ...]) -> str:
    """`label` as HTML with the characters at `positions` in bold."""
    wanted = set(positions)
    out = []
    for i, char in enumerate(label):
        escaped = html.escape(char)
        out.append(f"<b><u>{escaped}</u></b>" if i in wanted else escaped)
    return "".join(out)


def code_item(workspace: str, hit: GotoHit) -> ResultChunk:
    """A ResultChunk for the code pane: the definition's lines marked (a file: the line asked for, or its
    start) with up to CONTEXT_LINES around them; an unreadable file shows a line saying why."""
    path = Path(workspace) / hit.path
    try:
        lines = files.read_text(path).split("\n")
    except (OSError, UnicodeDecodeError) as error:
        lines = [f"(cannot read {hit.path}: {getattr(error, 'strerror', None) or error})"]
    start = min(max(hit.start_line, 1), len(lines))
    end = start if hit.kind == "file" else min(max(hit.end_line, start), len(lines))  # a file: its line alone
    first = max(1, start - CONTEXT_LINES // 2)
    last = min(len(lines), max(end, start + CONTEXT_LINES // 2))
    context = "\n".join(lines[first - 1:last])
    chunk = Chunk(path=hit.path, language=hit.language, start_line=start, end_line=end,
                  content="\n".join(lines[start - 1:end]), symbol=hit.symbol, qualified_name=hit.qualified_name,
                  kind=hit.kind)
    return ResultChunk(chunk, 1, hit.score, None, None, context, first)
