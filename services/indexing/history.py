"""Reading a workspace's git history with the git CLI, and keeping its stored copy fresh.

`read_history(folder)` streams one `git log --no-merges -M --name-status -z` call and returns the commits
newest first, each with the files it touched under their CURRENT names. `update_history(folder, store)`
brings a workspace's HistoryStore (services/storage/history_store.py) up to HEAD: only the commits new
since the recorded head (`git log <old>..HEAD`), or the whole history again when it was rewritten (the
recorded head is gone or no longer an ancestor of HEAD) or a shallow clone was deepened. A workspace in a
subfolder of a repository gets the commits that touched that subfolder, with paths relative to it.

Storing and searching (Commit, CommitIndex) live in services.storage.history_store, re-exported here.
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from pathlib import Path

from services.storage.history_store import (  # noqa: F401  (re-exported: benchmarks, file_ranking)
    EMPTY, FAILED, FULL, NO_GIT, NOT_A_REPOSITORY, SHALLOW, Commit, CommitIndex, HistoryState, HistoryStore,
    RecordedCommit, follow_renames, message_tokens, parse_changes,
)

_RS = "\x1e"  # record separator written before each commit
_FORMAT = "--format=%x1e%H%x00%ct%x00%B%x00"
TIMEOUT = 30  # seconds, for git's quick questions

log = logging.getLogger(__name__)


class HistoryError(Exception):
    """git failed; the message says why, in a few words."""


@dataclass(frozen=True)
class Repository:
    """What git says about a folder: FULL or SHALLOW (else HistoryError), HEAD ('' before the first
    commit) and the folder's path inside the repository ('' at its top)."""

    state: str
    head: str
    prefix: str


def _git(folder: str | Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=TIMEOUT)
    except FileNotFoundError as error:
        raise HistoryError("git not found") from error
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HistoryError(f"git failed: {error}") from error


def repository(folder: str | Path) -> Repository:
    """Raises HistoryError with the state NOT_A_REPOSITORY/NO_GIT/FAILED as its second argument."""
    try:
        out = _git(folder, "rev-parse", "--is-shallow-repository", "--show-prefix")
    except HistoryError as error:
        raise HistoryError(str(error), NO_GIT if str(error) == "git not found" else FAILED) from error
    if out.returncode != 0:
        if "not a git repository" in out.stderr:
            raise HistoryError("not a git repository", NOT_A_REPOSITORY)
        raise HistoryError(_first_line(out.stderr) or "git rev-parse failed", FAILED)
    shallow, prefix = (out.stdout.split("\n") + ["", ""])[:2]
    head = _git(folder, "rev-parse", "--verify", "-q", "HEAD^{commit}").stdout.strip()
    return Repository(SHALLOW if shallow.strip() == "true" else FULL, head, prefix.strip())


def repo_state(folder: str | Path) -> str:
    """'full', 'shallow' (history is cut: older commits are missing) or 'none' (not a git repository)."""
    try:
        return repository(folder).state
    except HistoryError:
        return "none"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _records(folder: str | Path, since: str = "", subfolder: bool = False, max_commits: int | None = None):
    """Yield each commit's raw record (text between record separators), streamed from git."""
    cmd = ["git", "-C", str(folder), "-c", "core.quotepath=off", "log", "--no-merges", "-M",
           "--name-status", "-z", _FORMAT]
    if max_commits:
        cmd.append(f"--max-count={max_commits}")
    cmd.append(f"{since}..HEAD" if since else "HEAD")
    if subfolder:  # only this folder's commits, paths relative to it
        cmd += ["--relative", "--", "."]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError as error:
        raise HistoryError("git not found", NO_GIT) from error
    with proc:
        buffer = ""
        while chunk := proc.stdout.read(1 << 20):
            buffer += chunk.decode("utf-8", "replace")
            *done, buffer = buffer.split(_RS)
            yield from (r for r in done if r)
        if buffer:
            yield buffer
        failure = proc.stderr.read().decode("utf-8", "replace")
    if proc.wait() != 0:
        raise HistoryError(_first_line(failure) or f"git log exited with {proc.returncode}", FAILED)


def _parse(record: str) -> RecordedCommit:
    sha, ctime, message, rest = record.split("\0", 3)
    return RecordedCommit(sha, int(ctime), message.strip(), tuple(parse_changes(rest.lstrip("\0\n").split("\0"))))


def read_recorded(folder: str | Path, since: str = "", subfolder: bool = False,
                  max_commits: int | None = None) -> list[RecordedCommit]:
    """Non-merge commits newest first, as git reports them (since `since`, exclusive, when given)."""
    return [_parse(record) for record in _records(folder, since, subfolder, max_commits)]


def read_history(folder: str | Path, max_commits: int | None = None) -> list[Commit]:
    """Non-merge commits, newest first, with touched files under their current names ([] if no repo)."""
    try:
        repo = repository(folder)
    except HistoryError:
        return []
    if not repo.head:
        return []
    return follow_renames(read_recorded(folder, subfolder=bool(repo.prefix), max_commits=max_commits))


def update_history(folder: str | Path, store: HistoryStore) -> HistoryState:
    """Bring `store` up to the folder's HEAD; never raises: a failure is recorded as the history's state."""
    try:
        _update(folder, store)
    except HistoryError as error:
        state = error.args[1] if len(error.args) > 1 else FAILED
        log.info("history of %s: %s", folder, error.args[0])
        if state == FAILED:
            store.set_state(FAILED, error.args[0])
        else:  # no repository (any more), or no git: nothing stored is current
            store.replace([], state, "", error.args[0])
    except Exception as error:  # e.g. a disk error writing the store: the index run goes on
        log.warning("reading the history of %s failed", folder, exc_info=True)
        try:
            store.set_state(FAILED, " ".join(str(error).split())[:160] or type(error).__name__)
        except Exception:
            pass
    return store.state()


def _update(folder: str | Path, store: HistoryStore) -> None:
    repo = repository(folder)
    old = store.state()
    if not repo.head:
        store.replace([], EMPTY, "", "no commits yet")
        return
    if old.head == repo.head and old.state == repo.state:
        if old.state != SHALLOW or _count(folder, repo) == old.commits:  # a deepened clone has more
            return
    subfolder = bool(repo.prefix)
    if old.head and old.state == repo.state == FULL and _is_ancestor(folder, old.head, repo.head):
        store.append(read_recorded(folder, since=old.head, subfolder=subfolder), FULL, repo.head)
    else:  # first read, a rewritten history, or a shallow clone (it may have been deepened)
        store.replace(read_recorded(folder, subfolder=subfolder), repo.state, repo.head,
                      "shallow clone" if repo.state == SHALLOW else "")


def _is_ancestor(folder: str | Path, old: str, new: str) -> bool:
    """False when `old` is gone (gc'd after a rewrite) or is not in `new`'s history."""
    return _git(folder, "merge-base", "--is-ancestor", old, new).returncode == 0


def _count(folder: str | Path, repo: Repository) -> int:
    args = ["rev-list", "--count", "--no-merges", "HEAD"] + (["--", "."] if repo.prefix else [])
    out = _git(folder, *args)
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip().isdigit() else -1
