"""Does the index agree with itself? The catalogue (the source of truth) against the vector store and
the keyword index: each readable, every catalogued chunk with a vector (ids in full when cheap, else
a sample), the keyword table (in the catalogue) over exactly the catalogued chunks.

Run when an index is first opened, after a store error, and at the start of every indexing run,
which repairs what it finds (services/indexing/indexer.py).
"""

from __future__ import annotations

import logging
import random
import sqlite3
from dataclasses import dataclass

from services.storage.catalog import INDEX_FORMAT
from services.storage.vector_store import one_line
from services.storage.workspace_index import WorkspaceIndex

FULL_ID_CHECK = 50_000  # up to this many chunks every vector id is compared; above, a sample
SAMPLE = 2_000

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Integrity:
    catalog_unreadable: str = ""  # why, when the manifest cannot be read
    store_missing: bool = False  # the vector store's folder is gone
    store_unreadable: str = ""
    missing_vectors: int = 0  # catalogued chunks without a vector (counted on the sample when sampled)
    sampled: bool = False
    repair_paths: frozenset[str] = frozenset()  # files whose chunks lack vectors
    keywords: str = ""  # what is wrong with the keyword index, if anything

    @property
    def unreadable(self) -> bool:
        """Parts that cannot be read or are gone: only a rebuild repairs them."""
        return bool(self.catalog_unreadable or self.store_missing or self.store_unreadable)

    @property
    def damaged(self) -> bool:
        return self.unreadable or bool(self.missing_vectors or self.keywords)

    def problems(self) -> list[str]:
        found = []
        if self.catalog_unreadable:
            found.append(f"the manifest cannot be read ({self.catalog_unreadable})")
        if self.store_missing:
            found.append("the vector store is missing")
        if self.store_unreadable:
            found.append(f"the vector store cannot be read ({self.store_unreadable})")
        if self.missing_vectors:
            found.append(f"{'at least ' if self.sampled else ''}{self.missing_vectors} chunks without vectors")
        if self.keywords:
            found.append(self.keywords)
        return found

    def message(self) -> str:
        """"damaged: 9 chunks without vectors; run `index` to repair it" ("" when sound)."""
        if not self.damaged:
            return ""
        return "damaged: " + "; ".join(self.problems()) + ". Run `knowledge-explorer index` to repair it"


SOUND = Integrity()


def check(index: WorkspaceIndex, full: bool = False) -> Integrity:
    """Compare the parts of an existing index; never raises (what cannot be read is the finding).
    `full` compares every vector id whatever the size (an indexing run, which repairs what it finds)."""
    try:
        catalog = index.catalog()
        if catalog.get_meta("index_format", "1") != INDEX_FORMAT:
            return SOUND  # an older layout, not damage: health reads what it can, `index` rebuilds it
        vids = catalog.vector_ids()
    except sqlite3.DatabaseError as error:
        return Integrity(catalog_unreadable=one_line(error))
    if not index.chroma_url and not index.chroma_path.exists():
        return Integrity(store_missing=bool(vids))
    try:
        index.projection()
    except Exception as error:  # a garbled projection.npy: the stored vectors cannot be matched
        return Integrity(store_unreadable=f"{index.projection_path.name}: {one_line(error)}")
    try:
        missing, sampled = _missing_vectors(index, vids, full)
    except Exception as error:  # a garbled chroma.sqlite3 or HNSW file, or a server gone
        log.warning("the vector store of %s cannot be read", index.root, exc_info=True)
        return Integrity(store_unreadable=one_line(error))
    paths = frozenset(catalog.paths_of_vectors(missing)) if missing and not sampled else frozenset()
    return Integrity(missing_vectors=len(missing), sampled=sampled, repair_paths=paths,
                     keywords=_keyword_problem(index, full or len(vids) <= FULL_ID_CHECK))


def _missing_vectors(index: WorkspaceIndex, vids: list[str], full: bool) -> tuple[list[str], bool]:
    """(vector ids the catalogue lists and the store lacks, whether only a sample was compared)."""
    store = index.store()
    if full or len(vids) <= FULL_ID_CHECK:
        stored = store.vector_ids()
        store.probe()
        return [v for v in vids if v not in stored], False
    sample = random.sample(vids, SAMPLE)
    present = store.present(sample)
    store.probe()
    missing = [v for v in sample if v not in present]
    if not missing and store.count() < len(vids):
        missing = ["?"] * (len(vids) - store.count())  # fewer vectors than chunks, none in the sample
    return missing, True


def _keyword_problem(index: WorkspaceIndex, verify: bool) -> str:
    """The keyword table (in the catalogue, written with it) against the catalogued chunks; `verify` (when
    cheap, or in a run) also reads its structure, so garbled pages are found before a query or a run meets them."""
    try:
        return index.catalog().keyword_problem(verify)
    except sqlite3.DatabaseError as error:
        log.warning("the keyword index of %s cannot be read", index.root, exc_info=True)
        return f"the keyword index cannot be read ({one_line(error)})"
