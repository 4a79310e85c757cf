"""Users' relevance labels, one file per workspace in the labelled query set format that `eval` reads
(services/core/labelled.py). Storage, below the engine: the engine records labels, `tuned` learns from
them, evaluation (above the engine) scores strategies against them. Ids are stable: derived from the
normalised query text.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from services.core.labelled import LabelledQuery, parse_query


def normalise_query(text: str) -> str:
    return " ".join(text.split()).lower()


def query_id(text: str) -> str:
    """Same question (ignoring case and spacing) -> same id."""
    return "q-" + hashlib.sha1(normalise_query(text).encode("utf-8")).hexdigest()[:12]


def default_labels_file(data_dir: str | Path, workspace: str | Path) -> Path:
    """Where the app keeps a workspace's labels: `<data_dir>/labels/<folder name>-<path hash>.jsonl`.

    Outside the workspace, so labelling never changes what gets indexed.
    """
    root = Path(workspace).expanduser().resolve()
    digest = hashlib.sha1(str(root).encode("utf-8")).hexdigest()[:8]
    return Path(data_dir) / "labels" / f"{root.name or 'root'}-{digest}.jsonl"


def _read(queries_file: Path) -> list[dict]:
    if not queries_file.exists():
        return []
    records = []
    # one record a "\n" (what _write ends each with): splitlines() would also split a question or path at
    # U+0085, U+2028 or a form feed, which json.dumps(ensure_ascii=False) leaves as they are
    for number, line in enumerate(queries_file.read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{queries_file}:{number}: not valid JSON ({exc.msg})") from None
    return records


def _write(queries_file: Path, records: list[dict]) -> None:
    """Replace the file atomically, so a crash never leaves half a query set."""
    queries_file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=queries_file.parent, prefix=".labels-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(tmp, queries_file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _find(records: list[dict], query: str) -> int | None:
    key = normalise_query(query)
    for i, record in enumerate(records):
        if normalise_query(str(record.get("text", ""))) == key:
            return i
    return None


def record_label(queries_file: str | Path, query: str, path: str, symbol: str, relevant: bool) -> LabelledQuery:
    """Mark (path, symbol) relevant or not relevant for `query`, adding or updating its line.

    `symbol` may be "" to label the whole file. Labelling the same result again overwrites the grade.
    Returns the query as now stored.
    """
    if not query.strip():
        raise ValueError("cannot label a result of an empty question")
    queries_file = Path(queries_file)
    records = _read(queries_file)
    index = _find(records, query)
    if index is None:
        records.append({"id": query_id(query), "text": query.strip(), "relevant": []})
        index = len(records) - 1
    record = records[index]
    entries = [e for e in record.get("relevant") or []
               if not (e.get("path") == path and (e.get("symbol") or "") == (symbol or ""))]
    entry: dict[str, object] = {"path": path}
    if symbol:
        entry["symbol"] = symbol
    entry["grade"] = 1 if relevant else 0
    entries.append(entry)
    record["relevant"] = entries
    _write(queries_file, records)
    return parse_query(record, str(queries_file))


def labels_for(queries_file: str | Path, query: str) -> dict[tuple[str, str], int]:
    """{(path, symbol): grade} already recorded for `query` (empty when none)."""
    records = _read(Path(queries_file))
    index = _find(records, query)
    if index is None:
        return {}
    stored = parse_query(records[index], str(queries_file))
    return {(item.path, item.symbol): item.grade for item in stored.relevant}
