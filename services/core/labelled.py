"""Labelled questions: the query set format (JSONL) that `eval` reads and users' labels are kept in.

One line per query: {"id", "text", "relevant": [{"path", "symbol"?, "grade"}], "before"?}; grade 1 =
relevant, grade 0 = judged not relevant. Plain data and its reader, below everything that uses it (the
labels store, `tuned`, evaluation).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RelevantItem:
    path: str
    symbol: str = ""
    grade: int = 1  # 0 = judged not relevant

    @property
    def doc_id(self) -> str:
        return f"{self.path}::{self.symbol}" if self.symbol else self.path


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    text: str
    relevant: tuple[RelevantItem, ...] = ()
    before: int | None = None  # unix time the question was asked: history ignores commits at or after it

    def to_json(self) -> dict:
        items = []
        for item in self.relevant:
            entry: dict = {"path": item.path}
            if item.symbol:
                entry["symbol"] = item.symbol
            entry["grade"] = item.grade
            items.append(entry)
        data: dict[str, object] = {"id": self.id, "text": self.text, "relevant": items}
        return data if self.before is None else {**data, "before": self.before}


def read_jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object")
            yield number, record


def parse_query(record: dict, where: str = "") -> LabelledQuery:
    if "id" not in record or "text" not in record:
        raise ValueError(f"{where}: a query needs 'id' and 'text'")
    relevant = []
    for entry in record.get("relevant") or []:
        if isinstance(entry, str):
            entry = {"path": entry}
        if not entry.get("path"):
            raise ValueError(f"{where}: every 'relevant' entry needs a 'path'")
        relevant.append(RelevantItem(str(entry["path"]), str(entry.get("symbol") or ""),
                                     int(entry.get("grade", 1))))
    before = record.get("before")
    if before is not None and (isinstance(before, bool) or not isinstance(before, (int, float))):
        raise ValueError(f"{where}: 'before' must be a unix time in seconds")
    return LabelledQuery(str(record["id"]), str(record["text"]), tuple(relevant),
                         None if before is None else int(before))


def load_queries(path: str | Path) -> list[LabelledQuery]:
    """Read a JSONL query set; `relevant` is optional (CoSQA's queries file has none)."""
    return [parse_query(record, f"{path}:{number}") for number, record in read_jsonl(Path(path))]
