"""Users' relevance labels, one file per workspace in the labelled query set format that `eval` reads
(services/core/labelled.py). Storage, below the engine: the engine records labels, `tuned` learns from
them, evaluation (above the engine) scores strategies against them. Ids are stable: derived from the
normalised query text.

Every write holds the workspace's user-data lock (`<labels>.lock`, filelock: threads and processes alike)
from its read to its atomic replace, so no writer's record is lost and a file is whole or not written. A
line that cannot be read (cut off, not a JSON object, not UTF-8, not a query) is set aside, with its line
number and why, in `<labels>.rejected` beside it; the good lines are kept (repair_note says what was).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from filelock import FileLock, Timeout

from services.core.errors import IndexUnavailable
from services.core.labelled import LabelledQuery, parse_query, scan_records
from services.storage import faults

WRITE_WAIT = 30.0  # seconds a write waits for another writer of the same labels file before it answers "busy"
SET_ASIDE = b"# set aside "  # starts each note of the .rejected file (the line set aside follows it)

log = logging.getLogger(__name__)


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


def rejected_file(queries_file: Path) -> Path:
    return queries_file.with_name(queries_file.name + ".rejected")


@contextmanager
def writing(queries_file: Path) -> Iterator[None]:
    """Hold the labels file's lock for a read-modify-write. A write that cannot be made now (a full disk, a
    permission, a writer holding the lock past WRITE_WAIT) raises IndexUnavailable: nothing was changed."""
    try:
        queries_file.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(queries_file) + ".lock", timeout=WRITE_WAIT, thread_local=False):
            yield
    except Timeout as error:
        raise IndexUnavailable(f"busy: the labels file {queries_file.name} is locked by another writer"
                               f"{faults.held_by(queries_file.with_name(queries_file.name + '.lock'))}; nothing "
                               "was changed: try again") from error
    except OSError as error:
        raise unavailable(queries_file, error, "written") from error


def unavailable(queries_file: Path, error: OSError, verb: str) -> OSError | IndexUnavailable:
    """A fault that passes (a full disk, no file handle left, a permission) as IndexUnavailable; another
    error as it is."""
    if not faults.transient(error):
        return error
    text = " ".join(str(error).split())
    return IndexUnavailable(f"unavailable: the labels file {queries_file.name} cannot be {verb} now ({text}); nothing "
                            "was changed: try again once that is fixed (disk space, open-file limit, permissions)")


def _set_aside(queries_file: Path, bad: list[tuple[int, str, bytes]]) -> None:
    """Append the bad lines, each after a note naming its line and why, to `<labels>.rejected` (synced
    before the labels file is rewritten without them)."""
    when = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    with open(rejected_file(queries_file), "ab") as out:
        for number, why, raw in bad:
            out.write(SET_ASIDE + f"{when} from {queries_file.name} line {number}: {why}\n".encode() + raw + b"\n")
        out.flush()
        os.fsync(out.fileno())


def _read_repairing(queries_file: Path) -> list[dict]:
    """The records, with any bad line set aside (call holding the lock)."""
    records, bad = scan_records(queries_file)
    if bad:
        _set_aside(queries_file, bad)
        _write(queries_file, records)
        log.warning("%s: %d damaged lines set aside in %s", queries_file, len(bad), rejected_file(queries_file).name)
    return records


def read_records(queries_file: str | Path) -> list[dict]:
    """The labels file's records, repairing it first when a line is damaged. A repair that cannot be written
    now (a full disk) is skipped: the good lines are answered all the same, the file is left as it is."""
    queries_file = Path(queries_file)
    try:
        records, bad = scan_records(queries_file)
    except OSError as error:
        raise unavailable(queries_file, error, "read") from error
    if not bad:
        return records
    try:
        with writing(queries_file):
            return _read_repairing(queries_file)
    except IndexUnavailable as error:
        log.warning("could not repair %s: %s", queries_file, error)
        return records


def repair_note(queries_file: str | Path) -> str:
    """"labels: 2 damaged lines set aside in x.jsonl.rejected", or "" when none ever was."""
    rejected = rejected_file(Path(queries_file))
    try:
        count = sum(line.startswith(SET_ASIDE) for line in rejected.read_bytes().split(b"\n"))
    except OSError:
        return ""
    return f"labels: {count} damaged line{'' if count == 1 else 's'} set aside in {rejected}" if count else ""


def _write(queries_file: Path, records: list[dict]) -> None:
    """Replace the file atomically, so a crash never leaves half a query set (call holding the lock)."""
    fd, tmp = tempfile.mkstemp(dir=queries_file.parent, prefix=".labels-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
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
    with writing(queries_file):
        records = _read_repairing(queries_file)
        index = _find(records, query)
        if index is None:
            records.append({"id": query_id(query), "text": query.strip(), "relevant": []})
            index = len(records) - 1
        record = records[index]
        entries = [e for e in record.get("relevant") or []
                   if not (isinstance(e, dict) and e.get("path") == path and (e.get("symbol") or "") == (symbol or ""))]
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
    records = read_records(queries_file)
    index = _find(records, query)
    if index is None:
        return {}
    stored = parse_query(records[index], str(queries_file))
    return {(item.path, item.symbol): item.grade for item in stored.relevant}
