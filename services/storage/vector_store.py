"""ChromaDB vector store: embedded PersistentClient by default, HttpClient for a `chroma run` server.

Embeddings are always passed in; the collection has no embedding function, so Chroma's default
(which would download a model) never runs. Telemetry is off. chromadb is imported when a client is made
(0.45 s of a cold start): a name question answered from the catalogue never loads it.

Lean: Chroma holds short vector ids and vectors, nothing else: no documents, no metadata. A chunk's
text lives once, in the catalogue, which serves chunks by id; filters are sets of chunk ids from it.
"""

from __future__ import annotations

import logging
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from services.core.batching import CHROMA_IDS, batches
from services.storage import faults
from services.storage.catalog_db import vector_id
from services.core.errors import IndexStoreError, IndexUnavailable, KnowledgeError
from services.core.models import Chunk



def chroma_settings():
    """A fresh settings object for each client: chromadb's clients modify the one they are given
    (an HttpClient would turn a later PersistentClient into a server client)."""
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)

# Chroma's native calls hold the GIL, and two threads inside Chroma at once (a query beside an
# indexing write) were seen to hold it for over a second. One lock, taken before entering Chroma
# (waiting on it releases the GIL), keeps every stall down to a single call's own length.
log = logging.getLogger(__name__)
CHROMA_CALL = threading.RLock()
# Chroma caches a folder's system before it starts it: a second thread opening the same folder meanwhile
# got the unstarted one ("'RustBindingsAPI' object has no attribute 'bindings'"). Clients start one at a time.
CLIENT_START = threading.Lock()
WRITE_SLICE = 128  # Chroma holds the GIL while it writes: 0.59 ms a vector in slices of 16, 0.19 in slices of 128 (a 76 ms hold)


def make_client(path: Path | None, url: str | None):
    if url:
        parsed = urlparse(url)
        if not parsed.hostname:
            raise KnowledgeError(f"--chroma-url {url!r} is not a URL like http://127.0.0.1:8000")
        import chromadb

        try:
            with CLIENT_START:  # Chroma caches a server's system before starting it too
                return chromadb.HttpClient(host=parsed.hostname, port=parsed.port or 8000,
                                           ssl=parsed.scheme == "https", settings=chroma_settings())
        except Exception as error:  # chromadb checks the server at once: ValueError "Could not connect"
            raise IndexStoreError(f"the Chroma server at {url} does not answer ({one_line(error)}). "
                                  "Start it (chroma run) or leave out --chroma-url.") from error
    if path is None:
        raise KnowledgeError("an embedded vector store needs a folder")
    path.mkdir(parents=True, exist_ok=True)
    with CLIENT_START:
        return embedded_client(path)


def embedded_client(path: Path):
    import chromadb

    try:
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings())
    except BaseException as error:
        forget_unlocked(path)  # Chroma caches its system before starting it: a failed start would stay cached
        if type(error).__name__ == "PanicException":  # Chroma's Rust side panicked, e.g. no file handle left
            raise RuntimeError(f"the vector store's engine did not start ({one_line(error)})") from None
        raise


def one_line(error: BaseException, limit: int = 160) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"


def unreadable(error: Exception) -> IndexStoreError:
    """A failed read of the vector store, as one line that says what to do: a passing fault (a full disk,
    no file handle left, a lock) is "unavailable", and says that nothing was changed."""
    if isinstance(error, KnowledgeError):
        return error
    if faults.transient(error):
        return IndexUnavailable(unavailable_text("the vector store", error))
    return IndexStoreError(f"the vector store cannot be read ({one_line(error)}). Run `knowledge-explorer "
                           "index` to repair it (it rebuilds the store when it must).")


def unavailable_text(part: str, error: BaseException, path: Path | None = None) -> str:
    """"unavailable: the manifest cannot be read now (disk I/O error); ..." or "busy: ... (held by pid N)"
    for a lock another process holds on `path`."""
    if isinstance(error, IndexUnavailable):  # said already
        return str(error)
    if faults.busy(error):
        held = faults.held_by(path) if path else ""
        return (f"busy: {part} is locked by another process{held} ({one_line(error)}); nothing was changed: "
                "try again once it lets go")
    return (f"unavailable: {part} cannot be read now ({one_line(error)}); nothing was changed: try again once "
            "that is fixed (disk space, open-file limit, permissions)")


HNSW_HEADER = struct.Struct("<i6QiI3QdQ")  # chroma-hnswlib's header.bin: version, then hnswlib's header


