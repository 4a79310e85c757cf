"""Indexing overlapped (issue 44): files chunked in worker processes, and each window's vectors stored and marked
by a writer thread while the next one is encoded. The per-file promise holds under the overlap: a run killed with
SIGKILL while a window's write is held and the next is being encoded leaves every file fully old or fully new
(here all new: step 1 committed them), and the next run makes only the vectors left. Real parts: the CLI in a child process, the catalogue, Chroma, the
stand-in model."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from services.engine.service import LocalEngine
from services.indexing import vector_step
from services.indexing.preparing import PARALLEL_FILES, prepared
from services.indexing.scanning import scan_workspace
from services.storage.workspace_index import WorkspaceIndex, workspace_root
from tests.helpers.stand_in_encoder import stand_in_model, stand_in_settings

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]
FILES = 300  # more than PARALLEL_FILES: the run chunks in worker processes


def version(i: int, new: bool) -> str:
    """File i's text: eight functions, named and written differently in the new version."""
    suffix, extra = ("_v2", " + 1000") if new else ("", "")
    return "".join(f"def f{i}_{j}{suffix}(x):\n    '''Compute thing {i} {j} for the caller.'''\n"
                   f"    return x * {j} + {i}{extra}\n\n\n" for j in range(8))


def write_all(root: Path, new: bool) -> None:
    for i in range(FILES):
        (root / f"m{i}.py").write_text(version(i, new))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def indexed(tmp_path):
    root, data = tmp_path / "ws", tmp_path / "data"
    root.mkdir()
    write_all(root, new=False)
    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        report = asyncio.run(service.index(root))
    finally:
        service.close()
    assert report.files_indexed == FILES
    return root, data


