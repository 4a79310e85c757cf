"""Useful in the first minute (issue #51): an index run commits every file's names, paths, keywords, code graph
and history first (step 1), then makes the vectors (step 2). During step 2 go to symbol / file, references
and keyword answers cover the whole workspace; a question's answer says what it stands on in every face; a
run killed with SIGKILL in step 2 keeps step 1, and the next run makes only the vectors left, source first.

Real parts: LocalEngine, Chroma, the catalogue, a real REST server on 127.0.0.1 and an MCP client, a real
`knowledge-explorer index` process, a real git repository. Step 2 is held with a gate on the encoder (the real
encoder runs, only later): the only way to look at the index mid-run without timing luck."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from app.render import files_text, query_text
from services.encoders.embedder import Embedder
from services.indexing.vector_step import WINDOW_CHUNKS, windows
from services.indexing.vector_order import vector_order
from services.engine.service import LocalEngine
from services.core.errors import WorkspaceError
from services.core.models import QueryOptions
from services.storage.workspace_index import WorkspaceIndex, workspace_root
from tests.conftest import copy_sample
from tests.helpers.engine_server import app_in_thread
from tests.helpers.stand_in_encoder import stand_in_model, stand_in_settings
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]
REPO = Path(__file__).resolve().parent.parent
NOTE = "ranked by keywords and names where vectors are missing"


@pytest.fixture
def held_embedding(monkeypatch):
    """Embedding waits at its first call until released."""
    reached, release = threading.Event(), threading.Event()
    original = Embedder.encode_chunks

    def gated(self, chunks):
        reached.set()
        release.wait(300)
        return original(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", gated)
    yield reached, release
    release.set()


def options(workspace, **kw) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), min_relevance=0.0, use_cache=False, **{"strategy": "none", **kw})


async def test_names_files_references_and_keywords_answer_while_vectors_are_made(data_dir, workspace,
                                                                                 held_embedding):
    reached, release = held_embedding
    service = LocalEngine(stand_in_settings(), data_dir=data_dir)
    try:
        run = asyncio.create_task(service.index(workspace))
        await wait_for(reached.is_set, 300, "step 2 to start")

        symbol = await service.goto_symbols("NoteStore", workspace)
        assert symbol.hits and symbol.hits[0].path == "notes/store.py" and not symbol.message
        file = await service.goto_files("store.py", workspace)
        assert "notes/store.py" in [h.path for h in file.hits] and not file.message
        used_by = await service.references("NoteStore", workspace)
        assert used_by.total > 0 and used_by.files
        health = await service.health(workspace)
        assert health.files == 24 and health.chunks == 121 and health.chunks_embedded == 0

        for strategy in ("auto", "none", "hybrid"):
            answer = await service.query("save a note to the store", options(workspace, strategy=strategy))
            assert answer.results, strategy  # by keywords: no chunk has a vector yet
            assert answer.warning == f"vectors for 0 of 121 chunks (0 %): {NOTE}", strategy
            assert answer.chunks_with_vectors == 0 and NOTE in query_text(answer)  # the CLI's text
        files = await service.find_files("save a note to the store", options(workspace, strategy="auto"))
        assert files.files and files.warning == answer.warning and NOTE in files_text(files)
        named = await service.query("NoteStore", options(workspace, strategy="auto"))
        assert not named.warning  # a name is answered whole after step 1

        release.set()
        report = await run
        assert report.chunks_embedded == report.chunks_total == 121
        after = await service.query("save a note to the store", options(workspace))
        assert not after.warning and after.chunks_with_vectors is None
        assert any(r.original_score is not None for r in after.results)
    finally:
        release.set()
        service.close()


async def test_go_to_and_references_say_what_they_miss_while_step_1_commits(data_dir, workspace, monkeypatch):
    """Step 1 held after its first file: go to and references answer from what is committed and say how much
    of the run's files is not in the answer yet (never a bare "No symbol named"); once step 1 is over, nothing."""
    from services.storage.catalog import Catalog

    committed, release = threading.Event(), threading.Event()
    commit = Catalog.commit_file

    def held(self, *args, **kwargs):
        if committed.is_set():
            release.wait(300)
        result = commit(self, *args, **kwargs)
        committed.set()
        return result

    monkeypatch.setattr(Catalog, "commit_file", held)
    service = LocalEngine(stand_in_settings(), data_dir=data_dir)
    try:
        run = asyncio.create_task(service.index(workspace))
        await wait_for(committed.is_set, 300, "step 1's first commit")
        note = "An index run is committing files: 1 of 24 so far; the rest are not in this answer yet."
        missing = await service.goto_symbols("Frobnicate", workspace)
        assert not missing.hits and missing.message == f"No symbol named 'Frobnicate'. {note}"
        assert (await service.goto_files("store.py", workspace)).message.endswith(note)
        assert (await service.references("NoteStore", workspace)).message.endswith(note)
        release.set()
        await run
        after = await service.goto_symbols("Frobnicate", workspace)
        assert after.message == "No symbol named 'Frobnicate'."
        assert not (await service.goto_symbols("NoteStore", workspace)).message
    finally:
        release.set()
        service.close()


