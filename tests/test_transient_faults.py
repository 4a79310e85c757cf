"""A passing fault never costs an index (issue 31): a store that cannot be read *now* (a full disk, too many
open files) is "unavailable", not "damaged"; `index` says so in one line, exits 1 and touches nothing; the
next run, once the fault has passed, finds every chunk there. Only proven damage is rebuilt, the old index
moved aside meanwhile, and a rebuild that fails puts it back.

Real means throughout: a real tmpfs filled up to its last 32 KB, a real open-file limit (setrlimit in the
child process that runs the CLI, as `ulimit -n` does), the real CLI in child processes (these tests run as
root, as the rest of the suite's tmpfs tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.engine.service import LocalEngine
from tests.conftest import copy_sample
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]  # faults, not the model, are tested
REPO = Path(__file__).resolve().parent.parent


def env() -> dict[str, str]:
    """The CLI's environment: this checkout's code (and the stand-in encoder, set by the module's marker)."""
    return dict(os.environ, PYTHONPATH=str(REPO))


def cli(*argv, files: int | None = None) -> subprocess.CompletedProcess:
    """The real CLI in a child process; `files`: its open-file limit (`ulimit -n`)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return subprocess.run([sys.executable, "-m", "app.cli", *argv], cwd=REPO, env=env(), capture_output=True,
                          text=True, timeout=300, preexec_fn=limit if files else None)


def unchanged(folder: Path, before: dict[str, bytes]) -> bool:
    """The same files, the manifest byte for byte (Chroma may rewrite its own file's header on open)."""
    now = snapshot(folder)
    return now.keys() == before.keys() and now["manifest.sqlite"] == before["manifest.sqlite"]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of an index folder, by relative path (the SQLite side files excepted: readers touch them)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(("-shm", "-wal", ".lock"))}


@pytest.fixture
def small_disk(tmp_path):
    """A real 24 MiB tmpfs; filled with `fill()`."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if made.returncode:
        pytest.fail(f"cannot mount a tmpfs here ({made.stderr.strip()}): this test needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, leave: int = 32 * 1024) -> Path:
    """Fill the file system with real bytes until `leave` bytes are free; returns the filler."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    size = stat.f_bavail * stat.f_frsize - leave
    with open(filler, "wb") as out:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            size -= out.write(chunk[:min(size, len(chunk))])
    return filler


def indexed(workspace: Path, data: Path) -> tuple[int, int]:
    """(files, chunks) of a complete index of `workspace`, built here."""
    service = LocalEngine(stand_in_settings(), data_dir=data)
    try:
        report = asyncio.run(service.index(workspace))
        health = asyncio.run(service.health(workspace))
    finally:
        service.close()
    assert health.state == "ready" and health.chunks == report.chunks_total > 100
    return health.files, health.chunks


def assert_whole(workspace: Path, data: Path, files: int, chunks: int) -> None:
    """Nothing lost, and the next run resumes: health up to date with every chunk, `index` has nothing to do."""
    done = cli("health", str(workspace), "--data-dir", str(data))
    assert done.returncode == 0 and f"{workspace}: up to date" in done.stdout, done.stdout + done.stderr
    assert f"{files} files, {chunks} chunks" in done.stdout
    done = cli("index", str(workspace), "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert f"0 files indexed, {files} unchanged, 0 removed; 0 chunks embedded, {chunks} in the index" in done.stdout
    done = cli("query", str(workspace), "parse the config", "--data-dir", str(data))
    assert done.returncode == 0 and " 1. " in done.stdout


def assert_unavailable(done_health, done_index) -> None:
    """`health` says "unavailable: …" (never "damaged"); `index` fails with one line and exit 1."""
    assert done_health.returncode == 0, done_health.stderr
    assert "unavailable: " in done_health.stdout and "damaged" not in done_health.stdout, done_health.stdout
    assert done_index.returncode == 1
    lines = [line for line in done_index.stderr.strip().splitlines() if not rust_panic(line)]
    assert len(lines) == 1 and lines[0].startswith("error: unavailable: "), done_index.stderr
    assert "nothing was changed" in lines[0] and "Traceback" not in done_index.stderr


def rust_panic(line: str) -> bool:
    """What Rust's panic hook writes to stderr when Chroma's engine cannot start (no file handle left);
    the process goes on and says what happened in its own line."""
    return line.startswith(("thread '", "failed to create", "called `Result::unwrap()`", "stack backtrace:",
                            "note: ")) or line.startswith("  ")


def test_a_nearly_full_disk_is_unavailable_not_damage_and_costs_nothing(small_disk, tmp_path):
    workspace, data = copy_sample(tmp_path / "workspace"), small_disk / "data"
    files, chunks = indexed(workspace, data)
    folder = next((data / "workspaces").iterdir())
    before = snapshot(folder)
    filler = fill(small_disk)

    health = cli("health", str(workspace), "--data-dir", str(data))
    index = cli("index", str(workspace), "--data-dir", str(data))
    assert_unavailable(health, index)
    assert unchanged(folder, before)  # touched nothing

    filler.unlink()  # the space is back: every chunk is there
    assert_whole(workspace, data, files, chunks)


def test_a_disk_with_no_byte_left_is_unavailable_not_an_error(small_disk, tmp_path):
    """Not even the owner file can be written (probe 6 of issue 20 after a run that filled the disk): health
    still answers "unavailable: …" with exit 0, the data dir's lock is held all the same."""
    workspace, data = copy_sample(tmp_path / "workspace"), small_disk / "data"
    files, chunks = indexed(workspace, data)
    filler = fill(small_disk, leave=0)
    health = cli("health", str(workspace), "--data-dir", str(data))
    assert health.returncode == 0 and "unavailable: " in health.stdout, health.stdout + health.stderr
    filler.unlink()
    assert_whole(workspace, data, files, chunks)


def test_too_many_open_files_is_unavailable_not_damage_and_costs_nothing(tmp_path):
    workspace, data = copy_sample(tmp_path / "workspace"), tmp_path / "data"
    files, chunks = indexed(workspace, data)
    folder = next((data / "workspaces").iterdir())
    before = snapshot(folder)

    # 20 handles: well inside what these commands need on any machine (here health fails from 25 down,
    # index from 28; at 24, another machine's index got as far as the workspace scan)
    health = cli("health", str(workspace), "--data-dir", str(data), files=20)
    index = cli("index", str(workspace), "--data-dir", str(data), files=20)
    assert_unavailable(health, index)
    assert unchanged(folder, before)

    assert_whole(workspace, data, files, chunks)  # the limit lifted


def garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, min(len(data), 8192), 7):
        data[i] = (data[i] * 31 + 7) % 256
    path.write_bytes(bytes(data))


def test_a_repair_that_fails_leaves_what_was_there_and_a_later_one_completes(small_disk, tmp_path):
    """Proven damage (a manifest whose header is not SQLite's) is rebuilt with the old index moved aside:
    the disk too full for the rebuild, the old files are put back as they were; with room, the rebuild
    completes and only then is the old index removed."""
    workspace, data = copy_sample(tmp_path / "workspace"), small_disk / "data"
    files, chunks = indexed(workspace, data)
    folder = next((data / "workspaces").iterdir())
    garble(folder / "manifest.sqlite")
    before = snapshot(folder)
    health = cli("health", str(workspace), "--data-dir", str(data))
    assert "damaged: the manifest cannot be read (file is not a database)" in health.stdout, health.stdout

    filler = fill(small_disk)
    index = cli("index", str(workspace), "--data-dir", str(data))
    assert index.returncode == 1 and len(index.stderr.strip().splitlines()) == 1, index.stderr
    assert "the old index is back as it was" in index.stderr
    after = snapshot(folder)
    assert after.pop("last-error.txt") != before.pop("last-error.txt")  # why it stopped, for health
    assert after == before  # the damaged index is back in place, byte for byte
    assert not (data / "aside").exists() or not any((data / "aside").iterdir())

    filler.unlink()
    index = cli("index", str(workspace), "--data-dir", str(data))
    assert index.returncode == 0 and "Rebuilt the index" in index.stdout, index.stdout + index.stderr
    assert not any((data / "aside").iterdir())  # complete and verified: the old index is gone
    assert_whole(workspace, data, files, chunks)


def test_proven_damage_is_moved_aside_while_the_rebuild_runs(tmp_path):
    """A rebuild stopped part-way (here: killed) keeps the old index aside; the next run completes the
    rebuild, and only then removes it."""
    workspace, data = copy_sample(tmp_path / "workspace"), tmp_path / "data"
    files, chunks = indexed(workspace, data)
    folder = next((data / "workspaces").iterdir())
    garble(next(folder.rglob("chroma.sqlite3")))
    old = snapshot(folder)
    holder = (f"import os\nfrom services.indexing import vector_step\n"
              f"def stop(self): os._exit(3)\n"  # the process dies in the middle of the rebuild (at step 2)
              f"vector_step.VectorStep.embed_awaiting = stop\n"
              f"from app.cli import main\nmain(['index', {str(workspace)!r}, '--data-dir', {str(data)!r}])\n")
    subprocess.run([sys.executable, "-c", holder], cwd=REPO, env=env(), capture_output=True, timeout=300)
    aside = data / "aside" / folder.name
    assert snapshot(aside) == old  # kept aside, whole
    index = cli("index", str(workspace), "--data-dir", str(data))
    assert index.returncode == 0, index.stderr
    assert not aside.exists()
    assert_whole(workspace, data, files, chunks)
    shutil.rmtree(data / "aside", ignore_errors=True)


HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()  # holds the lock until the test closes its stdin
"""


@contextlib.contextmanager
def locked(path: Path):
    """Another process holding a write lock on the SQLite file `path` while the block runs; yields its pid."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder.pid
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


@pytest.mark.parametrize("name", ["chroma/chroma.sqlite3", "manifest.sqlite"])
def test_a_lock_another_process_holds_is_busy_naming_it_not_a_hang(tmp_path, name):
    """Another process keeps a write lock on a store's SQLite file: `health` and `index` answer "busy: …
    (held by pid N)" and change nothing, instead of waiting on it (the subprocess timeout is the bound);
    once it lets go, everything is there."""
    workspace, data = copy_sample(tmp_path / "workspace"), tmp_path / "data"
    files, chunks = indexed(workspace, data)
    folder = next((data / "workspaces").iterdir())
    with locked(folder / name) as pid:
        health = cli("health", str(workspace), "--data-dir", str(data))
        index = cli("index", str(workspace), "--data-dir", str(data))
    held = f"(held by pid {pid})"
    assert health.returncode == 0 and "busy: " in health.stdout and held in health.stdout, health.stdout
    assert "damaged" not in health.stdout
    lines = index.stderr.strip().splitlines()
    assert index.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: busy: "), index.stderr
    assert held in lines[0]
    assert_whole(workspace, data, files, chunks)


def git(folder: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@e", *argv], check=True,
                   capture_output=True)


def test_a_locked_history_store_costs_neither_the_run_nor_the_history(tmp_path):
    """The history store (history.sqlite) held by another process while a commit lands: the index run still
    indexes the new file, answers stay whole, `health` answers; once the lock is gone, the next run brings
    the history up to the new commit (nothing lost, the next run resumes)."""
    workspace, data = copy_sample(tmp_path / "workspace"), tmp_path / "data"
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "first")
    files, chunks = indexed(workspace, data)
    before = cli("health", str(workspace), "--data-dir", str(data)).stdout
    assert "history: 1 commits" in before or "history: 1 commit" in before, before
    (workspace / "notes" / "archive.py").write_text("def archive_notes(folder):\n    return sorted(folder)\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "archive old notes")
    folder = next((data / "workspaces").iterdir())
    with locked(folder / "history.sqlite"):
        index = cli("index", str(workspace), "--data-dir", str(data))
        health = cli("health", str(workspace), "--data-dir", str(data))
    assert index.returncode == 0 and "1 files indexed" in index.stdout, index.stdout + index.stderr
    assert health.returncode == 0 and f"{files + 1} files" in health.stdout, health.stdout + health.stderr
    again = cli("index", str(workspace), "--data-dir", str(data))
    assert again.returncode == 0, again.stderr
    after = cli("health", str(workspace), "--data-dir", str(data)).stdout
    assert "history: 2 commits" in after, after
    found = cli("query", str(workspace), "archive_notes", "--data-dir", str(data))
    first = next(line for line in found.stdout.splitlines() if line.strip().startswith("1."))
    assert found.returncode == 0 and "notes/archive.py" in first, found.stdout