HOLDER = textwrap.dedent("""
    import sys, threading
    from services.storage.catalog_awaiting import Awaiting
    from services.encoders.embedder import Embedder
    held, windows, encoded = threading.Event(), [], [0]
    stored, encode = Awaiting.vectors_stored, Embedder.encode_chunks

    def holding_write(self, ids):
        if threading.current_thread().name.startswith("ke-store"):
            windows.append(len(ids))
            if len(windows) == 4:  # inside the fourth window's write (files 29-60), 28 files' vectors marked
                held.set()
                threading.Event().wait()
        return stored(self, ids)

    def watched_encode(self, chunks):
        if encoded[0] >= 480:  # the fifth window (the first four hold 60 files, 480 chunks)
            held.wait()  # the writer gets there on its own: it never waits on this thread
            print("encoding while a write is held", flush=True)
            threading.Event().wait()
        encoded[0] += len(chunks)
        return encode(self, chunks)

    Awaiting.vectors_stored, Embedder.encode_chunks = holding_write, watched_encode
    from app.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_kill_9_during_an_overlapped_run_leaves_every_file_fully_old_or_fully_new(indexed):
    root, data = indexed
    write_all(root, new=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "index", str(root), "--data-dir", str(data), "--model", str(stand_in_model())],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert "encoding while a write is held" in process.stdout.readline()
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()

    index = WorkspaceIndex(workspace_root(root), data)
    try:
        catalog = index.catalog()
        records = catalog.files()
        assert len(records) == FILES and catalog.keywords.keyword_problem() == ""
        # step 1 committed every file, fully new; step 2 had marked the vectors of the first three windows
        assert all(r.file_hash == digest(version(int(p[1:-3]), new=True)) for p, r in records.items())
        for path in records:
            symbols = {chunk.symbol for chunk in catalog.chunks(path=path)}
            assert len(symbols) == 8 and all(s.endswith("_v2") for s in symbols), path
        assert catalog.awaiting.awaiting_count() == 8 * (FILES - 28)
        assert set(catalog.awaiting.awaiting_paths()) == {p for p in records if p not in vector_order_first(28)}
        assert catalog.chunk_ids() - catalog.awaiting.awaiting_ids() <= index.store().all_ids()  # marked: stored
    finally:
        index.close()

    # the next run, in a new process as after any crash, makes the vectors left and sweeps the orphans
    rerun = subprocess.run([sys.executable, "-m", "app.cli", "index", str(root), "--data-dir", str(data), "--model",
                            str(stand_in_model())], cwd=REPO, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert rerun.returncode == 0, rerun.stderr
    assert f"0 files indexed, {FILES} unchanged" in rerun.stdout  # step 1 is not done again
    assert f"{8 * (FILES - 28)} chunks embedded" in rerun.stdout
    index = WorkspaceIndex(workspace_root(root), data)
    try:
        assert index.store().all_ids() == index.catalog().chunk_ids() and index.catalog().awaiting.awaiting_count() == 0
    finally:
        index.close()


def test_the_next_encoder_call_runs_while_the_last_ends_and_every_chunk_keeps_its_own_vector(tmp_path, monkeypatch):
    """OpenVINO takes two calls at once: step 2 starts the next call before the last one returns (its streams do
    not wait between calls), and each chunk's stored vector is still its own."""
    from services.encoders.embedder import Embedder, chunk_text

    root, data = tmp_path / "ws", tmp_path / "data"
    root.mkdir()
    write_all(root, new=False)
    second_started, overlapped = threading.Event(), []
    running = [0]
    lock = threading.Lock()
    encode = Embedder.encode_chunks

    def watched(self, chunks):
        with lock:
            running[0] += 1
            first = running[0] == 1 and not overlapped
            if running[0] == 2:
                second_started.set()
        try:
            if first:  # hold the first call until a second one has started beside it
                overlapped.append(second_started.wait(timeout=120))
            return encode(self, chunks)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(Embedder, "encode_chunks", watched)
    monkeypatch.setattr(vector_step, "FIRST_WINDOW_CHUNKS", vector_step.WINDOW_CHUNKS)  # its first call has a next
    service = LocalEngine(stand_in_settings(embedding_backend="openvino-int8"), data_dir=data)
    try:
        report = asyncio.run(service.index(root))
        assert report.files_indexed == FILES and overlapped == [True]
    finally:
        service.close()
    index = WorkspaceIndex(workspace_root(root), data)
    try:
        chunks = index.catalog().chunks()[::97]
        stored = index.store().embeddings([c.id for c in chunks])
        embedder = Embedder(str(stand_in_model()), backend="openvino-int8", role="check")
        expected = index.project(embedder.encode([chunk_text(c) for c in chunks]))
        for chunk, vector in zip(chunks, expected):
            assert np.allclose(stored[chunk.id], vector, atol=1e-4), chunk.id
    finally:
        index.close()


def test_the_next_window_s_first_call_runs_while_the_last_window_s_last_call_ends(tmp_path, monkeypatch):
    """Calls run on across a window's end: the first window (one file, one call) is held until a call of the next
    window has started beside it, so the encoder never waits while a window ends and the next is read. Every
    file is indexed whole."""
    from services.encoders.embedder import Embedder

    root, data = tmp_path / "ws", tmp_path / "data"
    root.mkdir()
    write_all(root, new=False)
    first_window = vector_order_first(1)
    beside, held = threading.Event(), []
    encode = Embedder.encode_chunks

    def watched(self, chunks):
        paths = {c.path for c in chunks}
        if paths == first_window and not held:  # the first window's only call
            held.append(beside.wait(timeout=60))
        elif not paths & first_window:
            beside.set()
        return encode(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", watched)
    monkeypatch.setattr(vector_step, "FIRST_WINDOW_CHUNKS", 1)  # the first window: one file
    service = LocalEngine(stand_in_settings(embedding_backend="openvino-int8"), data_dir=data)
    try:
        report = asyncio.run(service.index(root))
        assert held == [True] and report.files_indexed == FILES
    finally:
        service.close()
    index = WorkspaceIndex(workspace_root(root), data)
    try:
        assert index.store().all_ids() == index.catalog().chunk_ids() and index.catalog().awaiting.awaiting_count() == 0
    finally:
        index.close()


def vector_order_first(files: int) -> set[str]:
    """The first files step 2 embeds (all are source files without history: by path)."""
    return set(sorted(f"m{i}.py" for i in range(FILES))[:files])


def test_worker_processes_chunk_as_the_process_does_and_stop_on_a_cancel(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    write_all(root, new=False)
    sources = scan_workspace(root).files
    (root / "m7.py").unlink()  # gone between the scan and its reading
    settings = stand_in_settings()
    assert len(sources) >= PARALLEL_FILES
    in_workers = list(prepared(sources, settings, [None] * len(sources), threading.Event()))
    one_by_one = [item for source in sources for item in prepared([source], settings, [None], threading.Event())]
    assert [(p.source.path, p.digest, p.chunks, p.uses, p.skip) for p in in_workers] == \
           [(p.source.path, p.digest, p.chunks, p.uses, p.skip) for p in one_by_one]
    assert [p.source.path for p in in_workers if p.skip.startswith("unreadable")] == ["m7.py"]
    assert sum(len(p.chunks or []) for p in in_workers) == 8 * (FILES - 1)

    unchanged = list(prepared(sources, settings, [p.digest for p in in_workers], threading.Event()))
    assert all(p.chunks is None for p in unchanged)  # a file whose bytes are the catalogue's is not chunked again

    cancel, seen = threading.Event(), 0
    for _ in prepared(sources, settings, [None] * len(sources), cancel):
        seen += 1
        cancel.set()
    assert seen == 1


def chunk_in_a_daemon(root: str, answer) -> None:
    """In a daemonic process, as the window's engine process is: prepare every file of `root`."""
    sources = scan_workspace(Path(root)).files
    items = list(prepared(sources, stand_in_settings(), [None] * len(sources), threading.Event()))
    answer.send(sum(len(p.chunks or []) for p in items))


def test_a_daemonic_engine_process_chunks_in_itself_and_loses_no_file(tmp_path):
    """The window's engine runs in a daemonic process, which may not start worker processes: it chunks in
    itself instead of failing the run."""
    import multiprocessing

    root = tmp_path / "ws"
    root.mkdir()
    write_all(root, new=False)
    receive, send = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("spawn").Process(target=chunk_in_a_daemon, args=(str(root), send),
                                                           daemon=True)
    process.start()
    try:
        assert receive.poll(300), "no answer from the daemonic process"
        assert receive.recv() == 8 * FILES
    finally:
        process.join(60)
        process.kill()
