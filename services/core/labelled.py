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


def _record(raw: bytes) -> dict:
    """One line as a labelled query's record; ValueError saying why it is not one."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    try:
        parse_query(record)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a labelled query ({str(exc).lstrip(': ') or type(exc).__name__})") from None
    return record


def scan_records(path: Path) -> tuple[list[dict], list[tuple[int, str, bytes]]]:
    """(the file's query records, its lines that are not one: (line number, why, the line's bytes)); no
    file reads as empty."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], []
    records, bad = [], []
    # one record a "\n": splitlines() would also split a question or path at U+0085, U+2028 or a form feed,
    # which json.dumps(ensure_ascii=False) leaves as they are
    for number, raw in enumerate(data.split(b"\n"), 1):
        if raw.strip():
            try:
                records.append(_record(raw))
            except ValueError as why:
                bad.append((number, str(why), raw))
    return records, bad


def readable_queries(path: str | Path) -> list[LabelledQuery]:
    """The queries of a file's good lines, a damaged line passed over (the labels store sets such lines
    aside: services/storage/labels.py)."""
    return [parse_query(record, str(path)) for record in scan_records(Path(path))[0]]


def load_queries(path: str | Path) -> list[LabelledQuery]:
    """Read a JSONL query set; `relevant` is optional (CoSQA's queries file has none)."""
    return [parse_query(record, f"{path}:{number}") for number, record in read_jsonl(Path(path))]
