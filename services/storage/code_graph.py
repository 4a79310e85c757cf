"""The code graph's references in the manifest: per file, each name its code uses and where.

Per file, one compressed blob (`ref_uses`) of {name: uses}, where `uses` lists the lines and how
("12c 40a 3i:_pytest.python", see services/indexing/chunking/graph.py); names are numbered once
(`ref_names`), and `refs` lists (name number, file) pairs to find a name's files. Definitions are the
catalogue's chunks. Rows are written in the same transaction as the file's chunks (Catalog.commit_file)
and removed with the file, so the graph is always of the catalogued version of every file. Names are
resolved to definitions at query time (services/retrieval/graph.py).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from dataclasses import dataclass

TABLE = "refs"  # (name number, file): which files use a name
NAMES = "ref_names"
USES = "ref_uses"  # a file's {name: uses}, compressed
TABLES = (TABLE, NAMES, USES)
# change with what services/indexing/chunking/graph.py finds, or with the layout: the index refills the tables
# 3: a file's uses in one compressed blob, names numbered once (a name and its uses per row took 3x the space)
# 4: local bindings (parameters, assigned names) and the receivers of member uses
GRAPH_VERSION = "4"
# How a name is used, as one letter in the catalogue; "l" binds it (a parameter, an assigned name): no use.
KINDS = {"c": "call", "a": "attribute", "i": "import", "b": "base", "t": "type", "n": "name"}
LOCAL = "l"


@dataclass(frozen=True)
class Use:
    line: int  # 1-based
    kind: str  # a key of KINDS
    module: str = ""  # Python `from MODULE import name`: where the name comes from
    receiver: str = ""  # a member's: the name it is used on (`self`, `config`), "?" for an expression


def encode(uses: list[Use]) -> str:
    """A name's uses as the catalogue keeps them: "12c 40a@self 3i:_pytest.python"."""
    return " ".join(f"{u.line}{u.kind}" + (f"@{u.receiver}" if u.receiver else "") + (f":{u.module}" if u.module else "")
                    for u in uses)


def decode(text: str) -> list[Use]:
    uses = []
    for item in text.split():
        head, _, module = item.partition(":")
        head, _, receiver = head.partition("@")
        uses.append(Use(int(head[:-1]), head[-1], module, receiver))
    return uses


CREATE = (f"CREATE TABLE IF NOT EXISTS {NAMES} (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
          f"CREATE TABLE IF NOT EXISTS {TABLE} (name_id INTEGER NOT NULL, file INTEGER NOT NULL, "
          "PRIMARY KEY (name_id, file)) WITHOUT ROWID",
          f"CREATE TABLE IF NOT EXISTS {USES} (file INTEGER PRIMARY KEY, uses BLOB NOT NULL)")


def create(db: sqlite3.Connection) -> None:
    """The tables; a table of the older layout (a name and its uses per row) is dropped: graph_ready() is
    then false (GRAPH_VERSION changed with it) and the next run refills the graph."""
    if "uses" in {row[1] for row in db.execute(f"PRAGMA table_info({TABLE})")}:
        db.execute(f"DROP TABLE {TABLE}")
    for statement in CREATE:  # not executescript: that would end the caller's transaction
        db.execute(statement)


def replace(db: sqlite3.Connection, number: int, uses: dict[str, str]) -> None:
    """Under the caller's transaction: a file's rows, {name: encoded uses}."""
    remove(db, number)
    if not uses:
        return
    names = json.dumps(list(uses))
    db.execute(f"INSERT OR IGNORE INTO {NAMES} (name) SELECT value FROM json_each(?)", (names,))
    db.execute(f"INSERT INTO {TABLE} SELECT id, ? FROM {NAMES} WHERE name IN (SELECT value FROM json_each(?))",
               (number, names))
    blob = zlib.compress(json.dumps(uses, separators=(",", ":")).encode("utf-8"), 6)
    db.execute(f"INSERT INTO {USES} VALUES (?, ?)", (number, blob))


def remove(db: sqlite3.Connection, number: int | None) -> None:
    if number is None:
        return
    names = json.dumps(list(_file_uses(db, number)))
    db.execute(f"DELETE FROM {TABLE} WHERE file = ? AND name_id IN "
               f"(SELECT id FROM {NAMES} WHERE name IN (SELECT value FROM json_each(?)))", (number, names))
    db.execute(f"DELETE FROM {USES} WHERE file = ?", (number,))


def remove_all(db: sqlite3.Connection) -> None:
    for table in TABLES:
        db.execute(f"DELETE FROM {table}")


def prune(db: sqlite3.Connection) -> None:
    """Drop the names no file uses any more (after removals)."""
    db.execute(f"DELETE FROM {NAMES} WHERE NOT EXISTS (SELECT 1 FROM {TABLE} WHERE name_id = {NAMES}.id)")


def of_names(db: sqlite3.Connection, names: list[str]) -> list[tuple[str, str, str]]:
    """(name, path, uses) of every file using one of `names` (exact case)."""
    rows = db.execute(f"SELECT n.name, f.path, u.uses FROM {TABLE} r JOIN {NAMES} n ON n.id = r.name_id "
                      f"JOIN files f ON f.rowid = r.file JOIN {USES} u ON u.file = r.file "
                      f"WHERE n.name IN ({','.join('?' * len(names))}) ORDER BY f.path, n.name", names).fetchall()
    return [(name, path, _decoded(blob)[name]) for name, path, blob in rows]


def of_file(db: sqlite3.Connection, path: str) -> list[tuple[str, str]]:
    """(name, uses) of every name one file uses, by name."""
    row = db.execute(f"SELECT u.uses FROM {USES} u JOIN files f ON f.rowid = u.file WHERE f.path = ?",
                     (path,)).fetchone()
    return sorted(_decoded(row[0]).items()) if row else []


def row_count(db: sqlite3.Connection) -> int:
    """(name, file) pairs: the names each file uses, summed."""
    return db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]


def _file_uses(db: sqlite3.Connection, number: int) -> dict[str, str]:
    row = db.execute(f"SELECT uses FROM {USES} WHERE file = ?", (number,)).fetchone()
    return _decoded(row[0]) if row else {}


def _decoded(blob: bytes) -> dict[str, str]:
    return json.loads(zlib.decompress(blob))
