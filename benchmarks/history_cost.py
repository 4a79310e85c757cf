"""What keeping a workspace's git history costs (issue #19: 43,000 commits read and indexed in < 30 s).

    python benchmarks/history_cost.py [--root /tmp/history-cost]

For the pytest and Sphinx bundles (cloned under --root from /work/shared/benchmarks/swe/<repo>/history.bundle
if missing): a first read (git log + storing every commit, services/indexing/history.update_history), loading
the stored commits and building the CommitIndex (what WorkspaceIndex.history() does once per change), a run
with nothing new (every watcher run pays it), and a run after 1 new commit (made on a scratch branch, removed
afterwards). Also the stored history's size on disk.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.indexing.history import CommitIndex, update_history  # noqa: E402
from services.storage.history_store import HISTORY_FILE, HistoryStore  # noqa: E402

BENCH = Path("/work/shared/benchmarks/swe")
REPOS = ("pytest", "sphinx")
SCRATCH = "history-cost-scratch"


def git(folder: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@example.org", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def clone(repo: str, root: Path) -> Path:
    folder = root / repo
    if not folder.exists():
        subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(BENCH / repo / "history.bundle"), str(folder)],
                       check=True)
    return folder


def timed(work):
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def measure(folder: Path) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        store = HistoryStore(Path(scratch) / HISTORY_FILE)
        state, first = timed(lambda: update_history(folder, store))
        commits, load = timed(store.commits)
        _, build = timed(lambda: CommitIndex(commits))
        _, unchanged = timed(lambda: update_history(folder, store))
        git(folder, "checkout", "-q", "-b", SCRATCH)
        try:
            (folder / "history_cost_probe.txt").write_text("one new commit\n")
            git(folder, "add", "history_cost_probe.txt")
            git(folder, "commit", "-q", "-m", "Benchmark: one new commit")
            after, one_new = timed(lambda: update_history(folder, store))
        finally:
            git(folder, "checkout", "-q", "snapshot")
            git(folder, "branch", "-q", "-D", SCRATCH)
        size = sum(p.stat().st_size for p in Path(scratch).iterdir())
        store.close()
    assert after.commits == state.commits + 1, (after, state)
    return {"history": state.describe(), "first read + store s": first, "load s": load, "CommitIndex s": build,
            "read + index s": first + load + build, "nothing new s": unchanged, "1 new commit s": one_new,
            "stored MB": size / 1e6, "commits/s": state.commits / (first + load + build), "commits": state.commits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/history-cost"))
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    rows = {repo: measure(clone(repo, args.root)) for repo in REPOS}
    columns = [k for k in next(iter(rows.values())) if k not in ("history", "commits")]
    print("| repository | history | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    for repo, row in rows.items():
        print(f"| {repo} | {row['history']} | " + " | ".join(
            f"{row[c]:,.0f}" if c == "commits/s" else f"{row[c]:.2f}" for c in columns) + " |")
    rate = min(row["commits/s"] for row in rows.values())
    print(f"\nat the slower rate ({rate:,.0f} commits/s), 43,000 commits take about {43000 / rate:.1f} s to read and index")


if __name__ == "__main__":
    main()
