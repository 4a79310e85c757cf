"""The code graph's references in the manifest: per file, each name its code uses and where.

Names are kept once, in `ref_names`; one row per (name number, file): `uses` lists the lines and how ("12c 40a 3i:_pytest.python", see
services/indexing/chunking/graph.py). Definitions are the catalogue's chunks. Rows are written in the
same transaction as the file's chunks (Catalog.commit_file) and removed with the file, so the graph is
always of the catalogued version of every file. Names are resolved to definitions at query time
(services/retrieval/graph.py).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

TABLE = "refs"
NAMES = "ref_names"
# change with what services/indexing/chunking/graph.py finds, or with the layout: the index refills the table
# 3: names numbered in ref_names (refs took a third of the catalogue, each name repeated per file)
GRAPH_VERSION = "3"
# How a name is used, as one letter in the catalogue.
KINDS = {"c": "call", "a": "attribute", "i": "import", "b": "base", "t": "type", "n": "name"}


@dataclass(frozen=True)
class Use:
    line: int  # 1-based
    kind: str  # a key of KINDS
    module: str = ""  # Python `from MODULE import name`: where the name comes from


def encode(uses: list[Use]) -> str:
    """A name's uses as the catalogue keeps them: "12c 40a 3i:_pytest.python"."""
    return " ".join(f"{u.line}{u.kind}" + (f":{u.module}" if u.module else "") for u in uses)


def decode(text: str) -> list[Use]:
    uses = []
    for item in text.split():
        head, _, module = item.partition(":")
        uses.append(Use(int(head[:-1]), head[-1], module))
    return uses


CREATE = (f"CREATE TABLE IF NOT EXISTS {NAMES} (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
          f"CREATE TABLE IF NOT EXISTS {TABLE} (name_id INTEGER NOT NULL, file INTEGER NOT NULL, uses TEXT NOT NULL, "
          "PRIMARY KEY (name_id, file)) WITHOUT ROWID",
          f"CREATE INDEX IF NOT EXISTS {TABLE}_by_file ON {TABLE}(file)")
SELECT = f"{TABLE} r JOIN {NAMES} n ON n.id = r.name_id JOIN files f ON f.rowid = r.file"


def create(db: sqlite3.Connection) -> None:
    """The tables; a table of the older layout (a name per row) is dropped: graph_ready() is then false
    (GRAPH_VERSION changed with it) and the next run refills it."""
    if "name" in {row[1] for row in db.execute(f"PRAGMA table_info({TABLE})")}:
        db.execute(f"DROP TABLE {TABLE}")
    for statement in CREATE:  # not executescript: that would end the caller's transaction
        db.execute(statement)


def replace(db: sqlite3.Connection, number: int, uses: dict[str, str]) -> None:
    """Under the caller's transaction: a file's rows, {name: encoded uses}."""
    remove(db, number)
    db.executemany(f"INSERT OR IGNORE INTO {NAMES} (name) VALUES (?)", [(name,) for name in uses])
    db.executemany(f"INSERT INTO {TABLE} SELECT id, ?, ? FROM {NAMES} WHERE name = ?",
                   [(number, text, name) for name, text in uses.items()])


def remove(db: sqlite3.Connection, number: int | None) -> None:
    if number is not None:
        db.execute(f"DELETE FROM {TABLE} WHERE file = ?", (number,))


def remove_all(db: sqlite3.Connection) -> None:
    db.execute(f"DELETE FROM {TABLE}")
    db.execute(f"DELETE FROM {NAMES}")


def prune(db: sqlite3.Connection) -> None:
    """Drop the names no file uses any more (after removals)."""
    db.execute(f"DELETE FROM {NAMES} WHERE NOT EXISTS (SELECT 1 FROM {TABLE} WHERE name_id = {NAMES}.id)")


def of_names(db: sqlite3.Connection, names: list[str]) -> list[tuple[str, str, str]]:
    """(name, path, uses) of every file using one of `names` (exact case)."""
    return db.execute(f"SELECT n.name, f.path, r.uses FROM {SELECT} WHERE n.name IN ({','.join('?' * len(names))}) "
                      "ORDER BY f.path, n.name", names).fetchall()


def of_file(db: sqlite3.Connection, path: str) -> list[tuple[str, str]]:
    """(name, uses) of every name one file uses, by name."""
    return db.execute(f"SELECT n.name, r.uses FROM {SELECT} WHERE f.path = ? ORDER BY n.name", (path,)).fetchall()


def row_count(db: sqlite3.Connection) -> int:
    return db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]
