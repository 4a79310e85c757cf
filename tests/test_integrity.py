"""An index that heals itself (issue 20): a lost, garbled or partial part of an index is a state in
health ("damaged: ..."), never "ready", and `index` (or `index --full`) repairs it, saying what it did.
Real parts throughout: a real index of the sample workspace, its real files garbled or deleted, the
real CLI, a real process killed with SIGKILL."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.cli import main as cli_main
from services.core.errors import IndexMissingError
from services.core.models import QueryOptions
from services.engine.service import LocalEngine
from services.storage.workspace_index import WorkspaceIndex, workspace_root
from tests.conftest import indexed_sample
from tests.helpers.stand_in_encoder import stand_in_settings

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]  # damage and repair are tested, not the model


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(workspace, data dir) of the sample workspace indexed once; each test works on a copy."""
    generator = indexed_sample(tmp_path_factory.mktemp("integrity"), stand_in_settings())
    service, workspace = next(generator)
    data = service.data_dir
    service.close()
    yield workspace, data
    generator.close()


@pytest.fixture
def copy(built, tmp_path):
    """A private copy of the built index: (workspace, data dir, the workspace's index folder)."""
    workspace, data = built
    target = tmp_path / "data"
    shutil.copytree(data, target)
    folder = next((target / "workspaces").iterdir())
    return workspace, target, folder


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def garble(path: Path) -> None:
    """Overwrite the start of a file with junk, as a bad sector or a half-written copy would."""
    data = bytearray(path.read_bytes())
    for i in range(0, min(len(data), 8192), 7):
        data[i] = (data[i] * 31 + 7) % 256
    path.write_bytes(bytes(data))


async def health_of(workspace, data):
    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        return await service.health(workspace)
    finally:
        service.close()


def test_a_lost_vector_store_is_damage_not_an_empty_index(copy, capsys):
    workspace, data, folder = copy
    shutil.rmtree(folder / "chroma")
    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        with pytest.raises(IndexMissingError, match="vector store of .* is missing. Run `knowledge-explorer index"):
            asyncio.run(service.query("parse the config", QueryOptions(str(workspace), strategy="none")))
        health = asyncio.run(service.health(workspace))
    finally:
        service.close()
    assert not (folder / "chroma").exists()  # the query did not make an empty store in its place
    assert health.state == "damaged" and health.needs_reindex
    assert health.message.startswith("damaged: the vector store is missing")

    code, out, _ = cli(capsys, "index", str(workspace), "--data-dir", str(data))
    assert code == 0 and "Rebuilt the index: the vector store is missing." in out
    repaired = asyncio.run(health_of(workspace, data))
    assert repaired.state == "ready" and repaired.chunks_embedded == repaired.chunks == health.chunks


async def test_chunks_without_vectors_are_counted_and_re_embedded(copy):
    workspace, data, folder = copy
    index = WorkspaceIndex(workspace_root(workspace), data)
    lost = index.catalog().chunks(path=sorted(index.catalog().files())[0])
    index.store().delete([c.id for c in lost])  # vectors lost, as the full disk of issue 20 lost them
    index.close()
    health = await health_of(workspace, data)
    assert health.state == "damaged" and health.message.startswith(f"damaged: {len(lost)} chunks without vectors")
    assert health.chunks_embedded == health.chunks - len(lost)

    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        report = await service.index(workspace)
        assert f"repaired: re-embedded {len(lost)} chunks that had no vector" in report.message
        assert report.chunks_embedded == len(lost)
        health = await service.health(workspace)
    finally:
        service.close()
    assert health.state == "ready" and health.chunks_embedded == health.chunks


@pytest.mark.parametrize("name, full", [
    ("manifest.sqlite", False), ("chroma.sqlite3", False), ("manifest.sqlite", True), ("chroma.sqlite3", True)])
