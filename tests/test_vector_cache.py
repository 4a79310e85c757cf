"""Vectors shared across workspaces (issue 22, item 1): a second checkout of an indexed repository embeds
only what differs, answers like a fresh index, and the shared cache keeps every promise of the index (a
model change never serves old vectors, a killed run leaves nothing half-written, a second process cannot
corrupt it). Real parts throughout: git repositories and worktrees made with the git CLI, the bundled model
(its encoder's calls counted), real SQLite, real processes killed with SIGKILL.

Answers are compared with a fresh index on the fp32 ONNX backend (`EXACT`): its vector of a text does not
depend on the other texts of its batch. (Neither do the default openvino-int8 backend's: its activation
ranges are fixed when it is quantised. onnx-int8 quantises each batch's activations with one scale, so its
vector of a chunk moves with its batch mates, cosine 0.97-1.0 to the same text encoded alone;
benchmarks/experiments/checkout_reuse.py measures how much that changes rankings.)"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from services.core.models import QueryOptions
from services.core.settings import Settings
from services.encoders.embedder import chunk_text
from services.engine.service import LocalEngine
from services.storage.vector_cache import CACHE_FILE, VectorCache
from services.storage.workspace_index import WorkspaceIndex, workspace_root
from tests.conftest import copy_sample
from tests.helpers.stand_in_encoder import stand_in_settings

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.stand_in_encoder  # the cache, not the model, is tested here (the CLI embeds with it too)
EXACT = stand_in_settings(embedding_backend="onnx")
COUNTED = "openvino-int8"  # named where counting() counts: `auto` runs an embedder of its own per backend
QUESTIONS = ["parse the config file", "sort items by key", "http request handler", "read a file line by line",
             "user account model", "compute the total"]
CHANGED_FUNCTION = "def cache_reuse_marker(values):\n    \"\"\"Sum only the positive values.\"\"\"\n" \
                   "    return sum(v for v in values if v > 0)\n"


def git(folder: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="T",
               GIT_COMMITTER_EMAIL="t@example.org")
    return subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory) -> tuple[Path, Path]:
    """(first, second): a repository of the sample workspace at its newest commit, and a git worktree of
    it one commit earlier, where one function differs, one is not there yet and one file is not there yet."""
    root = tmp_path_factory.mktemp("checkouts")
    first = copy_sample(root / "project")
    git(first, "init", "-q", "-b", "main")
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "the sample")
    search = first / "notes" / "search.py"
    search.write_text(search.read_text().replace('"""Tokenize a query into keywords', '"""Split a query into keywords')
                      + "\n\n" + CHANGED_FUNCTION)
    (first / "added_later.py").write_text("def added_later(x):\n    return x * 2\n")
    git(first, "add", "-A")
    git(first, "commit", "-q", "-m", "one more function, one more file")
    git(first, "worktree", "add", "-q", str(root / "older"), "HEAD~1")
    return first, root / "older"


def counting(service: LocalEngine) -> list[str]:
    """Every text the service's indexing encoder is asked to embed (the real model still embeds them)."""
    seen: list[str] = []
    encode = service.index_embedder.encode

    def counted(texts):
        seen.extend(texts)
        return encode(texts)

    service.index_embedder.encode = counted
    return seen


def texts_of(data_dir: Path, folder: Path) -> set[str]:
    index = WorkspaceIndex(workspace_root(folder), data_dir)
    try:
        return {chunk_text(c) for c in index.catalog().chunks()}
    finally:
        index.close()


def answers(service: LocalEngine, folder: Path, strategy: str = "none") -> list[list[tuple]]:
    """The top 10 of every question: (path, lines, rounded score)."""
    async def ask():
        found = []
        for question in QUESTIONS:
            result = await service.query(question, QueryOptions(workspace=str(folder), top_k=10, strategy=strategy,
                                                                use_cache=False))
            found.append([(r.chunk.path, r.chunk.start_line, r.chunk.end_line, round(r.score, 3))
                          for r in result.results])
        return found

    return asyncio.run(ask())


def fresh_answers(folder: Path, data_dir: Path, settings: Settings = EXACT) -> list[list[tuple]]:
    service = LocalEngine(settings, data_dir=data_dir)
    try:
        asyncio.run(service.index(folder))
        return answers(service, folder)
    finally:
        service.close()


