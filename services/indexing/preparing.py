"""Reading, chunking and graphing the changed files of a run: in worker processes when there are many, so
a big first index chunks on every core (and a parser that crashes takes a worker down, not the app).

The indexer decides what each result means (unchanged, skipped, new) in the scan's order, as before; only
the work moves. Workers are spawned, never forked: the parent holds encoder threads and open stores."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat

from services.core.models import Chunk
from services.core.settings import Settings
from services.indexing.chunking import chunk_file, graph
from services.indexing.scanning import SkipFileError, SourceFile, read_source
from services.storage import code_graph

log = logging.getLogger(__name__)
PARALLEL_FILES = 200  # fewer files chunk faster in the process than workers start (about 0.3 s each)
MAX_WORKERS = 8
PER_TASK = 8  # files handed to a worker at a time


@dataclass
class Prepared:
    """One changed file as a worker left it: `skip` or `error` says why it is not indexed; `chunks` is None
    when its content is the catalogue's (`old_hash`)."""

    source: SourceFile
    digest: str = ""
    chunks: list[Chunk] | None = None
    uses: dict[str, str] = field(default_factory=dict)
    skip: str = ""  # a reason the scan's rules give (binary, machine-made, unreadable…)
    error: str = ""  # "could not be read: …" or "could not be chunked: …"


def prepare(source: SourceFile, settings: Settings, old_hash: str | None) -> Prepared:
    """Read `source`, and chunk and graph it unless its bytes hash to `old_hash`."""
    try:
        text, digest = read_source(source, settings.skip_machine_made, settings.max_file_bytes)
    except SkipFileError as skip:
        return Prepared(source, skip=skip.reason)
    except Exception as error:  # e.g. a file that vanished or changed type under us
        log.debug("reading %s failed", source.path, exc_info=True)  # the indexer logs the reason
        return Prepared(source, error=f"could not be read: {short_reason(error)}")
    if digest == old_hash:
        return Prepared(source, digest)
    try:
        chunks = chunk_file(source.path, text, source.language, digest, settings)
    except Exception as error:  # a parser bug must not lose the rest of the workspace
        log.debug("chunking %s failed", source.path, exc_info=True)
        return Prepared(source, digest, error=f"could not be chunked: {short_reason(error)}")
    return Prepared(source, digest, chunks, file_graph(source.path, text, source.language))


def prepared(sources: list[SourceFile], settings: Settings, old_hashes: list[str | None],
             cancel: threading.Event) -> Iterator[Prepared]:
    """Each source prepared, in order; stops early on a cancel. Many files go to worker processes; if a worker
    dies (a parser's crash), the files it had not finished are prepared here."""
    import multiprocessing  # here: a cold question never starts workers (~10-30 ms of imports)
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    workers = min(os.cpu_count() or 1, MAX_WORKERS)
    # a daemonic process (the window's engine process) may not start processes of its own
    if len(sources) < PARALLEL_FILES or workers < 2 or multiprocessing.current_process().daemon:
        yield from _in_process(sources, settings, old_hashes, cancel)
        return
    done = 0
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        for item in pool.map(prepare, sources, repeat(settings), old_hashes, chunksize=PER_TASK):
            if cancel.is_set():
                return
            done += 1
            yield item
    except (BrokenProcessPool, OSError, RuntimeError, AssertionError) as error:  # a worker died, or none started
        log.warning("chunking in worker processes stopped after %d of %d files (%s); the rest are chunked in "
                    "this process", done, len(sources), short_reason(error))
        yield from _in_process(sources[done:], settings, old_hashes[done:], cancel)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _in_process(sources: Iterable[SourceFile], settings: Settings, old_hashes: Iterable[str | None],
                cancel: threading.Event) -> Iterator[Prepared]:
    for source, old_hash in zip(sources, old_hashes):
        if cancel.is_set():
            return
        yield prepare(source, settings, old_hash)


def file_graph(path: str, text: str, language: str) -> dict[str, str]:
    """A file's references for the code graph, {name: encoded uses}; none when its parse fails."""
    try:
        return {name: code_graph.encode(uses) for name, uses in graph.file_uses(text, language).items()}
    except Exception:  # a grammar crash must not lose the file: it is indexed without references
        log.warning("finding the references of %s failed", path, exc_info=True)
        return {}


def short_reason(error: BaseException, limit: int = 160) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 1] + "…"
