"""The code graph's references in the manifest: per file, each name its code uses and where.

One row per (name, file): `uses` lists the lines and how ("12c 40a 3i:_pytest.python", see
services/indexing/chunking/graph.py). Definitions are the catalogue's chunks. Rows are written in the
same transaction as the file's chunks (Catalog.commit_file) and removed with the file, so the graph is
always of the catalogued version of every file. Names are resolved to definitions at query time
(services/retrieval/graph.py).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

TABLE = "refs"
GRAPH_VERSION = "2"  # change with what services/indexing/chunking/graph.py finds: the index refills the table
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


CREATE = (f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT NOT NULL, file INTEGER NOT NULL, uses TEXT NOT NULL, "
          "PRIMARY KEY (name, file)) WITHOUT ROWID",
          f"CREATE INDEX IF NOT EXISTS {TABLE}_by_file ON {TABLE}(file)")


def create(db: sqlite3.Connection) -> None:
    for statement in CREATE:  # not executescript: that would end the caller's transaction
        db.execute(statement)


def replace(db: sqlite3.Connection, number: int, uses: dict[str, str]) -> None:
    """Under the caller's transaction: a file's rows, {name: encoded uses}."""
    remove(db, number)
    db.executemany(f"INSERT INTO {TABLE} VALUES (?, ?, ?)", [(name, number, text) for name, text in uses.items()])


def remove(db: sqlite3.Connection, number: int | None) -> None:
    if number is not None:
        db.execute(f"DELETE FROM {TABLE} WHERE file = ?", (number,))


def of_names(db: sqlite3.Connection, names: list[str]) -> list[tuple[str, str, str]]:
    """(name, path, uses) of every file using one of `names` (exact case)."""
    marks = ",".join("?" * len(names))
    return db.execute(f"SELECT r.name, f.path, r.uses FROM {TABLE} r JOIN files f ON f.rowid = r.file "
                      f"WHERE r.name IN ({marks}) ORDER BY f.path", names).fetchall()


def of_file(db: sqlite3.Connection, path: str) -> list[tuple[str, str]]:
    """(name, uses) of every name one file uses."""
    return db.execute(f"SELECT r.name, r.uses FROM {TABLE} r JOIN files f ON f.rowid = r.file WHERE f.path = ?",
                      (path,)).fetchall()


def row_count(db: sqlite3.Connection) -> int:
    return db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]