async def test_every_face_says_what_an_answer_stands_on(tmp_path, workspace, held_embedding):
    """REST and MCP on a real server while step 2 is held (the CLI's --json is the REST JSON: test_faces)."""
    from mcp import Client

    from app.server import build_app

    reached, release = held_embedding
    data = tmp_path / "data"
    service = LocalEngine(stand_in_settings(), data_dir=data, kind="server")
    app = build_app(service, data, warm=False, allowed_roots=[str(workspace.parent)])
    try:
        with app_in_thread(app) as url:
            async with httpx.AsyncClient(base_url=url, timeout=300) as client:
                key = (await client.post("/v1/workspaces", json={"path": str(workspace)})).json()["id"]
                assert (await client.post(f"/v1/workspaces/{key}/index", json={})).status_code == 202
                await wait_for(reached.is_set, 300, "step 2 to start")
                rest = (await client.post(f"/v1/workspaces/{key}/query",
                                          json={"question": "save a note to the store", "min_relevance": 0})).json()
                assert rest["results"] and rest["chunks_with_vectors"] == 0
                assert rest["warning"] == f"vectors for 0 of 121 chunks (0 %): {NOTE}"
            async with Client(url + "/mcp", read_timeout_seconds=300) as mcp:
                found = (await mcp.call_tool("search", {"question": "save a note to the store", "workspace": key,
                                                        "top_k": 4})).structured_content
                assert found["warning"] == rest["warning"]
                symbol = (await mcp.call_tool("find_symbol", {"name": "NoteStore", "workspace": key})).structured_content
                assert symbol["hits"] and symbol["hits"][0]["path"] == "notes/store.py"
            release.set()
    finally:
        release.set()
        service.close()


def git_repository(root: Path) -> Path:
    """A small real repository: source, tests and docs, the source changed most by its history."""
    root.mkdir()
    files = {f"docs/page{i}.md": f"# Page {i}\n\nHow to use part {i}.\n" for i in range(6)}
    files |= {f"tests/test_part{i}.py": f"def test_part{i}():\n    assert part{i}() == {i}\n" for i in range(6)}
    files |= {f"src/app/part{i}.py": "".join(f"def part{i}_{j}():\n    return {j}\n\n\n" for j in range(4))
              for i in range(12)}
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "first"], check=True)
    for n in range(3):  # part5 is the most changed file
        with (root / "src/app/part5.py").open("a") as handle:
            handle.write(f"# change {n}\n")
        subprocess.run(git + ["commit", "-qam", f"fix part5 {n}"], check=True)
    return root


