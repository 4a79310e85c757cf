"""Go to symbol, go to file: an editor's fuzzy finder over the catalogue's names and paths.

A question matches a name when its characters appear in it in order (case-insensitive): `fixman` and
`fm` both match FixtureManager. rapidfuzz's bit-parallel LCS finds every such name at once (a name
matches when its longest common subsequence with the question is the whole question); the best few
hundred are then aligned here, like fzf: a matched character counts more at a word start, a camel hump
or right after the previous one, gaps cost, an exact name and a prefix come first, shorter names and
paths before longer ones. Before all of them come the definitions the name names by the rule a question and
references read it by (services/retrieval/definitions.py: `nodes.Node` is `Node` in nodes.py). A question with a
dot (`Class.method`) matches qualified names; a path
question matches file paths, its file name counting most, and `latex.py:120` asks for line 120.
Space-separated terms (`fill_fixtures conftest`) match where every term does: a file's path; a
definition's name (one term at least) or its path.

The names of one catalogue version are read once (no chunk text) and kept until the next write, so a
keystroke costs a match, not a read.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

import numpy as np

from services.core.errors import QueryError
from services.core.models import GotoAnswer, GotoHit
from services.retrieval.definitions import named, parts_of, whole

SHORTLIST = 200  # names aligned in full per question; the rest are ordered by cheap signals first
MAX_QUERY = 200
MAX_LIMIT = 500
MATCH, BOUNDARY, CAMEL, CONSECUTIVE, FIRST = 16, 10, 9, 6, 2  # fzf's scheme: points per matched character
GAP_START, GAP_EXTENSION = 3, 1
EXACT, PREFIX, FILE_NAME = 1000, 150, 60
SEPARATORS = frozenset("_-./\\: $#")
KIND_ORDER = {"class": 0, "interface": 0, "protocol": 0, "struct": 0, "enum": 0, "function": 1, "method": 2}
LINE_SUFFIX = re.compile(r"^(?P<name>.*?)(?::(?P<line>\d+)(?::\d+)?|#L(?P<anchor>\d+))$")


def parse_target(text: str) -> tuple[str, int | None]:
    """`latex.py:120` -> ("latex.py", 120); `latex.py:120:5` and `latex.py#L120` too; else (text, None)."""
    found = LINE_SUFFIX.match(text.strip())
    if not found or not found["name"]:
        return text.strip(), None
    return found["name"], int(found["line"] or found["anchor"])


def bonuses(label: str) -> list[int]:
    """Per character: how much more a match there counts (a word start, a camel hump, after a digit)."""
    out = []
    previous = ""
    for char in label:
        if not previous or previous in SEPARATORS:
            out.append(BOUNDARY)
        elif (previous.islower() and char.isupper()) or (previous.isdigit() != char.isdigit()):
            out.append(CAMEL)
        else:
            out.append(0)
        previous = char
    return out


def align(query: str, label: str, start: int = 0) -> tuple[int, tuple[int, ...]] | None:
    """The best placement of `query`'s characters in `label` (from `start`), in order: (score, positions),
    or None when they are not all there. Only positions holding a query character are visited."""
    lower, wanted = label.lower(), query.lower()
    bonus = bonuses(label)
    # per query character: {position: (score, previous position)}
    previous: dict[int, tuple[int, int]] = {}
    rows = []
    for i, char in enumerate(wanted):
        row = {}
        first_allowed = start if i == 0 else min(previous) + 1
        at = lower.find(char, first_allowed)
        while at != -1:
            points = MATCH + bonus[at] * (FIRST if i == 0 else 1) + (2 if query[i] == label[at] else 0)
            if i == 0:
                row[at] = (points - min(at - start, 10), -1)  # a later first match costs a little
            else:
                best = None
                for before, (score, _) in previous.items():
                    if before >= at:
                        continue
                    gap = at - before - 1
                    # a run keeps the bonus of the word start it began at
                    step = CONSECUTIVE + max(bonus[at], bonus[before] // 2) if gap == 0 else \
                        -(GAP_START + GAP_EXTENSION * (gap - 1))
                    if best is None or score + step > best[0]:
                        best = (score + step, before)
                if best is not None:
                    row[at] = (best[0] + points, best[1])
            at = lower.find(char, at + 1)
        if not row:
            return None
        rows.append(row)
        previous = row
    end = max(previous, key=lambda position: previous[position][0])
    score, positions = previous[end][0], [end]
    for row in reversed(rows[1:]):
        end = row[end][1]
        positions.append(end)
    return score, tuple(reversed(positions))


WORDS = re.compile(r"[A-Z]+[a-z]*|[a-z]+|\d+")  # FixtureManager -> Fixture, Manager; get2Things -> get, 2, Things


def initials(label: str) -> str:
    """The first character of each word and camel hump, lower-case: FixtureManager -> "fm"."""
    return "".join(word[0] for word in WORDS.findall(label)).lower()


class Names:
    """Labels ready to be matched: their lower-case forms and initials, for rapidfuzz."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels
        self.lower = [label.lower() for label in labels]
        self.lengths = np.array([len(label) for label in labels], dtype=np.int32)
        self._initials: list[str] | None = None

    @property
    def initials(self) -> list[str]:
        """Each label's initials, worked out when a short question first needs them (once per label text)."""
        if self._initials is None:
            known: dict[str, str] = {}
            self._initials = [known.get(label) or known.setdefault(label, initials(label)) for label in self.labels]
        return self._initials

    def matching(self, query: str) -> np.ndarray:
        """Indexes of the labels holding every character of `query` in order (rapidfuzz, in C)."""
        if not self.labels:
            return np.zeros(0, dtype=np.int64)
        from rapidfuzz import process  # here, not at the top: a cold `query` imports this module (15 ms)
        from rapidfuzz.distance import LCSseq

        common = process.cdist([query], self.lower, scorer=LCSseq.similarity, dtype=np.int32)[0]
        return np.flatnonzero(common == len(query))

    def shortlist(self, query: str, found: np.ndarray, keep: int = SHORTLIST) -> np.ndarray:
        """The `keep` most promising of `found`: exact, prefix, initials, substring, then the shortest."""
        if len(found) <= keep:
            return found
        lower, heads = self.lower, self.initials
        cheap = np.array([(4 if lower[i] == query else 0) + (2 if lower[i].startswith(query) else 0)
                          + (2 if heads[i].startswith(query) else 0) + (1 if query in lower[i] else 0)
                          for i in found.tolist()], dtype=np.int64) * 10_000 - self.lengths[found]
        return found[np.argpartition(-cheap, keep)[:keep]]

    def closest(self, query: str, limit: int = 3) -> list[str]:
        """Labels spelled nearly like `query` (a typo), best first, for the empty answer's message."""
        from rapidfuzz import fuzz, process

        found = process.extract(query, self.lower, scorer=fuzz.ratio, limit=limit * 4, score_cutoff=75)
        return list(dict.fromkeys(self.labels[i] for _, _, i in found))[:limit]