@pytest.fixture(scope="module")
def fresh(checkouts, tmp_path_factory) -> list[list[tuple]]:
    """The second checkout's answers from an index of its own, in a data dir of its own."""
    return fresh_answers(checkouts[1], tmp_path_factory.mktemp("fresh-data"))


def test_a_second_checkout_embeds_only_what_differs_and_answers_like_a_fresh_index(checkouts, fresh, tmp_path):
    first, second = checkouts
    data = tmp_path / "data"
    service = LocalEngine(EXACT, data_dir=data)
    try:
        embedded = counting(service)
        first_report = asyncio.run(service.index(first))
        assert len(embedded) == first_report.chunks_embedded > 100 and first_report.vectors_reused == 0
        embedded.clear()

        report = asyncio.run(service.index(second))
        differing = texts_of(data, second) - texts_of(data, first)
        assert sorted(embedded) == sorted(differing) and len(differing) >= 1  # the edited file's old chunks
        assert report.chunks_embedded == report.chunks_total  # every chunk has its vector
        assert report.vectors_reused == report.chunks_total - len(differing)
        health = asyncio.run(service.health(second))
        assert (health.last_run_reused, health.last_run_vectors) == (report.vectors_reused, report.chunks_total)
        assert health.state == "ready" and health.chunks_embedded == health.chunks
        assert answers(service, second) == fresh
    finally:
        service.close()


def test_the_index_command_and_health_say_how_many_vectors_were_reused(checkouts, tmp_path, capsys):
    from app.cli import main

    first, second = checkouts
    data = str(tmp_path / "data")
    assert main(["index", str(first), "--data-dir", data]) == 0
    assert "vectors reused" not in capsys.readouterr().out  # nothing to reuse yet
    assert main(["index", str(second), "--data-dir", data]) == 0
    out = capsys.readouterr().out
    assert "Vectors reused: " in out and " of " in out
    assert main(["health", str(second), "--data-dir", data]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "vectors reused" in line)
    reused, total = (int(n.replace(",", "")) for n in line.split(": ")[1].split(" (")[0].split(" of "))
    assert 0 < reused < total


def test_a_big_index_projects_the_cached_full_vectors_with_its_own_projection(checkouts, tmp_path):
    """Indexes of many chunks store fewer dimensions through a projection fitted on their own chunks: the
    cache keeps the encoder's full vectors, so the second checkout fits its own projection from cached
    vectors and answers like its fresh index with the same settings."""
    first, second = checkouts
    settings = EXACT.with_changes(reduce_from_chunks=50, vector_dimensions=48, projection_sample=120)
    expected = fresh_answers(second, tmp_path / "fresh", settings)
    service = LocalEngine(settings, data_dir=tmp_path / "data")
    try:
        asyncio.run(service.index(first))
        embedded = counting(service)
        report = asyncio.run(service.index(second))
        health = asyncio.run(service.health(second))
        assert health.dimension == 48 and "48 of 384 dimensions" in health.vectors
        assert len(embedded) == report.chunks_total - report.vectors_reused < 10
        assert answers(service, second) == expected
    finally:
        service.close()


def test_another_model_or_backend_never_gets_the_cached_vectors(checkouts, tmp_path):
    first, second = checkouts
    data = tmp_path / "data"
    service = LocalEngine(stand_in_settings(), data_dir=data)  # auto, the default: openvino-int8 or onnx-int8
    try:
        asyncio.run(service.index(first))
    finally:
        service.close()
    other = LocalEngine(EXACT, data_dir=data)  # fp32: other vectors
    try:
        embedded = counting(other)
        report = asyncio.run(other.index(second))
        assert report.vectors_reused == 0 and len(embedded) == report.chunks_total
    finally:
        other.close()
    cache = VectorCache(data / CACHE_FILE)
    try:
        assert cache.get(cache.space("another model", 384), 384, sorted(texts_of(data, first))) == {}
    finally:
        cache.close()


def test_without_sharing_every_chunk_is_embedded(checkouts, tmp_path):
    first, second = checkouts
    service = LocalEngine(stand_in_settings(share_vectors=False, embedding_backend=COUNTED), data_dir=tmp_path / "data")
    try:
        asyncio.run(service.index(first))
        embedded = counting(service)
        report = asyncio.run(service.index(second))
        assert report.vectors_reused == 0 and len(embedded) == report.chunks_total
        assert not (tmp_path / "data" / CACHE_FILE).exists()
        assert asyncio.run(service.health(second)).vector_cache.startswith("off")  # health says it is off
    finally:
        service.close()