def test_a_garbled_file_is_damage_that_index_repairs(copy, capsys, name, full):
    workspace, data, folder = copy
    garble(next(folder.rglob(name)))
    code, out, err = cli(capsys, "health", str(workspace), "--data-dir", str(data))
    assert code == 0 and "damaged: " in out and "Run `knowledge-explorer index` to repair it" in out
    code, out, err = cli(capsys, "query", str(workspace), "parse the config", "--data-dir", str(data))
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1  # an answer, or one line saying what to do

    code, out, err = cli(capsys, "index", str(workspace), "--data-dir", str(data), *(["--full"] if full else []))
    assert code == 0 and "Traceback" not in err, err
    assert "Rebuilt the index" in out or "Repaired: rebuilt the keyword index" in out
    health = asyncio.run(health_of(workspace, data))
    assert health.state == "ready" and health.chunks_embedded == health.chunks > 100
    code, out, _ = cli(capsys, "query", str(workspace), "parse the config", "--data-dir", str(data))
    assert code == 0 and " 1. " in out


def test_kill_9_inside_a_files_commit_leaves_the_keyword_index_agreeing_with_the_catalogue(copy, capsys):
    """SIGKILL an incremental run inside a new file's commit, after its chunks are written and before its
    keywords are (held there so the kill lands in it): the transaction holds both, so neither survives.
    The next open finds the index sound; the next run indexes the file and keyword search finds it."""
    workspace, data, folder = copy
    (workspace / "fresh_topic.py").write_text("def zanzibar_quokka_total(items):\n    return sum(items)\n")
    try:
        holder = textwrap.dedent(f"""
            import sys, threading
            from services.storage import keyword_index
            add = keyword_index.add
            def held(db, rows):
                rows = list(rows)
                if any("zanzibar" in words for _, words in rows):
                    print("committing", flush=True)
                    threading.Event().wait()
                return add(db, rows)
            keyword_index.add = held
            from app.cli import main
            sys.exit(main(["index", {str(workspace)!r}, "--data-dir", {str(data)!r}]))
        """)
        process = subprocess.Popen([sys.executable, "-c", holder], cwd=REPO, stdout=subprocess.PIPE, text=True,
                                   env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert process.stdout.readline().strip() == "committing"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)

        index = WorkspaceIndex(workspace_root(workspace), data)
        try:
            assert index.catalog().keywords.keyword_problem() == ""
            assert "fresh_topic.py" not in index.catalog().files()
            assert index.keywords.search("zanzibar quokka", 5) == []
        finally:
            index.close()
        assert asyncio.run(health_of(workspace, data)).state == "interrupted"  # sound: the run stopped, the new file not indexed yet
        code, out, _ = cli(capsys, "index", str(workspace), "--data-dir", str(data))
        assert code == 0 and "1 files indexed" in out
        code, out, _ = cli(capsys, "query", str(workspace), "zanzibar quokka", "--strategy", "metadata",
                           "--data-dir", str(data))
        assert code == 0 and "fresh_topic.py" in out
    finally:
        (workspace / "fresh_topic.py").unlink()


def test_a_keyword_index_out_of_step_with_the_catalogue_is_damage_that_index_refills(copy, capsys):
    """The keyword table emptied behind the catalogue's back (as a half-restored backup would leave it):
    health says how many chunks it lacks, and `index` refills it without re-embedding."""
    workspace, data, folder = copy
    db = sqlite3.connect(folder / "manifest.sqlite")
    db.execute("INSERT INTO chunk_words(chunk_words) VALUES ('delete-all')")
    db.commit()
    db.close()
    health = asyncio.run(health_of(workspace, data))
    assert health.state == "damaged" and f"{health.chunks} chunks missing from the keyword index" in health.message

    code, out, _ = cli(capsys, "index", str(workspace), "--data-dir", str(data))
    assert code == 0 and f"Repaired: rebuilt the keyword index ({health.chunks} chunks missing" in out
    assert asyncio.run(health_of(workspace, data)).state == "ready"
    code, out, _ = cli(capsys, "query", str(workspace), "save note", "--strategy", "hybrid", "--data-dir", str(data))
    assert code == 0 and " 1. " in out


