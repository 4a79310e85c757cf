"""Where a workspace's index lives: its folder, catalogue, vector collection and keyword index."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np

from services.storage.catalog import FORMAT_CHANGES, INDEX_FORMAT, Catalog
from services.core.errors import IndexMissingError, IndexStoreError, WorkspaceError
from services.storage.faults import ProvenDamage, require_unlocked
from services.storage.history_store import HISTORY_FILE, CommitIndex, HistoryState, HistoryStore, open_checked
from services.storage.keyword_index import KeywordIndex
from services.core.models import Chunk
from services.storage.projection import Projection
from services.storage.vector_store import VectorStore, forget_client, hnsw_problem, make_client, unreadable

CATALOG_FILE = "manifest.sqlite"
OLD_KEYWORD_FOLDERS = ("bm25", "bm25.new")  # the BM25 files (bm25s) before the keyword table in the catalogue
PROJECTION_FILE = "projection.npy"
ASIDE_FOLDER = "aside"  # in the data dir: old indexes a rebuild keeps until the new one is verified


def expanded(workspace: str | Path) -> Path:
    """The folder with `~` expanded; `~name` of no user on this machine is a WorkspaceError (pathlib
    raises RuntimeError on it)."""
    try:
        return Path(workspace).expanduser()
    except RuntimeError:
        raise WorkspaceError(f"Workspace folder {workspace} does not exist: no such user's home.") from None


def workspace_root(workspace: str | Path) -> Path:
    root = expanded(workspace)
    if not root.exists():
        raise WorkspaceError(f"Workspace folder {root} does not exist.")
    if not root.is_dir():
        raise WorkspaceError(f"Workspace {root} is not a folder.")
    return root.resolve()


def workspace_key(root: Path) -> str:
    """The index folder's name and (as `collection_name`) the vector collection's: ASCII letters, digits, `_`
    and `-` only, whatever the folder is called (Chroma refuses `ke_école_…`), so the folder's readable name
    is shown from its path, never from this key."""
    digest = hashlib.sha1(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    safe = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-_" else "_" for ch in root.name)[:40]
    return f"{safe or 'root'}-{digest}"


def collection_name(key: str) -> str:
    """Chroma's rules: 3-512 characters of [a-zA-Z0-9._-], starting and ending with a letter or digit."""
    return "ke_" + key.replace("-", "_")[:50]