def test_a_garbled_cache_is_not_used_and_indexing_goes_on(checkouts, tmp_path):
    first, _ = checkouts
    data = tmp_path / "data"
    data.mkdir()
    (data / CACHE_FILE).write_bytes(b"not a database at all " * 500)
    service = LocalEngine(stand_in_settings(embedding_backend=COUNTED), data_dir=data)
    try:
        embedded = counting(service)
        report = asyncio.run(service.index(first))
        assert report.chunks_embedded == len(embedded) == report.chunks_total > 100 and not report.failed
        assert answers(service, first)[0]
    finally:
        service.close()


HOLD = {
    # inside the cache's write transaction: its rows are written but not committed
    "cache write": """
        from services.storage import vector_cache
        insert = vector_cache.VectorCache._insert
        def held(self, db, rows):
            insert(self, db, rows)
            print("held", flush=True)
            threading.Event().wait()
        vector_cache.VectorCache._insert = held
    """,
    # the cache committed a window's vectors; the vector store and the catalogue have not seen them
    "store write": """
        from services.storage import vector_store
        upsert = vector_store.VectorStore.upsert
        def held(self, chunks, vectors):
            if any(c.path == "zz_new_module.py" for c in chunks):
                print("held", flush=True)
                threading.Event().wait()
            return upsert(self, chunks, vectors)
        vector_store.VectorStore.upsert = held
    """,
}


@pytest.mark.parametrize("point", sorted(HOLD))
def test_a_run_killed_while_it_writes_leaves_the_cache_and_the_index_consistent(checkouts, fresh, tmp_path, point):
    """SIGKILL the second checkout's run while the cache is mid-transaction, or just after it committed;
    the cache holds only whole, committed rows, and the next run gives answers equal to a fresh index."""
    first, second = checkouts
    data = tmp_path / "data"
    service = LocalEngine(EXACT, data_dir=data)
    try:
        asyncio.run(service.index(first))
    finally:
        service.close()
    (second / "zz_new_module.py").write_text("def brand_new_helper(a, b):\n    return a - b\n")
    cache_file = data / CACHE_FILE
    before = sqlite3.connect(cache_file).execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
    script = "import sys, threading\n" + textwrap.dedent(HOLD[point]) + textwrap.dedent(f"""
        from app.cli import main
        sys.exit(main(["index", {str(second)!r}, "--data-dir", {str(data)!r}, "--backend", "onnx"]))
    """)
    process = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert process.stdout.readline().strip() == "held"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
        (second / "zz_new_module.py").unlink()

    db = sqlite3.connect(cache_file)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        count, wrong = db.execute("SELECT COUNT(*), SUM(length(vector) != 4 * 384) FROM vectors").fetchone()
    finally:
        db.close()
    assert wrong == 0
    assert (count == before) if point == "cache write" else (count > before)  # rolled back / committed

    service = LocalEngine(EXACT, data_dir=data)
    try:
        asyncio.run(service.index(second))
        health = asyncio.run(service.health(second))
        assert health.state == "ready" and health.chunks_embedded == health.chunks
        assert answers(service, second) == fresh
    finally:
        service.close()


WRITER = """
import sys
import numpy as np
from pathlib import Path
from services.storage.vector_cache import VectorCache

cache = VectorCache(Path(sys.argv[1]))
space = cache.space("writers' space", 8)
name = sys.argv[2]
for batch in range(60):
    texts = [f"{name} {batch} {i}" for i in range(50)] + [f"shared {batch} {i}" for i in range(50)]
    vectors = np.array([[len(t) + k for k in range(8)] for t in texts], dtype=np.float32)
    for attempt in range(50):  # a put the other writer kept waiting past the lock wait is dropped: put it again
        space = space if space is not None else cache.space("writers' space", 8)
        cache.put(space, texts, vectors)
        got = cache.get(space, 8, texts)
        assert all((got[i] == vectors[i]).all() for i in got), "a wrong vector"
        if len(got) == len(texts):
            break
    assert len(got) == len(texts), "a put never landed"
print("ok", cache.problem or "no problem")
"""