@dataclass(frozen=True)
class Definition:
    path: str
    language: str
    start_line: int
    end_line: int
    symbol: str
    qualified_name: str
    kind: str


def definitions(rows) -> list[Definition]:
    """Catalogue rows as definitions, each whole (definitions.whole)."""
    return [Definition(g[0].path, g[0].language, g[0].start_line, max(d.end_line for d in g), g[0].symbol,
                       g[0].qualified_name, g[0].kind) for g in whole(Definition(*row) for row in rows)]


class SymbolFinder:
    def __init__(self, rows) -> None:
        self.items = definitions(rows)
        self.names = Names([d.symbol for d in self.items])
        self.qualified = Names([d.qualified_name for d in self.items])
        self._paths: Names | None = None
        self._by_symbol: dict[str, list[int]] | None = None  # lower-case symbol -> its definitions, for `exact`

    @property
    def paths(self) -> Names:
        """Each definition's path, for questions of several terms (read once, when one first comes)."""
        if self._paths is None:
            self._paths = Names([d.path for d in self.items])
        return self._paths

    def find(self, query: str, limit: int) -> tuple[list[GotoHit], int, list[str]]:
        """(hits, how many matched, close spellings when none did)."""
        if len(query.split()) > 1:
            return self.find_terms(query.split(), limit)
        dotted = normalise_dots(query)
        names = self.qualified if "." in dotted else self.names
        wanted = dotted.lower()
        found = names.matching(wanted)
        exact = self.exact(dotted)
        tier = set(exact)
        first: list[tuple[tuple, GotoHit]] = []
        scored: list[tuple[tuple, GotoHit]] = []
        for i in exact + [i for i in names.shortlist(wanted, found).tolist() if i not in tier]:
            label = names.labels[i]
            aligned = align(dotted, label)
            if aligned is None and i not in tier:
                continue
            score = aligned[0] + exactness(wanted, names.lower[i]) - len(label) if aligned else float(EXACT)
            item = self.items[i]
            (first if i in tier else scored).append((
                (-score, KIND_ORDER.get(item.kind, 3), len(item.path), item.path, item.start_line),
                GotoHit(item.path, item.start_line, item.end_line, item.symbol, item.qualified_name, item.kind,
                        item.language, float(score), label, aligned[1] if aligned else ())))
        ranked = sorted(first, key=lambda pair: pair[0]) + sorted(scored, key=lambda pair: pair[0])
        matched = len(set(found.tolist()) | tier)
        closest = names.closest(wanted) if not matched else []
        return [hit for _, hit in ranked[:limit]], matched, closest

    def exact(self, dotted: str) -> list[int]:
        """The definitions the name names, by the rule questions and references read it by (definitions.named):
        go to symbol's first tier, before its fuzzy matches (`nodes.Node` finds `Node` in nodes.py)."""
        parts = parts_of(dotted)
        if not parts:
            return []
        if self._by_symbol is None:
            self._by_symbol = {}
            for i, item in enumerate(self.items):
                self._by_symbol.setdefault(item.symbol.lower(), []).append(i)
        candidates = self._by_symbol.get(parts[-1].lower(), [])
        chosen = {id(item) for item in named([self.items[i] for i in candidates], parts)}
        return [i for i in candidates if id(self.items[i]) in chosen]


    def find_terms(self, terms: list[str], limit: int) -> tuple[list[GotoHit], int, list[str]]:
        """Definitions every term matches, in their name (one term at least) or their path; the name's terms
        score in full, the path's at half."""
        terms = [normalise_dots(t) for t in terms]
        names = [self.qualified if "." in t else self.names for t in terms]
        in_name = [set(n.matching(t.lower()).tolist()) for n, t in zip(names, terms)]
        in_path = [set(self.paths.matching(t.lower().replace("\\", "/")).tolist()) for t in terms]
        found = set.union(*in_name).intersection(*(a | b for a, b in zip(in_name, in_path)))
        scored = []
        for i in sorted(found, key=lambda i: len(self.items[i].qualified_name))[:SHORTLIST]:
            item, score, positions = self.items[i], 0, set[int]()
            label = item.qualified_name if any("." in t for t in terms) else item.symbol
            for term, matched in zip(terms, in_name):
                aligned = align(term, label) if i in matched else None
                if aligned is not None:
                    score += aligned[0] + exactness(term.lower(), label.lower())
                    positions.update(aligned[1])
                else:
                    score += (FileFinder.align(term, item.path) or (0, ()))[0] // 2
            score -= len(label)
            scored.append(((-score, KIND_ORDER.get(item.kind, 3), len(item.path), item.path, item.start_line),
                           GotoHit(item.path, item.start_line, item.end_line, item.symbol, item.qualified_name,
                                   item.kind, item.language, float(score), label, tuple(sorted(positions)))))
        scored.sort(key=lambda pair: pair[0])
        return [hit for _, hit in scored[:limit]], len(found), []


