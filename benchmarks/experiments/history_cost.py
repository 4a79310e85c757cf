"""Informed: the git history is read and kept with every index (43,000 commits in 5.9 s; issue 19's limit 30 s).

What keeping a workspace's git history costs (issue #19: 43,000 commits read and indexed in < 30 s).

    python benchmarks/experiments/history_cost.py [--data DIR]

For the pytest and Sphinx bundles (cloned under <data>/history-cost from ../shared/benchmarks/swe/<repo>/history.bundle
if missing): a first read (git log + storing every commit, services/indexing/history.update_history), loading
the stored commits and building the CommitIndex (what WorkspaceIndex.history() does once per change), a run
with nothing new (every watcher run pays it), and a run after 1 new commit (made on a scratch branch, removed
afterwards). Also the stored history's size on disk.

    python benchmarks/experiments/history_cost.py --synthetic 43000

adds a sympy-sized repository made with `git fast-import` (branch `snapshot`): 43,000 non-merge commits over
1,518 Python files in sympy-like folders, 1 to 4 files per commit, one commit in 100 a rename, each message a
real commit message of pytest's or Sphinx's history (cycled), one commit per hour.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import data_root, record, shared  # noqa: E402
from services.indexing.history import CommitIndex, read_recorded, update_history  # noqa: E402
from services.storage.history_store import HISTORY_FILE, HistoryStore  # noqa: E402

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
        subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(shared("swe", repo, "history.bundle")), str(folder)],
                       check=True)
    return folder


MODULES = ("core", "polys", "matrices", "printing", "solvers", "functions", "simplify", "integrals", "physics",
           "sets", "series", "tensor", "combinatorics", "geometry", "logic", "stats", "utilities", "parsing")


def synthetic(root: Path, commits: int, files: int = 1518) -> Path:
    """A repository of `commits` non-merge commits made with git fast-import (see the module's docstring)."""
    folder = root / f"synthetic-{commits}"
    if (folder / ".git").exists():
        return folder
    messages = [c.message for repo in REPOS for c in read_recorded(clone(repo, root)) if c.message.strip()]
    rng = random.Random(0)
    paths = [f"sympy/{rng.choice(MODULES)}/{'tests/test_' if n % 5 == 0 else ''}mod_{n}.py" for n in range(files)]
    lines, start = [], 1_200_000_000
    for n in range(commits):
        message = messages[n % len(messages)].encode()
        lines += [b"commit refs/heads/snapshot", f"committer Dev <dev@example.org> {start + 3600 * n} +0000".encode(),
                  f"data {len(message)}".encode(), message]
        if n % 100 == 99 and n >= files:  # a rename
            i = rng.randrange(files)
            new = paths[i].replace(".py", f"_r{n}.py")
            lines.append(f"R {paths[i]} {new}".encode())
            paths[i] = new
        for path in ([paths[n]] if n < files else rng.sample(paths, rng.randint(1, 4))):
            body = f"# {path}, change {n}\ndef f_{n}():\n    return {n}\n".encode()
            lines += [f"M 100644 inline {path}".encode(), f"data {len(body)}".encode(), body]
        lines.append(b"")
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "fast-import", "--quiet"], input=b"\n".join(lines) + b"\n", check=True)
    git(folder, "checkout", "-q", "-f", "snapshot")
    return folder


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (git): on a busy machine, what a quiet one's wall
    time would be, roughly (both run one thread at a time, apart from git's pipe)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def timed(work):
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def measure(folder: Path) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        store = HistoryStore(Path(scratch) / HISTORY_FILE)
        cpu = cpu_seconds()
        state, first = timed(lambda: update_history(folder, store))
        commits, load = timed(store.commits)
        _, build = timed(lambda: CommitIndex(commits))
        cpu = cpu_seconds() - cpu
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
            "read + index s": first + load + build, "read + index CPU s": cpu, "nothing new s": unchanged, "1 new commit s": one_new,
            "stored MB": size / 1e6, "commits/s": state.commits / (first + load + build), "commits": state.commits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[2])
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    parser.add_argument("--synthetic", type=int, default=0, help="also a fast-import repository of this many commits")
    args = parser.parse_args()
    args.root = data_root(args.data) / "history-cost"
    args.root.mkdir(parents=True, exist_ok=True)
    rows = {repo: measure(clone(repo, args.root)) for repo in REPOS}
    if args.synthetic:
        rows[f"synthetic ({args.synthetic:,} commits)"] = measure(synthetic(args.root, args.synthetic))
    columns = [k for k in next(iter(rows.values())) if k not in ("history", "commits")]
    print("| repository | history | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    for repo, row in rows.items():
        print(f"| {repo} | {row['history']} | " + " | ".join(
            f"{row[c]:,.0f}" if c == "commits/s" else f"{row[c]:.2f}" for c in columns) + " |")
    rate = min(row["commits/s"] for row in rows.values())
    print(f"\nat the slower rate ({rate:,.0f} commits/s), 43,000 commits take about {43000 / rate:.1f} s to read and index")
    record("history_cost", [{"repository": repo, "history": row["history"],
                             **{c: round(row[c]) if c == "commits/s" else round(row[c], 2) for c in columns}}
                            for repo, row in rows.items()],
           settings={"synthetic commits": args.synthetic}, uses_percentiles=False,
           note="one run each; first read = git log + storing every commit (update_history)")


if __name__ == "__main__":
    main()
