"""One way to send many ids or values to SQLite or Chroma: in slices under their limits.

SQLite refuses a statement with more bound values than its variable limit (32,766 since 3.32, 999 before;
Chroma's own SQLite already fails at 32,766 ids in one `get`), and Chroma refuses a write larger than its
client's `get_max_batch_size()` (5,461 here). Every `IN (...)` list and every id list given to Chroma goes
through `batches`, so no feature breaks with the size of a repository.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

SQL_VALUES = 500  # values bound per statement: far under every SQLite's variable limit, and small statements
CHROMA_IDS = 500  # ids per Chroma get (its SQLite binds each one)


def batches(values: Sequence[T], size: int = SQL_VALUES) -> Iterator[list[T]]:
    """`values` in consecutive slices of at most `size` (none when empty)."""
    values = list(values)
    for start in range(0, len(values), max(1, size)):
        yield values[start:start + size]


def marks(count: int) -> str:
    """`?, ?, ...`: the placeholders of an `IN (...)` list of `count` values."""
    return ",".join("?" * count)
