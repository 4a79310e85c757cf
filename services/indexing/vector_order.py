"""Which files get their vectors first (the second step of an indexing run, services/indexing/indexer.py).

Source before tests, tests before docs and configuration, then examples, then generated or vendored files;
within each, the files the git history changed most first (what bug reports point at), then by path.
Measured against path order in benchmarks/first_minute.py.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import PurePosixPath

from services.storage.history_store import Commit

SOURCE, TESTS, DOCS, EXAMPLES, GENERATED = range(5)
CODE_SUFFIXES = {".py", ".pyx", ".pyi", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs", ".java", ".kt",
                 ".scala", ".swift", ".m", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".rb", ".php", ".lua", ".sh", ".r",
                 ".jl", ".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".dart", ".vue", ".svelte", ".sql", ".zig"}
GENERATED_PARTS = {"vendor", "vendored", "third_party", "thirdparty", "_vendor", "node_modules", "generated", "gen",
                   "dist", "build", "migrations"}
GENERATED_NAME = re.compile(r"(_pb2(_grpc)?\.py|\.pb\.go|\.min\.js|\.generated\.\w+|_generated\.\w+|\.lock)$")
EXAMPLE_PARTS = {"examples", "example", "samples", "sample", "demo", "demos", "tutorial", "tutorials", "benchmarks",
                 "bench"}
DOC_PARTS = {"doc", "docs", "documentation", "changelog", "news"}
TEST_PARTS = {"test", "tests", "testing", "spec", "specs", "__tests__", "testdata", "fixtures"}
TEST_NAME = re.compile(r"(^test_.*|.*_test\.\w+|.*\.test\.\w+|.*\.spec\.\w+|^conftest\.py)$")


def kind(path: str) -> int:
    """SOURCE, TESTS, DOCS (docs, changelogs, configuration: any file that is not code), EXAMPLES or GENERATED."""
    pure = PurePosixPath(path)
    folders = {part.lower() for part in pure.parts[:-1]}
    name = pure.name.lower()
    if folders & GENERATED_PARTS or GENERATED_NAME.search(name):
        return GENERATED
    if folders & EXAMPLE_PARTS:
        return EXAMPLES
    if (pure.suffix.lower() not in CODE_SUFFIXES or folders & DOC_PARTS
            or any(part.startswith(".") for part in pure.parts[:-1])):
        return DOCS
    if folders & TEST_PARTS or TEST_NAME.match(name):
        return TESTS
    return SOURCE


def changes(commits: Iterable[Commit], before: int | None = None) -> Counter:
    """How many commits (those before `before`, unix time, when given) touched each path."""
    return Counter(path for commit in commits if before is None or commit.time < before for path in commit.files)


def vector_order(paths: list[str], commits: Iterable[Commit] = (), before: int | None = None) -> list[str]:
    """`paths` in the order their vectors are made."""
    touched = changes(commits, before)
    return sorted(paths, key=lambda path: (kind(path), -touched[path], path))