class FileFinder:
    def __init__(self, rows) -> None:
        self.files = list(rows)  # (path, language, last line)
        self.paths = Names([path for path, _, _ in self.files])

    def find(self, query: str, limit: int, line: int | None) -> tuple[list[GotoHit], int, list[str]]:
        if len(query.split()) > 1:
            return self.find_terms(query.split(), limit, line)
        wanted = query.replace("\\", "/").lower()
        found = self.paths.matching(wanted)
        scored = []
        for i in self.shortlist(wanted, found).tolist():
            path, language, last = self.files[i]
            aligned = self.align(query.replace("\\", "/"), path)
            if aligned is None:
                continue
            score = aligned[0] + exactness(wanted, self.paths.lower[i]) - len(path)
            scored.append(((-score, len(path), path),
                           GotoHit(path, line or 1, line or last, "", "", "file", language, float(score), path,
                                   aligned[1])))
        scored.sort(key=lambda pair: pair[0])
        closest = self.paths.closest(wanted) if not len(found) else []
        return [hit for _, hit in scored[:limit]], len(found), closest

    def find_terms(self, terms: list[str], limit: int, line: int | None) -> tuple[list[GotoHit], int, list[str]]:
        """Files whose path every term matches (`testing conftest`), each term scored as a whole question."""
        terms = [t.replace("\\", "/") for t in terms]
        found = set.intersection(*(set(self.paths.matching(t.lower()).tolist()) for t in terms))
        scored = []
        for i in sorted(found, key=lambda i: len(self.files[i][0]))[:SHORTLIST]:
            path, language, last = self.files[i]
            score, positions = -len(path), set[int]()
            for term in terms:
                aligned = self.align(term, path) or (0, ())
                score += aligned[0]
                positions.update(aligned[1])
            scored.append(((-score, len(path), path), GotoHit(path, line or 1, line or last, "", "", "file", language,
                                                              float(score), path, tuple(sorted(positions)))))
        scored.sort(key=lambda pair: pair[0])
        return [hit for _, hit in scored[:limit]], len(found), []

    def shortlist(self, query: str, found: np.ndarray) -> np.ndarray:
        """As Names.shortlist, judged on the file name (the part after the last /)."""
        if len(found) <= SHORTLIST:
            return found
        lower = self.paths.lower
        cheap = np.array([file_name_signal(query, lower[i]) for i in found.tolist()], dtype=np.int64) * 10_000 \
            - self.paths.lengths[found]
        return found[np.argpartition(-cheap, SHORTLIST)[:SHORTLIST]]

    @staticmethod
    def align(query: str, path: str) -> tuple[int, tuple[int, ...]] | None:
        """The better of matching the whole path and matching its file name alone (which counts more)."""
        whole = align(query, path)
        name_at = path.rfind("/") + 1
        if "/" in query or whole is None:
            return whole
        in_name = align(query, path, name_at)
        if in_name is None:
            return whole
        name_score = in_name[0] + FILE_NAME + exactness(query.lower(), path[name_at:].lower())
        return max(whole, (name_score, in_name[1]))


