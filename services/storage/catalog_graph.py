"""The catalogue's code graph (services/storage/code_graph.py, read by services/retrieval/graph.py) and the rows
go to symbol / file reads (services/retrieval/goto.py): spans and names of chunks and files, no chunk text."""

from __future__ import annotations

from services.core.batching import batches, marks
from services.core.models import chunk_id
from services.storage import code_graph
from services.storage.catalog_db import CHUNKS, ID_PARTS, CatalogDb


class Graph(CatalogDb):
    """Who uses which name, and where definitions and files lie (`catalog.graph`)."""

    def graph_ready(self) -> bool:
        """Whether every catalogued file's references are in the graph (an index from before the graph,
        or of an older GRAPH_VERSION, has them filled by the next run: Indexer._fill_graph)."""
        return self.get_meta("graph") == code_graph.GRAPH_VERSION

    def set_graph_uses(self, path: str, file_hash: str, uses: dict[str, str]) -> bool:
        """A file's references alone (filling the graph of an existing index), when the catalogue still
        has the file at `file_hash`; False when it does not (a run will commit it, references and all)."""
        with self._lock, self._transaction():
            row = self._db.execute("SELECT rowid, file_hash FROM files WHERE path = ?", (path,)).fetchone()
            if row is None or row[1] != file_hash:
                return False
            code_graph.replace(self._db, row[0], uses)
            return True

    def uses_of(self, names: list[str]) -> list[tuple[str, str, str]]:
        """(name, path, encoded uses) of every file using one of `names` (exact case)."""
        with self._lock:
            return [row for part in batches(list(dict.fromkeys(names))) for row in code_graph.of_names(self._db, part)]

    def uses_in(self, path: str) -> list[tuple[str, str]]:
        """(name, encoded uses) of every name a file uses."""
        with self._lock:
            return code_graph.of_file(self._db, path)

    def graph_rows(self) -> int:
        with self._lock:
            return code_graph.row_count(self._db)

    def chunk_spans(self, paths: list[str]) -> list[tuple]:
        """(path, language, start_line, end_line, symbol, qualified_name, kind, chunk id) of every chunk of
        these files, by path and line; no chunk text is read."""
        found = []
        for part in batches(sorted(set(paths))):
            rows = self._query(f"SELECT {ID_PARTS}, c.language, c.symbol, c.qualified_name, c.kind FROM {CHUNKS} "
                               f"WHERE f.path IN ({marks(len(part))})", part)
            found += [(r[0], r[5], r[1], r[2], r[6], r[7], r[8], chunk_id(*r[:5])) for r in rows]
        return sorted(found, key=lambda r: (r[0], r[2], -r[3]))

    def definition_rows(self) -> list[tuple]:
        """(path, language, start_line, end_line, symbol, qualified_name, kind) of every named definition
        (no module or text chunks), by path and line; no chunk text is read."""
        return self._query(f"SELECT f.path, c.language, c.start_line, c.end_line, c.symbol, c.qualified_name, c.kind "
                           f"FROM {CHUNKS} WHERE c.symbol != '' AND c.kind NOT IN ('module', 'text') "
                           "ORDER BY f.path, c.start_line, c.end_line")

    def file_spans(self) -> list[tuple[str, str, int]]:
        """(path, language, last indexed line) of every file."""
        return self._query(f"SELECT f.path, f.language, COALESCE(MAX(c.end_line), 1) FROM files f "
                           "LEFT JOIN chunks c ON c.file = f.rowid GROUP BY f.rowid ORDER BY f.path")
