"""The chunks awaiting their vectors (the second step of a run, services/indexing/vector_step.py): committed
in `awaiting` with their file (Catalog.commit_file), leaving it once their vectors are stored. Their text is
read by Catalog.awaiting_chunks."""

from __future__ import annotations

from services.core.batching import batches, marks
from services.storage.catalog_db import CHUNKS, ID_PARTS, CatalogDb, vector_id


class Awaiting(CatalogDb):
    """Which chunks await their vectors (`catalog.awaiting`)."""

    def awaiting_count(self) -> int:
        """Chunks committed whose vectors are not stored yet."""
        return self._query("SELECT COUNT(*) FROM awaiting")[0][0]

    def vector_counts(self) -> tuple[int, int]:
        """(chunks, chunks awaiting their vectors), read together (one statement: one snapshot), so a run
        committing between two reads never makes "vectors for -155 of 5,068 chunks"."""
        row = self._query("SELECT (SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM awaiting)")[0]
        return int(row[0]), int(row[1])

    def share_with_vectors(self, ids: list[str]) -> float:
        """The share of these chunks whose vectors are stored (0 for no chunk)."""
        if not ids:
            return 0.0
        waiting = sum(self._query(f"SELECT COUNT(*) FROM awaiting WHERE vid IN ({marks(len(part))})",
                                  [vector_id(i) for i in part])[0][0] for part in batches(ids))
        return 1.0 - waiting / len(ids)

    def awaiting_paths(self) -> dict[str, int]:
        """{path: chunks awaiting their vectors} of every file that has some."""
        return dict(self._query(f"SELECT f.path, COUNT(*) FROM {CHUNKS} JOIN awaiting a ON a.vid = c.vid "
                                "GROUP BY f.path"))

    def awaiting_ids(self) -> set[str]:
        """The ids of every chunk awaiting its vector."""
        return set(self._ids(f"SELECT {ID_PARTS} FROM {CHUNKS} JOIN awaiting a ON a.vid = c.vid"))

    def vectors_stored(self, ids: list[str]) -> None:
        """These chunks' vectors are stored: they await nothing now (one transaction)."""
        with self._lock, self._transaction():
            self._db.executemany("DELETE FROM awaiting WHERE vid = ?", [(vector_id(i),) for i in ids])
