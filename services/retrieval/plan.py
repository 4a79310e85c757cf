"""One reading of a question (issue 53), made once per question and handed to the stages that need it, as zoekt
parses its query once: how it reads (a name, a dotted name, a path or a question: names.read) and the strategy
`auto` answers it with, and why (`choose`: the kind of question decides, measured in benchmarks/README.md,
"The right answer by default")."""

from __future__ import annotations

from dataclasses import dataclass

from services.retrieval import names
from services.retrieval.query_signals import extract, is_long

FOR_NAMES = "metadata"  # a name, a dotted name or a path the index does not answer by name alone
FOR_REPORTS = "bug-report"  # a traceback or a pasted bug report
FOR_WORDS = "metadata"  # a question in words


@dataclass(frozen=True)
class QueryPlan:
    question: str
    reading: names.Reading
    route: str  # the strategy `auto` answers it with
    note: str  # what was read and what is done, in one line

    @property
    def by_name(self) -> bool:
        """`auto` may answer it by name, without vectors (services/retrieval/name_answer.py): a bare or dotted
        name, not a path, not words that may spell a name. Cheap: no index read."""
        return self.reading.kind in (names.NAME, names.DOTTED) and " " not in self.reading.name


def plan(question: str) -> QueryPlan:
    reading = names.read(question)
    route, note = choose(reading, question)
    return QueryPlan(question, reading, route, note)


def choose(reading: names.Reading, question: str) -> tuple[str, str]:
    """(the strategy for this question, read as `reading`, and a one-line note saying what was read and what
    is done)."""
    if reading.navigation and not (reading.kind == names.NAME and " " in reading.name):  # words may spell no name
        return FOR_NAMES, f"read as {_kind(reading)} `{reading.name}`: {_first(reading)} first ({FOR_NAMES})"
    frames = extract(question).frames if is_long(question) else ()
    if frames:
        return FOR_REPORTS, (f"a traceback of {len(frames)} frame{'s' if len(frames) != 1 else ''}: "
                             f"ranking by {FOR_REPORTS}, files named by the innermost frames first")
    if is_long(question):
        return FOR_REPORTS, f"a bug report of {len(question.split()):,} words: ranking by {FOR_REPORTS}"
    return FOR_WORDS, f"a question in words: ranking by {FOR_WORDS}, measured best for those"


def _kind(reading: names.Reading) -> str:
    return {names.NAME: "a name", names.DOTTED: "a dotted name", names.PATH: "a path"}[reading.kind]


def _first(reading: names.Reading) -> str:
    return {names.NAME: "its definitions", names.DOTTED: "its definition or module file",
            names.PATH: "the file"}[reading.kind]