def file_name_signal(query: str, path: str) -> int:
    name = path[path.rfind("/") + 1:]
    return (4 if name == query or path == query else 0) + (2 if name.startswith(query) else 0) + \
        (1 if query in name else 0) + (1 if query in path else 0)


def exactness(query: str, label: str) -> int:
    """The bonus of an exact name (or file name) and of a prefix."""
    if label == query:
        return EXACT
    return PREFIX if label.startswith(query) else 0


def normalise_dots(query: str) -> str:
    """`Class::method`, `Class#method`, `Class->method` are `Class.method`."""
    return re.sub(r"::|#|->", ".", query.strip())


class Finders:
    """The finders of each catalogue, kept for its current generation (rebuilt after any write)."""

    def __init__(self) -> None:
        self._kept: dict[tuple, tuple] = {}  # id(catalog) -> (catalog, generation, kind, finder)
        self._lock = threading.Lock()

    def get(self, catalog, kind: str):
        key = (id(catalog), kind)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept[0] is catalog and kept[1] == catalog.generation:
                return kept[2]
        generation = catalog.generation
        finder = (SymbolFinder(catalog.graph.definition_rows()) if kind == "symbols"
                  else FileFinder(catalog.graph.file_spans()))
        with self._lock:
            self._kept[key] = (catalog, generation, finder)
        return finder


def check_query(query: str, limit: int) -> str:
    if not isinstance(query, str) or not query.strip():
        raise QueryError("Type a name to go to: the name is empty.")
    if len(query) > MAX_QUERY:
        raise QueryError(f"The name is too long ({len(query)} characters; at most {MAX_QUERY}).")
    if not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"The result count must be 1 to {MAX_LIMIT} (got {limit}).")
    return query.strip()


def goto_symbols(finders: Finders, catalog, query: str, limit: int = 20) -> GotoAnswer:
    """The definitions whose names match `query`, best first (see the module's docstring)."""
    started = time.perf_counter()
    text, _line = parse_target(check_query(query, limit))
    hits, matched, closest = finders.get(catalog, "symbols").find(text, limit)
    message = "" if hits else f"No symbol named {text!r}." + did_you_mean(closest)
    return GotoAnswer(query.strip(), "symbols", hits, matched, None, message,
                      {"total": round((time.perf_counter() - started) * 1000, 2)})


def goto_files(finders: Finders, catalog, query: str, limit: int = 20) -> GotoAnswer:
    """The indexed files whose paths match `query`, best first; `path:120` opens them at line 120."""
    started = time.perf_counter()
    text, line = parse_target(check_query(query, limit))
    hits, matched, closest = finders.get(catalog, "files").find(text, limit, line)
    message = "" if hits else f"No file matching {text!r}." + did_you_mean(closest)
    return GotoAnswer(query.strip(), "files", hits, matched, line, message,
                      {"total": round((time.perf_counter() - started) * 1000, 2)})


def did_you_mean(names: list[str]) -> str:
    return f" Did you mean {', '.join(names)}?" if names else ""
