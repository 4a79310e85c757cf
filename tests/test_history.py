"""A workspace's git history through the real engine: real repositories made with the git CLI, indexed with
the bundled model, read back through health and WorkspaceIndex.history()."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from services.engine.service import LocalEngine
from services.indexing.history import CommitIndex, read_history
from services.storage.history_store import HISTORY_FILE
from services.storage.workspace_index import WorkspaceIndex, workspace_root

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

DAY = 86400
START = 1_700_000_000  # 2023-11-14


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """One service for the module: the model loads once; each test indexes its own folders."""
    service = LocalEngine(data_dir=tmp_path_factory.mktemp("history-data"))
    yield service
    service.close()


class Repo:
    """A git repository driven through the git CLI, with commit times one day apart."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.day = 0
        folder.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        when = f"@{START + self.day * DAY} +0000"
        env = dict(os.environ, GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="T",
                   GIT_COMMITTER_EMAIL="t@example.org", GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
        return subprocess.run(["git", *args], cwd=self.folder, env=env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def commit(self, message: str, **files: str) -> str:
        """Write `files` (name with '__' for '/': a__b.py is a/b.py) and commit them."""
        for name, text in files.items():
            path = self.folder / name.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git("add", "-A")
        self.day += 1
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")


def index_of(engine: LocalEngine, folder: Path) -> WorkspaceIndex:
    return WorkspaceIndex(workspace_root(folder), engine.data_dir)


def stored_rows(engine: LocalEngine, folder: Path) -> list[tuple[int, str]]:
    """(seq, sha) of every stored commit, read straight from the history file."""
    db = sqlite3.connect(index_of(engine, folder).folder / HISTORY_FILE)
    try:
        return db.execute("SELECT seq, sha FROM commits ORDER BY seq").fetchall()
    finally:
        db.close()


@pytest.fixture
def repo(tmp_path) -> Repo:
    repo = Repo(tmp_path / "project")
    repo.commit("Add the tokenizer for the query parser", **{"src__parser.py": "def tokenize(text):\n    return text.split()\n"})
    repo.commit("Fix crash in latex rendering of matrices", **{"src__latex.py": "def render(m):\n    return str(m)\n"})
    repo.git("mv", "src/parser.py", "src/query_parser.py")
    repo.commit("Rename parser module")
    return repo


async def test_commits_are_indexed_with_renames_followed(engine, repo):
    await engine.index(repo.folder)
    health = await engine.health(repo.folder)
    assert health.history == "3 commits up to 2023-11-17"
    assert (health.history_state, health.history_commits, health.history_until) == ("full", 3, "2023-11-17")
    history = index_of(engine, repo.folder).history()
    (commit, _), = history.search("tokenizer")
    assert commit.message == "Add the tokenizer for the query parser"
    assert commit.files == ("src/query_parser.py",)  # the file's name today, not the one it was committed under
    assert history.first_seen["src/query_parser.py"] == START + DAY


async def test_new_commits_are_added_and_a_later_rename_renames_older_commits(engine, repo):
    await engine.index(repo.folder)
    index = index_of(engine, repo.folder)
    first = index.history()
    before = stored_rows(engine, repo.folder)
    repo.git("mv", "src/latex.py", "src/printing.py")
    repo.commit("Move latex printing beside the other printers")
    await engine.index(repo.folder)
    after = stored_rows(engine, repo.folder)
    assert after[:3] == before and len(after) == 4  # the stored commits stay; only the new one is read
    history = index.history()
    assert history is not first and len(history.commits) == 4  # rebuilt because the commits changed
    (commit, _), = history.search("crash matrices")
    assert commit.files == ("src/printing.py",)
    assert index.history() is history  # and kept while they do not
    assert (await engine.health(repo.folder)).history == "4 commits up to 2023-11-18"


async def test_a_rewritten_history_is_read_again(engine, repo):
    await engine.index(repo.folder)
    old_head = repo.git("rev-parse", "HEAD")
    repo.git("commit", "-q", "--amend", "-m", "Rename the parser module to query_parser")
    await engine.index(repo.folder)
    history = index_of(engine, repo.folder).history()
    assert [c.message for c in history.commits][0] == "Rename the parser module to query_parser"
    assert old_head not in {c.sha for c in history.commits} and len(history.commits) == 3

    repo.git("reset", "-q", "--hard", "HEAD~2")  # back to the first commit
    await engine.index(repo.folder)
    history = index_of(engine, repo.folder).history()
    assert [c.message for c in history.commits] == ["Add the tokenizer for the query parser"]
    assert (await engine.health(repo.folder)).history == "1 commit up to 2023-11-15"


async def test_a_shallow_clone_is_indexed_as_far_as_it_goes(engine, repo, tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{repo.folder}", str(clone)], check=True)
    await engine.index(clone)
    health = await engine.health(clone)
    assert health.history == "shallow clone: 2 commits up to 2023-11-17" and health.history_state == "shallow"
    assert [c.message for c in index_of(engine, clone).history().commits] == [
        "Rename parser module", "Fix crash in latex rendering of matrices"]


async def test_a_folder_that_is_not_a_repository_has_no_history(engine, tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nNothing under version control.\n")
    report = await engine.index(folder)
    assert report.files_indexed == 1
    health = await engine.health(folder)
    assert health.history == "none (not a git repository)" and health.history_state == "none"
    assert index_of(engine, folder).history() is None


async def test_without_git_the_index_run_succeeds_and_says_why(engine, repo, monkeypatch, tmp_path):
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # a machine without git: nothing named git on PATH
    report = await engine.index(repo.folder)
    assert report.files_indexed == 2
    health = await engine.health(repo.folder)
    assert health.history == "none (git not found)" and health.history_state == "no-git"


async def test_a_broken_repository_keeps_what_was_read_and_says_why(engine, repo):
    await engine.index(repo.folder)
    repo.commit("Add matrix printing", **{"src__matrix.py": "def show(m):\n    return m\n"})
    tree = repo.git("rev-parse", "HEAD^{tree}")
    (repo.folder / ".git" / "objects" / tree[:2] / tree[2:]).unlink()  # a lost object: git log fails
    report = await engine.index(repo.folder)
    assert report.files_indexed == 1  # the index run itself goes on
    health = await engine.health(repo.folder)
    assert health.history_state == "error" and health.history_commits == 3
    assert health.history.startswith("3 commits up to 2023-11-17 (could not be updated: ")
    assert len(index_of(engine, repo.folder).history().commits) == 3


async def test_a_workspace_inside_a_repository_gets_its_own_folder_s_commits(engine, repo):
    repo.commit("Document the parser", **{"docs__parser.md": "# Parser\n\nHow queries are tokenized.\n"})
    await engine.index(repo.folder / "src")
    history = index_of(engine, repo.folder / "src").history()
    assert [c.message for c in history.commits] == [
        "Rename parser module", "Fix crash in latex rendering of matrices", "Add the tokenizer for the query parser"]
    assert history.commits[-1].files == ("query_parser.py",)  # relative to the workspace


async def test_the_watcher_s_runs_read_new_commits(engine, repo):
    await engine.index(repo.folder)
    index = index_of(engine, repo.folder)
    await engine.watch(repo.folder, auto_reindex=True)
    try:
        repo.commit("Cache compiled queries", **{"src__cache.py": "CACHE = {}\n"})
        (repo.folder / "notes.txt").write_text("after the commit")  # a change a later run sees, commit made
        for _ in range(600):  # wait (up to a minute) for a watcher's run to store the commit
            if index.history_state().commits == 4:
                break
            await asyncio.sleep(0.1)
        assert index.history().search("compiled queries")[0][0].message == "Cache compiled queries"
    finally:
        await engine.unwatch(repo.folder)


def test_a_cut_off_ignores_later_commits_even_for_word_statistics(repo):
    repo.commit("Fix latex printing of matrices again", **{"src__latex.py": "def render(m):\n    return repr(m)\n"})
    commits = read_history(repo.folder)
    cut = commits[1].time + 1  # the newest commit is at the cut-off's other side
    everything, earlier = CommitIndex(commits), CommitIndex(commits[1:])
    for question in ("latex matrices", "parser tokenizer", "printing"):
        tokens = question.split()
        cut_scores = everything.scores(tokens, before=cut)
        assert cut_scores[0] == 0  # the later commit does not match
        np.testing.assert_allclose(cut_scores[1:], earlier.scores(tokens), rtol=1e-5)  # nor teach its IDF
    assert everything.search("printing", before=cut) == []  # a word only the later commit has


async def test_health_shows_the_history_in_the_cli_and_the_window(engine, repo, qtbot):
    from app.render import health_text
    from ui.health_panel import HealthPanel

    await engine.index(repo.folder)
    health = await engine.health(repo.folder)
    assert "\n  history: 3 commits up to 2023-11-17" in health_text(health)
    panel = HealthPanel()
    qtbot.addWidget(panel)
    panel.set_health(health)
    assert panel.values["History"].text() == "3 commits up to 2023-11-17"