class WorkspaceIndex:
    """Opened lazily; `exists()` tells whether an index was ever built (and not deleted since)."""

    def __init__(self, root: Path, data_dir: Path, chroma_url: str | None = None) -> None:
        self.root = root
        self.key = workspace_key(root)
        self.folder = data_dir / "workspaces" / self.key
        self.chroma_url = chroma_url
        self.keywords = KeywordIndex(self.catalog)
        self._catalog: Catalog | None = None
        self._store: VectorStore | None = None
        self._projection: Projection | None = None
        self._history_store: HistoryStore | None = None
        self._history: tuple[int, CommitIndex | None] | None = None  # (store generation, index built on it)
        self._history_lock = threading.Lock()
        self.running = False  # an indexing run is under way
        self.run = None  # the Indexer of the run under way (its state, cancel event and last progress)
        self.asked: set[str] = set()  # files a question or go-to found while their vectors wait: embedded next
        self.integrity = None  # the last integrity check (services/indexing/integrity.py); None: check again

    def ask_first(self, paths) -> None:
        """During a run: these files (a question's answer, a go-to's hit) get their vectors next."""
        if self.running:
            self.asked.update(paths)

    @property
    def chroma_path(self) -> Path:
        return self.folder / "chroma"

    def exists(self) -> bool:
        return (self.folder / CATALOG_FILE).exists() and self._catalog_has_model()

    def _catalog_has_model(self) -> bool:
        try:
            return bool(self.catalog().get_meta("model"))
        except sqlite3.DatabaseError:  # a garbled manifest: an index, damaged (health says so, `index` rebuilds)
            return True

    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog(self.folder / CATALOG_FILE)  # fills its keyword table if it had none
            for name in OLD_KEYWORD_FOLDERS:
                shutil.rmtree(self.folder / name, ignore_errors=True)
        return self._catalog

    def _unlocked(self) -> None:
        """IndexUnavailable ("busy ... (held by pid N)") when another process holds a lock on the embedded
        store that Chroma would wait on without end, silent: checked at opening and before each write."""
        if not self.chroma_url:
            require_unlocked(self.chroma_path / "chroma.sqlite3", "the vector store (chroma.sqlite3)")

    def store(self) -> VectorStore:
        if self._store is None:
            self._unlocked()
            try:
                problem = "" if self.chroma_url else hnsw_problem(self.chroma_path)
            except OSError as error:  # cannot be read now (e.g. no file handle left)
                raise unreadable(error) from error
            if problem:  # Chroma would crash the process on it
                raise ProvenDamage(f"the vector store's search index cannot be read ({problem}). Run "
                                   "`knowledge-explorer index` to rebuild it.")
            try:
                client = make_client(None if self.chroma_url else self.chroma_path, self.chroma_url)
            except Exception as error:  # a garbled chroma.sqlite3 fails here
                raise unreadable(error) from error
            self._store = VectorStore(client, collection_name(self.key),
                                      lambda vids: self.catalog().ids_for_vectors(vids), self._unlocked)
        return self._store

    def history_store(self) -> HistoryStore:
        """The workspace's stored git history (services/storage/history_store.py), checked as it opens: one
        proven damaged is set aside and started again (history_store.open_checked)."""
        if self._history_store is None:
            self._history_store = open_checked(self.folder / HISTORY_FILE)
        return self._history_store

    def history_state(self) -> HistoryState:
        """What the stored history holds, or why it holds nothing (its state is NOT_READ before a first read)."""
        if not (self.folder / HISTORY_FILE).exists():
            return HistoryState()
        return self.history_store().state()

    def history(self) -> CommitIndex | None:
        """A keyword index over the workspace's commits, None when it has none (not a repository, never
        read). Built once, rebuilt when an indexing run stored new commits."""
        if not (self.folder / HISTORY_FILE).exists():
            return None
        with self._history_lock:
            store = self.history_store()
            generation = store.generation()
            if self._history is None or self._history[0] != generation:
                commits = store.commits()
                self._history = (generation, CommitIndex(commits) if commits else None)
            return self._history[1]

    @property
    def projection_path(self) -> Path:
        return self.folder / PROJECTION_FILE

    def projection(self) -> Projection | None:
        """The index's dimension reduction, if it has one (services/storage/projection.py). Not cached while
        absent: an indexing run may fit one at any moment."""
        if self._projection is None and self.projection_path.exists():
            self._projection = Projection.load(self.projection_path)
        return self._projection

    def set_projection(self, projection: Projection) -> None:
        projection.save(self.projection_path)
        self._projection = projection

    def project(self, vectors) -> np.ndarray:
        """Vectors from the encoder, as this index stores them."""
        projection = self.projection()
        vectors = np.asarray(vectors, dtype=np.float32)
        return projection.apply(vectors) if projection and vectors.size else vectors

    def encoder(self, encode):
        """`encode` (texts -> encoder vectors) followed by this index's projection."""
        return lambda texts: self.project(encode(texts))

    def vanished(self) -> str:
        """If the index folder was deleted while open, drop the stale handles and say so; else ""."""
        if (self.folder / CATALOG_FILE).exists():
            return ""
        was_open = self._catalog is not None
        self.reset_handles()
        return f"The index folder {self.folder} was deleted. Reindex to rebuild it." if was_open else ""

    def chunks(self, ids: list[str]) -> dict[str, Chunk]:
        """Chunks by id."""
        return {c.id: c for c in self.catalog().chunks(ids)}

    def paths(self) -> list[str]:
        """Every indexed path."""
        return sorted(self.catalog().files())

    def id_paths_languages(self) -> list[tuple[str, str, str]]:
        return self.catalog().id_paths_languages()

    def require(self) -> None:
        """Raise a clear error when there is no index, or its folder vanished under a running app."""
        deleted = self.vanished()
        if deleted:
            raise IndexMissingError(deleted)
        if not (self.folder / CATALOG_FILE).exists() or not self._catalog_has_model():
            raise IndexMissingError(f"{self.root} is not indexed yet. Index it first.")
        try:
            old_format = self.catalog().get_meta("index_format", "1")
        except sqlite3.DatabaseError as error:
            raise IndexMissingError(f"The index of {self.root} cannot be read ({error}). Run `knowledge-explorer "
                                    f"index {self.root}` to rebuild it.") from error
        if old_format != INDEX_FORMAT:
            raise IndexMissingError(f"The index of {self.root} is in an older format: reindex to rebuild it "
                                    f"({FORMAT_CHANGES.get(old_format, 'a newer version wrote it')}).")
        if not self.chroma_url and not self.chroma_path.exists():
            raise IndexMissingError(f"The vector store of {self.root} is missing. Run `knowledge-explorer "
                                    f"index {self.root}` to rebuild it.")

    def reset_handles(self) -> None:
        if self._catalog is not None:
            try:
                self._catalog.close()
            except Exception:
                pass
        self._catalog = None
        self._store = None
        self._projection = None
        self._close_history()
        self.integrity = None
        self.keywords = KeywordIndex(self.catalog)
        if not self.chroma_url:
            forget_client(self.chroma_path)

    @property
    def aside(self) -> Path:
        """Where a rebuild keeps the old index until the new one is complete and verified."""
        return self.folder.parent.parent / ASIDE_FOLDER / self.key

    def set_aside(self) -> bool:
        """Start a rebuild from nothing, the old index moved aside (never deleted in place: a rebuild that
        fails puts it back, one that completes removes it). True when this call moved it; False when an
        earlier rebuild's old index is aside already (the folder then holds that rebuild's unfinished
        output, which is removed: the original stays aside)."""
        if self.chroma_url:  # a server's collection cannot be moved: it is dropped, as before
            self.store().drop()
        self.reset_handles()
        if self.aside.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
            return False
        if not self.folder.exists():
            return False
        self.aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.folder, self.aside)
        return True

    def restore_aside(self) -> None:
        """Put the old index back in place of an unfinished rebuild (the rebuild failed)."""
        self.reset_handles()
        shutil.rmtree(self.folder, ignore_errors=True)
        os.replace(self.aside, self.folder)
        self.reset_handles()

    def drop_aside(self) -> None:
        """The rebuilt index is complete and verified: the old one goes."""
        shutil.rmtree(self.aside, ignore_errors=True)

    def size_bytes(self) -> int:
        if not self.folder.exists():
            return 0
        return sum(p.stat().st_size for p in self.folder.rglob("*") if p.is_file())

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None
        self._close_history()

    def _close_history(self) -> None:
        with self._history_lock:
            if self._history_store is not None:
                try:
                    self._history_store.close()
                except Exception:
                    pass
            self._history_store = None
            self._history = None
