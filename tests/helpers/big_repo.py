"""A generated git repository of sympy's size, made in seconds with `git fast-import`: FILES Python files of
FUNCTIONS small functions each (one chunk a function) and COMMITS commits, one a hour, each touching one file
(its message in that file's topic words), after a first commit adding every file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

START = 1_500_000_000  # the first commit's time (2017)
HOUR = 3600
TOPICS = ["matrix determinant", "polynomial roots", "integral substitution", "series expansion",
          "printing latex", "parser tokens", "solver equations", "geometry points", "tensor indices",
          "logic boolean", "number theory primes", "physics units", "statistics random", "sets intervals",
          "combinatorics permutations", "plotting axes"]


def topic(file: int) -> str:
    return TOPICS[file % len(TOPICS)]


def path_of(file: int) -> str:
    return f"pkg{file % 20:02d}/mod{file:04d}.py"


def source(file: int, functions: int, revision: int) -> str:
    words = topic(file).split()
    body = [f'"""Module {file}: {topic(file)}."""\n']
    for n in range(functions):
        body.append(f"\n\ndef {words[0]}_{words[-1]}_{file}_{n}(value, scale={n}):\n"
                    f'    """Return the {words[0]} {words[-1]} of value, step {n} of module {file}."""\n'
                    f"    total = value * scale + {file}\n"
                    f"    return total - {n}\n")
    body.append(f"\n# revision {revision}\n")
    return "".join(body)


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n" % len(raw) + raw + b"\n"


def fast_import_stream(files: int, functions: int, commits: int):
    """The stream's pieces: two blobs per file (revisions 0 and 1), a first commit adding every file at
    revision 0, then commits - 1 commits, each switching one file (round robin) to its other revision."""
    for file in range(files):
        for revision in (0, 1):
            yield b"blob\nmark :%d\n" % (1 + 2 * file + revision) + _data(source(file, functions, revision))
    revision = [0] * files
    for n in range(commits):
        when = START + n * HOUR
        if n == 0:
            message, changes = "Add every module", [(f, 0) for f in range(files)]
        else:
            file = (n - 1) % files
            revision[file] ^= 1
            words = topic(file).split()
            message = f"Fix the {words[0]} {words[-1]} handling in module {file} (case {n})"
            changes = [(file, revision[file])]
        head = b"commit refs/heads/main\ncommitter T <t@example.org> %d +0000\n" % when + _data(message)
        lines = b"".join(b"M 100644 :%d %s\n" % (1 + 2 * f + r, path_of(f).encode()) for f, r in changes)
        yield head + lines + b"\n"


def make_big_repo(folder: Path, files: int = 400, functions: int = 100, commits: int = 40_000) -> Path:
    """A git repository at `folder` with the files checked out at the last commit (kept if already there)."""
    if (folder / ".git").is_dir():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@example.org")
    git = lambda *args, **kw: subprocess.run(["git", *args], cwd=folder, env=env, check=True,  # noqa: E731
                                             capture_output=True, **kw)
    git("init", "-q", "-b", "main")
    git("fast-import", "--quiet", input=b"".join(fast_import_stream(files, functions, commits)))
    git("checkout", "-q", "-f", "main")
    return folder
