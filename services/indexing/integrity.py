"""Does the index agree with itself? The catalogue (the source of truth) against the vector store and
the keyword index: each readable, every catalogued chunk with a vector (ids in full when cheap, else
a sample), the keyword table (in the catalogue) over exactly the catalogued chunks.

Run when an index is first opened, after a store error, and at the start of every indexing run,
which repairs what it finds (services/indexing/indexer.py).

Damage needs proof (services/storage/faults.py): a part that fails to read is damaged only when its files
fail a structure check (SQLite's quick_check, a header that is not SQLite's, the HNSW check, FTS5's
integrity check). A part that cannot be read *now* (a full disk, no file handle left, a lock, a
permission) is `unavailable`: health says so, and an indexing run stops before it touches anything.
"""

from __future__ import annotations

import logging
import random
import sqlite3
from dataclasses import dataclass

from services.storage import faults
from services.storage.catalog import INDEX_FORMAT
from services.storage.vector_store import one_line, unavailable_text
from services.storage.workspace_index import CATALOG_FILE, WorkspaceIndex

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
    unavailable: str = ""  # a part cannot be read now (no proof of damage): the one line to show

    @property
    def unreadable(self) -> bool:
        """Parts proven corrupt or gone: only a rebuild repairs them."""
        return bool(self.catalog_unreadable or self.store_missing or self.store_unreadable)

    @property
    def damaged(self) -> bool:
        return self.unreadable or bool(self.missing_vectors or self.keywords)

    def problems(self) -> list[str]:
        found = []
        if self.catalog_unreadable:
            found.append(_cannot_read("the manifest", self.catalog_unreadable))
        if self.store_missing:
            found.append("the vector store is missing")
        if self.store_unreadable:
            found.append(_cannot_read("the vector store", self.store_unreadable))
        if self.missing_vectors:
            found.append(f"{'at least ' if self.sampled else ''}{self.missing_vectors} chunks without vectors")
        if self.keywords:
            found.append(self.keywords)
        return found

    def message(self) -> str:
        """"damaged: 9 chunks without vectors; run `index` to repair it", or the `unavailable` line ("" when
        sound)."""
        if self.unavailable:
            return self.unavailable
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
    except (sqlite3.Error, OSError) as error:
        proof = _proof(error, [index.folder / CATALOG_FILE])
        if proof is None:
            return Integrity(unavailable=unavailable_text("the manifest", error, index.folder / CATALOG_FILE))
        return Integrity(catalog_unreadable=proof)
    if not index.chroma_url and not index.chroma_path.exists():
        return Integrity(store_missing=bool(vids))
    try:
        index.projection()
    except OSError as error:  # cannot be read now
        return Integrity(unavailable=unavailable_text("the vector projection", error))
    except Exception as error:  # a garbled projection.npy: the stored vectors cannot be matched
        return Integrity(store_unreadable=f"{index.projection_path.name}: {one_line(error)}")
    try:
        missing, sampled = _missing_vectors(index, vids, full)
    except faults.ProvenDamage as error:  # the HNSW files fail their structure check
        return Integrity(store_unreadable=one_line(error))
    except Exception as error:  # a garbled chroma.sqlite3, a full disk, no file handle, a lock, a server gone
        log.warning("the vector store of %s cannot be read", index.root, exc_info=True)
        files = [] if index.chroma_url else [index.chroma_path / "chroma.sqlite3"]
        proof = _proof(error, files)
        if proof is None:
            return Integrity(unavailable=unavailable_text("the vector store", error, files[0] if files else None))
        return Integrity(store_unreadable=proof)
    paths = frozenset(catalog.paths_of_vectors(missing)) if missing and not sampled else frozenset()
    keywords = _keyword_problem(index, full or len(vids) <= FULL_ID_CHECK)
    if keywords.startswith(("unavailable: ", "busy: ")):
        return Integrity(unavailable=keywords)
    return Integrity(missing_vectors=len(missing), sampled=sampled, repair_paths=paths, keywords=keywords)


def _proof(error: BaseException, files: list) -> str | None:
    """Why a part that failed to read is damaged, proven: SQLite itself calls it corrupt, or one of its
    files fails the structure check. None when nothing is proven (it cannot be read now, or it reads whole
    and the failure was something else): then it is unavailable, never damaged."""
    if faults.transient(error) and not faults.names_damage(error):
        return None
    found = faults.proven_problem(files)
    if found:
        return one_line(error) if faults.names_damage(error) else found
    if faults.names_damage(error):  # SQLite says so itself, and the check could not run or passed
        return one_line(error) if found == "" else None
    return None


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
        return index.catalog().keywords.keyword_problem(verify)
    except sqlite3.DatabaseError as error:
        log.warning("the keyword index of %s cannot be read", index.root, exc_info=True)
        if faults.transient(error) and not faults.names_damage(error):
            return unavailable_text("the manifest's keyword index", error, index.folder / CATALOG_FILE)
        return f"the keyword index cannot be read ({one_line(error)})"


def _cannot_read(part: str, detail: str) -> str:
    """"the vector store cannot be read (why)", said once: a detail that is already such a line (an error of the
    store's own) is kept as it is, without its advice (the message gives the one advice)."""
    detail = detail.split(". Run `knowledge-explorer index`")[0]
    return detail if detail.startswith(part) else f"{part} cannot be read ({detail})"
