"""What a long question (a bug report, a traceback, a feature request) names explicitly.

`extract(question)` finds the code the question points at: file paths (also inside URLs and
traceback frames), traceback frames (`File "…/main.py", line 12, in parse`), dotted names
(`caplog.get_records`), identifiers that look like code (snake_case, CamelCase, `backticked`),
and splits the text into parts (title, prose paragraphs, code blocks) that can be embedded
one by one. `is_long(question)` tells a report from a short search-box question.

Pure text processing: matching these against an index lives in services/retrieval/strategies/bugreport.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from services.core.text import STOP_WORDS, split_identifier

LONG_WORDS = 25  # more words than this, or a line break / code block, makes a question "long"

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([A-Za-z_<>][\w<>]*))?')
# pytest's frames: `src/x.py:12: in parse`, and the failing line `src/x.py:12: AssertionError` (no function)
_PYTEST_FRAME = re.compile(r"^\s*([\w./\\-]+\.py):(\d+): (?:in ([A-Za-z_<>][\w<>]*)|[A-Z]\w*\b)", re.MULTILINE)
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|js|jsx|ts|tsx|java|go|rs|rb|php|"
                   r"c|h|cc|cpp|hpp|cs|kt|swift|md|rst|txt|cfg|toml|ini|json|ya?ml|html|css))(?![\w])")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?=\(|\b)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL = re.compile(r"https?://\S+")
_FILE_SUFFIXES = frozenset("""py pyi js jsx ts tsx java go rs rb php c h cc cpp hpp cs kt swift md rst txt cfg
toml ini json yaml yml html css""".split())


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class QuerySignals:
    title: str
    paragraphs: tuple[str, ...] = ()  # prose, without code blocks
    code_blocks: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # as written, e.g. "src/_pytest/logging.py", "latex.py"
    frames: tuple[Frame, ...] = ()
    dotted: tuple[str, ...] = ()  # "caplog.get_records", "sphinx.ext.autodoc"
    identifiers: tuple[str, ...] = ()  # names that look like code: get_records, LogCaptureFixture
    words: tuple[str, ...] = field(default=())  # other content words of the prose (lower case)

    def names(self) -> list[str]:
        """Every name a symbol could be called: identifiers, dotted parts, frame functions."""
        out = list(self.identifiers)
        for dotted in self.dotted:
            out.extend(dotted.split("."))
        out.extend(f.function for f in self.frames if f.function and not f.function.startswith("<"))
        return list(dict.fromkeys(n for n in out if len(n) > 2 and n.lower() not in STOP_WORDS))


def is_long(question: str) -> bool:
    """A report rather than a search-box question: many words, several lines or a code block."""
    text = question.strip()
    return "\n" in text or "```" in text or len(text.split()) > LONG_WORDS


def looks_like_code(word: str) -> bool:
    """snake_case, CamelCase / camelCase, or a dunder: a word a programmer would not write in prose."""
    core = word.strip("_")
    if not core:
        return False
    if "_" in core or word.startswith("__"):
        return True
    return len(split_identifier(core)) > 1 and not core.isupper() and not core[1:].islower()


def split_parts(question: str) -> tuple[str, list[str], list[str]]:
    """(title, prose paragraphs, code blocks). The title is the first non-empty line."""
    text = question.replace("\r\n", "\n").replace("\r", "\n")
    code_blocks = [m.group(1).strip() for m in _FENCE.finditer(text) if m.group(1).strip()]
    prose = _FENCE.sub("\n\n", text)
    lines = [line for line in prose.split("\n")]
    title = next((line.strip() for line in lines if line.strip()), "")
    rest = prose.split(title, 1)[1] if title else prose
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", rest)]
    return title, [p for p in paragraphs if len(p.split()) >= 3], code_blocks


def _paths(text: str) -> list[str]:
    found = []
    for url in _URL.findall(text):  # github.com/o/r/blob/<sha>/src/x.py#L10 -> src/x.py
        match = re.search(r"/(?:blob|tree|raw)/[^/]+/([^#?\s)]+)", url)
        if match:
            found.append(match.group(1))
    found.extend(m.group(1) for m in _PATH.finditer(_URL.sub(" ", text)))
    return [p.lstrip("./") for p in dict.fromkeys(found) if not re.fullmatch(r"[\d.]+", p)]


def _is_path_like(dotted: str) -> bool:
    return dotted.rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES


def _frames(question: str) -> tuple[Frame, ...]:
    """Every traceback frame, in the order written (a traceback lists its innermost frame last)."""
    found = [m for pattern in (_FRAME, _PYTEST_FRAME) for m in pattern.finditer(question)]
    return tuple(Frame(m.group(1).replace("\\", "/"), int(m.group(2)), m.group(3) or "")
                 for m in sorted(found, key=lambda m: m.start()))


def extract(question: str) -> QuerySignals:
    title, paragraphs, code_blocks = split_parts(question)
    frames = _frames(question)
    paths = list(dict.fromkeys([*_paths(question), *(f.path for f in frames)]))
    no_urls = _URL.sub(" ", question)
    dotted = [d for d in dict.fromkeys(m.group(1) for m in _DOTTED.finditer(no_urls))
              if not _is_path_like(d) and not re.fullmatch(r"[\d.]+", d)]
    inline = [m.group(1) for m in _INLINE_CODE.finditer(no_urls)]
    candidates = _WORD.findall(no_urls)
    identifiers = [w for w in candidates if looks_like_code(w)]
    for snippet in inline:  # a single word in backticks is code even when it reads as prose
        identifiers.extend(w for w in _WORD.findall(snippet) if len(w) > 2 and w.lower() not in STOP_WORDS)
    identifiers = list(dict.fromkeys(identifiers))
    code_names = {w.lower() for w in identifiers}
    words = [w.lower() for w in _WORD.findall(" ".join([title, *paragraphs]))
             if len(w) > 2 and w.lower() not in STOP_WORDS and w.lower() not in code_names]
    return QuerySignals(title, tuple(paragraphs), tuple(code_blocks), tuple(paths), frames,
                        tuple(dotted), tuple(identifiers), tuple(dict.fromkeys(words)))


# --------------------------------------------------------------------------- matching against an index

def _components(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p and p != "."]


def _module_path(dotted: str) -> str:
    """`sphinx.ext.autodoc` -> `sphinx/ext/autodoc` (a module written as a dotted name)."""
    return dotted.replace(".", "/")


class NameTable:
    """The symbols and file paths of one index, to match a question's names against, with rarity (IDF).

    Built from the catalogue's chunks (path, symbol, qualified name); no chunk text is kept.
    """

    def __init__(self, chunks) -> None:
        self.by_name: dict[str, list[str]] = {}  # lower-case symbol or qualified name -> chunk ids
        self.by_path: dict[str, list[str]] = {}  # path -> chunk ids
        for chunk in chunks:
            self.by_path.setdefault(chunk.path, []).append(chunk.id)
            for name in {chunk.symbol.lower(), chunk.qualified_name.lower()} - {""}:
                self.by_name.setdefault(name, []).append(chunk.id)
        self.chunk_count = max(1, sum(len(ids) for ids in self.by_path.values()))
        self.by_basename: dict[str, list[str]] = {}
        self.by_stem: dict[str, list[str]] = {}
        for path in self.by_path:
            parts = _components(path)
            self.by_basename.setdefault(parts[-1].lower(), []).append(path)
            stem = parts[-1].rsplit(".", 1)[0].lower()
            self.by_stem.setdefault(stem if stem != "__init__" else (parts[-2].lower() if len(parts) > 1 else stem),
                                    []).append(path)

    def name_idf(self, df: int) -> float:
        return math.log(1 + self.chunk_count / max(df, 1))

    def file_idf(self, df: int) -> float:
        return math.log(1 + len(self.by_path) / max(df, 1))

    def symbol_matches(self, signals: QuerySignals) -> dict[str, tuple[float, str]]:
        """chunk id -> (score, what matched): the sum of the IDF of the question's names it defines."""
        out: dict[str, tuple[float, str]] = {}
        names = signals.names() + [d for d in signals.dotted if d.lower() in self.by_name]
        for name in dict.fromkeys(names):
            ids = self.by_name.get(name.lower(), [])
            if not ids or len(ids) > 50:  # a name defined everywhere (e.g. `run`) says little
                continue
            idf = self.name_idf(len(ids))
            for chunk_id in ids:
                score, why = out.get(chunk_id, (0.0, ""))
                out[chunk_id] = (score + idf, f"{why}, {name}" if why else name)
        return out

    def path_matches(self, signals: QuerySignals) -> dict[str, tuple[float, str]]:
        """path -> (score, mention): files the question names by path, module or file stem."""
        out: dict[str, tuple[float, str]] = {}

        def add(path: str, score: float, mention: str) -> None:
            if score > out.get(path, (0.0, ""))[0]:
                out[path] = (score, mention)

        for mention in signals.paths:
            parts = [p.lower() for p in _components(mention)]
            if not parts:
                continue
            for path in self.by_basename.get(parts[-1], []):
                shared = shared_suffix(parts, [p.lower() for p in _components(path)])
                add(path, shared * self.file_idf(len(self.by_basename[parts[-1]])), mention)
        for dotted in signals.dotted:
            for depth in range(len(dotted.split(".")), 1, -1):  # a.b.c, then a.b
                prefix = _module_path(".".join(dotted.split(".")[:depth])).lower()
                stem = prefix.rsplit("/", 1)[-1]
                hits = [p for p in self.by_stem.get(stem, []) if _module_of(p).endswith(prefix)]
                for path in hits:
                    add(path, depth * self.file_idf(len(hits)), dotted)
                if hits:
                    break
        for name in signals.names():  # `logging` -> src/_pytest/logging.py: weak, one component
            hits = self.by_stem.get(name.lower(), [])
            if 0 < len(hits) <= 3:
                for path in hits:
                    add(path, 0.5 * self.file_idf(len(hits)), name)
        return out


def shared_suffix(a: list[str], b: list[str]) -> int:
    """How many trailing path components `a` and `b` share."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _module_of(path: str) -> str:
    """`src/_pytest/logging.py` -> `src/_pytest/logging`; `pkg/__init__.py` -> `pkg`."""
    stem = path.lower().rsplit(".", 1)[0]
    return stem[: -len("/__init__")] if stem.endswith("/__init__") else stem