def test_garbled_keyword_pages_are_damage_that_index_full_repairs(copy, capsys):
    """FTS5's pages garbled in place (row counts still agree): health finds it, and `index --full` refills the
    table instead of stopping on "database disk image is malformed"."""
    workspace, data, folder = copy
    db = sqlite3.connect(folder / "manifest.sqlite")
    db.execute("UPDATE chunk_words_data SET block = randomblob(length(block)) WHERE id > 10")
    db.commit()
    db.close()
    health = asyncio.run(health_of(workspace, data))
    assert health.state == "damaged" and "the keyword index cannot be read" in health.message

    code, out, err = cli(capsys, "index", str(workspace), "--full", "--data-dir", str(data))
    assert code == 0, err
    assert "Repaired: rebuilt the keyword index" in out
    assert asyncio.run(health_of(workspace, data)).state == "ready"
    code, out, _ = cli(capsys, "query", str(workspace), "save note", "--strategy", "hybrid", "--data-dir", str(data))
    assert code == 0 and " 1. " in out


def scramble(path: Path) -> None:
    data_bytes = bytearray(path.read_bytes())
    for i in range(0, min(len(data_bytes), 65536), 7):
        data_bytes[i] = (data_bytes[i] * 31 + 7) % 256
    path.write_bytes(bytes(data_bytes))


def all_ones(path: Path) -> None:
    path.write_bytes(b"\xff" * min(path.stat().st_size, 4096) + path.read_bytes()[4096:])


@pytest.mark.parametrize("name, damage", [("data_level0.bin", scramble), ("link_lists.bin", all_ones)])
def test_a_garbled_hnsw_graph_is_damage_not_a_crash(tmp_path, name, damage):
    """Chroma's native search trusts its HNSW files and dies with SIGSEGV on a garbled one: the files are
    checked before Chroma opens them, level 0 (data_level0.bin) and the upper levels (link_lists.bin).
    1,200 chunks, so that Chroma has written its graph to disk."""
    root, data = tmp_path / "ws", tmp_path / "data"
    root.mkdir()
    for i in range(150):
        (root / f"m{i}.py").write_text("".join(
            f"def f{i}_{j}(x):\n    '''Compute thing {i} {j}.'''\n    return x * {j} + {i}\n\n\n" for j in range(8)))
    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        asyncio.run(service.index(root))
    finally:
        service.close()
    graph = next(data.rglob(name))
    assert graph.stat().st_size > 0
    damage(graph)

    env = dict(os.environ, PYTHONPATH=str(REPO))
    for command in (["health"], ["query", "compute thing"]):  # in child processes: a regression would crash them
        done = subprocess.run([sys.executable, "-m", "app.cli", command[0], str(root), *command[1:],
                               "--data-dir", str(data)], cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr  # not -11 (SIGSEGV)
        assert "search index cannot be read" in done.stdout + done.stderr and "Traceback" not in done.stderr

    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        report = asyncio.run(service.index(root))
        reason = report.rebuilt_reason  # the store's own line, said once (issue 50: it was said twice, nested)
        assert "the vector store's search index cannot be read (" in reason and reason.count("cannot be read") == 1
        assert asyncio.run(service.health(root)).state == "ready"
        assert asyncio.run(service.query("compute thing 7", QueryOptions(str(root), strategy="none"))).results
    finally:
        service.close()


def test_a_store_error_is_said_once_in_the_damage_line():
    from services.indexing.integrity import Integrity

    said = Integrity(store_unreadable="the vector store cannot be read (Validation error: name). Run "
                                      "`knowledge-explorer index` to repair it (it rebuilds the store when it must).")
    line = said.message()
    assert line.count("cannot be read") == 1 and line.count("knowledge-explorer index") == 1, line
    assert "cannot be read (Validation error: name)" in line
