"""One reading of a question (issue 53), made once per question and handed to the stages that need it, as zoekt
parses its query once: how it reads (a name, a dotted name, a path or a question: names.read) and the strategy
`auto` answers it with, and why (strategies.auto.choose)."""

from __future__ import annotations

from dataclasses import dataclass

from services.retrieval import names
from services.retrieval.strategies.auto import choose


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