def test_two_processes_writing_the_cache_at_once_leave_it_whole(tmp_path):
    """Only the data dir's owner writes it, but SQLite's transactions keep it whole even if two did."""
    path = tmp_path / CACHE_FILE
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(REPO)))
               for name in ("first", "second")]
    outputs = [w.communicate(timeout=120)[0].strip() for w in writers]
    assert outputs == ["ok no problem", "ok no problem"]
    cache = VectorCache(path)
    try:
        space = cache.space("writers' space", 8)
        assert cache.count(space) == 60 * 150
        texts = [f"{name} {b} {i}" for name in ("first", "second", "shared") for b in range(60) for i in range(50)]
        got = cache.get(space, 8, texts)
        assert len(got) == len(texts)
        assert all(np.array_equal(got[i], np.arange(8, dtype=np.float32) + len(t)) for i, t in enumerate(texts))
    finally:
        cache.close()


def rewrite_rows(cache: Path, rows: int | None, forge: bool, among: set[str] | None = None) -> int:
    """Rewrite vectors inside the cache file behind its back (SQLite's own check stays "ok"): each chosen row
    gets the next chosen row's vector; `forge` also recomputes the checksums, as a writer with a bug would.
    `rows`: how many (None: all), of the rows of the texts `among` (None: any). Returns how many."""
    from services.storage.vector_cache import checksum, text_hash

    keys = None if among is None else {text_hash(t) for t in among}
    db = sqlite3.connect(cache)
    try:
        found = db.execute("SELECT id, space, text_hash, vector FROM vectors ORDER BY id").fetchall()
        chosen = [row for row in found if keys is None or row[2] in keys]
        chosen = chosen if rows is None else chosen[:rows]
        for (rowid, space, key, _), (_, _, _, other) in zip(chosen, chosen[1:] + chosen[:1]):
            sums = checksum(space, key, other) if forge else None
            db.execute("UPDATE vectors SET vector = ?, checksum = coalesce(?, checksum) WHERE id = ?",
                       (other, sums, rowid))
        db.commit()
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    return len(chosen)


def chunked(folder: Path):
    """The chunks an index of `folder` will hold (chunked here, nothing stored)."""
    from services.indexing.chunking import chunk_file
    from services.indexing.scanning import read_source, scan_workspace

    settings = Settings()
    for source in scan_workspace(folder, settings.max_file_bytes, settings.skip_machine_made).files:
        text, digest = read_source(source, settings.skip_machine_made)
        yield from chunk_file(source.path, text, source.language, digest, settings)


def test_rows_rewritten_in_the_cache_are_dropped_and_embedded_again(checkouts, fresh, tmp_path):
    """32 rows rewritten inside the cache (issue 31: a clone reused them and answered 0 results, health "up to
    date"): each row's checksum no longer matches, so the clone embeds those chunks itself, says it
    repaired the cache, and answers like a fresh index."""
    first, second = checkouts
    data = tmp_path / "data"
    service = LocalEngine(EXACT, data_dir=data)
    try:
        asyncio.run(service.index(first))
        service.vector_cache.close()
        shared = texts_of(data, first) & {chunk_text(c) for c in chunked(second)}
        assert rewrite_rows(data / CACHE_FILE, 32, forge=False, among=shared) == 32
        embedded = counting(service)
        report = asyncio.run(service.index(second))
        differing = texts_of(data, second) - texts_of(data, first)
        assert len(embedded) == len(differing) + 32 and report.vectors_reused == report.chunks_total - len(embedded)
        assert "repaired: the shared vector cache held 32 vectors that failed their check" in report.message
        assert answers(service, second) == fresh
        health = asyncio.run(service.health(second))  # health says so too, until a later run embeds again
        assert health.vector_cache.startswith("on; the last run that embedded found it held 32 vectors")
        assert asyncio.run(service.health(first)).vector_cache == "on"
    finally:
        service.close()


def test_index_full_never_trusts_the_cache_blindly(checkouts, tmp_path):
    """Every row rewritten with a valid checksum (a writer with a bug): `index --full` checks a sample of its
    hits against the encoder, finds them wrong, and embeds everything itself."""
    first, _ = checkouts
    data = tmp_path / "data"
    service = LocalEngine(EXACT, data_dir=data)
    try:
        asyncio.run(service.index(first))
        expected = answers(service, first)
        service.vector_cache.close()
        rewrite_rows(data / CACHE_FILE, None, forge=True)
        report = asyncio.run(service.index(first, full=True))
        assert report.vectors_reused == 0 and report.chunks_embedded == report.chunks_total
        assert "the shared vector cache disagreed with the encoder" in report.message
        assert answers(service, first) == expected
        assert "disagreed with the encoder (not used by this rebuild)" in asyncio.run(service.health(first)).vector_cache
    finally:
        service.close()