def hnsw_problem(chroma_path: Path) -> str:
    """What is wrong with the HNSW files of an embedded store, "" when they hold together. Chroma's
    native code trusts these files and crashes the process (SIGSEGV) on a garbled one, so they are
    checked before Chroma opens them: the header against the file sizes, every level-0 link in range.
    Raises OSError when they cannot be read now (a full disk, no file handle left)."""
    for header in sorted(chroma_path.glob("*/header.bin")):
        try:
            problem = _hnsw_segment_problem(header.parent)
        except OSError as error:
            if faults.transient(error):  # it cannot be read now: no proof of anything
                raise
            problem = one_line(error)
        except (ValueError, struct.error) as error:
            problem = one_line(error)
        if problem:
            return f"{header.parent.name}: {problem}"
    return ""


def _hnsw_segment_problem(folder: Path) -> str:
    (_, _, max_elements, count, size, label_at, data_at, max_level, entry, max_m, max_m0, _, _,
     _) = HNSW_HEADER.unpack((folder / "header.bin").read_bytes()[:HNSW_HEADER.size])
    if not (count <= max_elements and data_at == 4 + 4 * max_m0 and data_at < label_at == size - 8
            and max_m <= max_m0 < 4096 and size % 4 == 0):
        return "its header does not hold together"
    if not count:
        return ""  # nothing flushed to the graph yet (Chroma keeps the first vectors in its log)
    level0 = folder / "data_level0.bin"
    if not (0 <= max_level < 64 and entry < count) or level0.stat().st_size < count * size:
        return "its header does not match data_level0.bin"
    rows = np.fromfile(level0, dtype=np.uint32, count=count * size // 4).reshape(count, size // 4)
    links = rows[:, 0] & 0xFFFF
    if np.any(links > max_m0):
        return "a link list is longer than the graph allows"
    ids = rows[:, 1:1 + max_m0]
    used = np.arange(max_m0) < links[:, None]
    if np.any(ids[used] >= count):
        return "a link points past the last element"
    return _upper_levels_problem(folder / "link_lists.bin", count, max_m, max_level, entry)


def _upper_levels_problem(path: Path, count: int, max_m: int, max_level: int, entry: int) -> str:
    """link_lists.bin: per element, a u32 byte size, then that many bytes of upper-level link lists (one
    block of a u32 count and `max_m` u32 ids per level above 0). Checked like level 0: every size a whole
    number of levels within the graph's height, the entry point on the top level, every link in range."""
    data = path.read_bytes() if path.exists() else b""
    block = 4 + 4 * max_m
    blocks, at, entry_levels = [], 0, 0
    for element in range(count):
        if at + 4 > len(data):
            return "link_lists.bin is shorter than the graph"
        size = int.from_bytes(data[at:at + 4], "little")
        at += 4
        if size % block or size // block > max_level or at + size > len(data):
            return "link_lists.bin does not match the graph's levels"
        if size:
            blocks.append(np.frombuffer(data, dtype=np.uint32, count=size // 4, offset=at))
        if element == entry:
            entry_levels = size // block
        at += size
    if entry_levels != max_level:
        return "the graph's entry point is not on its top level"
    if not blocks:
        return ""
    rows = np.concatenate(blocks).reshape(-1, block // 4)
    links = rows[:, 0] & 0xFFFF
    if np.any(links > max_m):
        return "an upper-level link list is longer than the graph allows"
    used = np.arange(max_m) < links[:, None]
    if np.any(rows[:, 1:][used] >= count):
        return "an upper-level link points past the last element"
    return ""


def forget_client(path: Path) -> None:
    """Drop Chroma's cached system for a folder (after the folder was deleted under us)."""
    with CLIENT_START:
        forget_unlocked(path)


def forget_unlocked(path: Path) -> None:
    if "chromadb" not in sys.modules:  # no client was ever made: nothing is cached
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient._identifier_to_system.pop(str(path), None)


class VectorStore:
    """One Chroma collection per workspace, holding vectors under `vector_id`s and nothing else.
    `resolve` maps vector ids back to chunk ids (the catalogue keeps both); filters are sets of
    allowed chunk ids, worked out from the catalogue."""

    IDS_FILTER_MAX = 2000  # larger filters search wider and filter the hits instead

    def __init__(self, client, collection_name: str, resolve: Callable[[list[str]], dict[str, str]],
                 before_write: Callable[[], None] = lambda: None) -> None:
        """`before_write` raises IndexUnavailable when a write would wait on another process's lock."""
        self.client = client
        self.name = collection_name
        self.resolve = resolve
        self.before_write = before_write
        self._collection = None
        self._lock = threading.Lock()

    def collection(self):
        with self._lock, CHROMA_CALL:
            if self._collection is None:
                try:
                    self._collection = self.client.get_or_create_collection(
                        self.name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                    )
                except Exception as error:
                    raise unreadable(error) from error
            return self._collection

    def drop(self) -> None:
        with self._lock, CHROMA_CALL:
            self.before_write()
            self._collection = None
            try:
                self.client.delete_collection(self.name)
            except Exception:  # it did not exist
                pass

    def upsert(self, chunks: list[Chunk], embeddings) -> None:
        for start in range(0, len(chunks), WRITE_SLICE):  # WRITE_SLICE is under Chroma's max batch size
            part = chunks[start:start + WRITE_SLICE]
            with CHROMA_CALL:  # every Chroma call of this process waits here: a lock now is another's
                self.before_write()
                self.collection().upsert(ids=[vector_id(c.id) for c in part],
                                         embeddings=embeddings[start:start + WRITE_SLICE])
            time.sleep(0)  # Chroma holds the GIL while it writes: let the GUI thread run between slices

    def delete(self, ids: list[str]) -> None:
        self._delete_vectors([vector_id(i) for i in ids])

    def _delete_vectors(self, vids: list[str]) -> None:
        for part in batches(vids, WRITE_SLICE):
            with CHROMA_CALL:
                self.before_write()
                self.collection().delete(ids=part)
            time.sleep(0)

    def sweep(self, keep: set[str]) -> int:
        """Delete every vector whose chunk is not in `keep` (orphans of a crash); returns how many."""
        wanted = {vector_id(i) for i in keep}
        with CHROMA_CALL:
            stored = self.collection().get(include=[])["ids"]
        orphans = sorted(set(stored) - wanted)
        self._delete_vectors(orphans)
        return len(orphans)

    def embeddings(self, ids: list[str]) -> dict[str, list[float]]:
        if not ids:
            return {}
        by_vid = {vector_id(i): i for i in ids}
        found: dict = {}
        for part in batches(list(by_vid), CHROMA_IDS):
            with CHROMA_CALL:
                got = self.collection().get(ids=part, include=["embeddings"])
            found.update((by_vid[v], e) for v, e in zip(got["ids"], got["embeddings"]))
        return found

    def settle(self) -> None:
        """Write one stored vector back unchanged: Chroma's first write after a bulk load waits on work
        the load left, and this makes the run that loaded pay it rather than the next small write."""
        try:
            with CHROMA_CALL:
                got = self.collection().get(limit=1, include=["embeddings"])
                if got["ids"]:
                    self.before_write()
                    self.collection().upsert(ids=got["ids"], embeddings=got["embeddings"])
        except Exception:  # only a warm-up: the run's vectors are stored and committed already
            log.warning("settling the vector store failed; the next write pays the wait instead", exc_info=True)

    def vector_ids(self) -> set[str]:
        """The ids of every stored vector."""
        with CHROMA_CALL:
            return set(self.collection().get(include=[])["ids"])

    def present(self, vids: list[str]) -> set[str]:
        """Which of these vector ids the store holds."""
        found = set()
        for part in batches(vids, CHROMA_IDS):
            with CHROMA_CALL:
                found.update(self.collection().get(ids=part, include=[])["ids"])
        return found

    def probe(self) -> None:
        """One nearest-neighbour search with a stored vector: raises when the search index is unreadable."""
        with CHROMA_CALL:
            got = self.collection().get(limit=1, include=["embeddings"])
            if len(got["ids"]):
                self.collection().query(query_embeddings=[got["embeddings"][0]], n_results=1, include=[])

    def all_ids(self) -> set[str]:
        """Chunk ids of the stored vectors; a vector the catalogue does not list keeps its vector id."""
        with CHROMA_CALL:
            vids = self.collection().get(include=[])["ids"]
        known = self.resolve(vids)
        return {known.get(v, v) for v in vids}

    def count(self) -> int:
        try:
            with CHROMA_CALL:
                return self.collection().count()
        except Exception as error:
            raise unreadable(error) from error

    def search(self, embedding, n: int, allowed: set[str] | None = None) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk id, cosine similarity), only `allowed` ones when it is given.
        A small filter goes into Chroma's search; a large one filters a wider search."""
        if n <= 0 or allowed is not None and not allowed:
            return []
        if allowed is None:  # no count first: Chroma answers fewer when it holds fewer (a count costs O(chunks))
            return self._query(embedding, n, None)
        if len(allowed) <= self.IDS_FILTER_MAX:
            return self._query(embedding, min(n, len(allowed)), [vector_id(i) for i in allowed])
        total = self.count()
        wanted = min(total, int(n * total / len(allowed) * 1.5) + 20)
        while True:
            hits = self._query(embedding, min(wanted, total), None)
            kept = hits if allowed is None else [h for h in hits if h[0] in allowed]
            if len(kept) >= n or wanted >= total:
                return kept[:n]
            wanted *= 4

    def _query(self, embedding, n: int, vids: list[str] | None) -> list[tuple[str, float]]:
        if n <= 0:
            return []
        try:
            with CHROMA_CALL:
                result = self.collection().query(query_embeddings=[embedding], n_results=n, ids=vids,
                                                 include=["distances"])
        except Exception as error:
            raise unreadable(error) from error
        found, distances = result["ids"][0], result["distances"][0]
        known = self.resolve(found)
        return [(known[v], 1.0 - d) for v, d in zip(found, distances) if v in known]