HOLDER = textwrap.dedent("""
    import sys, threading
    from services.storage.catalog_awaiting import Awaiting
    mark, windows = Awaiting.vectors_stored, []

    def held_after_one(self, ids):  # the first window's vectors are stored and marked; the second's never are
        windows.append(len(ids))
        if len(windows) == 2:
            print("step 2 held", flush=True)
            threading.Event().wait()
        return mark(self, ids)

    Awaiting.vectors_stored = held_after_one
    from app.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_sigkill_in_step_2_keeps_step_1_and_the_next_run_makes_only_the_vectors_left(tmp_path):
    root, data = git_repository(tmp_path / "repo"), tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    index = ["index", str(root), "--data-dir", str(data), "--model", str(stand_in_model()), "--backend", "torch"]
    process = subprocess.Popen([sys.executable, "-c", HOLDER, *index], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout.readline().strip() == "step 2 held"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        process.kill()

    service = LocalEngine(stand_in_settings(embedding_backend="torch"), data_dir=data)
    try:
        health = asyncio.run(service.health(root))
        assert health.state == "interrupted" and health.files == 24 and health.chunks == 61
        assert health.history_commits == 4  # the history is step 1's too
        assert 0 < health.chunks_embedded < health.chunks
        assert asyncio.run(service.goto_symbols("part3_2", root)).hits[0].path == "src/app/part3.py"
        stored = stored_paths(root, data)  # the first window's files (32 chunks): source first, most changed first
        assert stored and all(path.startswith("src/app/") for path in stored)
        assert "src/app/part5.py" in stored and "src/app/part9.py" not in stored
    finally:
        service.close()

    rerun = subprocess.run([sys.executable, "-m", "app.cli", *index], cwd=REPO, env=env, capture_output=True,
                           text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    left = 61 - health.chunks_embedded
    assert f"0 files indexed, 24 unchanged, 0 removed; {left} chunks embedded, 61 in the index" in rerun.stdout
    assert stored_paths(root, data) == {p for p in WorkspaceIndex(workspace_root(root), data).paths()}


def stored_paths(root: Path, data: Path) -> set[str]:
    """The files whose chunks all have their vectors stored."""
    index = WorkspaceIndex(workspace_root(root), data)
    try:
        return set(index.catalog().files()) - set(index.catalog().awaiting.awaiting_paths())
    finally:
        index.close()


async def test_a_run_whose_folder_goes_away_stops_and_keeps_what_it_committed(data_dir, tmp_path, held_embedding):
    """Issue 50: a folder moved away during a run stopped nothing (it ran on and ended "done")."""
    reached, release = held_embedding
    workspace = copy_sample(tmp_path / "workspace")
    service = LocalEngine(stand_in_settings(), data_dir=data_dir)
    try:
        run = asyncio.create_task(service.index(workspace))
        await wait_for(reached.is_set, 300, "step 2 to start")
        workspace.rename(tmp_path / "moved")
        release.set()
        with pytest.raises(WorkspaceError, match="is missing \\(moved, renamed or deleted\\).*index run stopped"):
            await run
        (tmp_path / "moved").rename(workspace)
        assert (await service.goto_symbols("NoteStore", workspace)).hits  # step 1 kept
        report = await service.index(workspace)  # the next run makes the vectors left
        assert report.files_indexed == 0 and report.chunks_embedded > 0
        assert (await service.health(workspace)).state == "ready"
    finally:
        service.close()


async def test_a_file_a_question_finds_while_its_vectors_wait_gets_them_next(data_dir, workspace, monkeypatch):
    """Issue 51: a file the user asks about jumps the queue. The first window is held; a question answered by
    keywords from docs/architecture.md (docs come last in the useful order) makes it the next file embedded."""
    reached, release = threading.Event(), threading.Event()
    calls: list[list[str]] = []  # each encoder call's chunks, by path
    original = Embedder.encode_chunks

    def recorded(self, chunks):
        calls.append([chunk.path for chunk in chunks])
        reached.set()
        release.wait(300)
        return original(self, chunks)

    monkeypatch.setattr(Embedder, "encode_chunks", recorded)
    service = LocalEngine(stand_in_settings(), data_dir=data_dir)
    try:
        run = asyncio.create_task(service.index(workspace))
        await wait_for(reached.is_set, 300, "step 2 to start")
        assert not any("docs/architecture.md" in paths for paths in calls)
        catalog = WorkspaceIndex(workspace_root(workspace), data_dir).catalog()
        counts = catalog.awaiting.awaiting_paths()
        planned = list(windows(vector_order(list(counts), []), counts, WINDOW_CHUNKS))
        answer = await service.query("architecture overview of the components", options(workspace, strategy="none"))
        assert "docs/architecture.md" in [r.chunk.path for r in answer.results]
        release.set()
        await run
        assert "docs/architecture.md" in planned[-1]  # unasked, it would come in the last window
        assert "docs/architecture.md" not in calls[-1], [len(c) for c in calls]  # the last window's one call
    finally:
        release.set()
        service.close()


async def test_a_question_whose_chunks_all_have_vectors_is_answered_as_when_the_run_is_done(data_dir, workspace,
                                                                                           held_embedding):
    """New files wait for their vectors; a question none of their words match ranks its chunks as it will once
    the run is done, and its best file with the vector ranking's opinion at full weight (the vector ranking
    counts as far as the question's own chunks have vectors, not by the repository's share), and says what it
    stands on. (Its files below the best may move a little once the new chunks join the 100-chunk pool.)"""
    reached, release = held_embedding
    release.set()
    service = LocalEngine(stand_in_settings(), data_dir=data_dir)
    try:
        await service.index(workspace)
        for i in range(10):
            (workspace / f"zoo_{i}.py").write_text("".join(
                f"def zebra_{i}_{k}(herd):\n    return [giraffe for giraffe in herd if giraffe.tall]\n\n\n"
                for k in range(4)))
        reached.clear()
        release.clear()
        run = asyncio.create_task(service.index(workspace))
        await wait_for(reached.is_set, 300, "step 2 of the second run to start")
        question = "save a note to the store"
        during = await service.query(question, options(workspace))
        files_during = await service.find_files(question, options(workspace, strategy="auto"))
        release.set()
        await run

        assert during.warning.startswith("vectors for 121 of 161 chunks (75 %)")
        done = await service.query(question, options(workspace))
        files_done = await service.find_files(question, options(workspace, strategy="auto"))
        assert not done.warning
        assert [r.chunk.id for r in during.results] == [r.chunk.id for r in done.results]
        # the file answer keeps the vector ranking's second opinion, at full weight (its "why" row says so)
        vector_rows = [next(x for x in f.signals if x.name == "vector") for f in files_during.files[:1]]
        assert vector_rows == [next(x for x in f.signals if x.name == "vector") for f in files_done.files[:1]]
    finally:
        release.set()
        service.close()
