"""Which files get their vectors first (services/indexing/vector_order.py): source, tests, docs and configuration,
examples, generated; within each, the files the history changed most (commits before `before` only)."""

from __future__ import annotations

from services.indexing.vector_order import vector_order
from services.storage.history_store import Commit

PATHS = ["CHANGELOG.rst", "doc/en/conf.py", ".github/labels.toml", "src/_pytest/python.py", "src/_pytest/main.py",
         "testing/test_main.py", "examples/demo.py", "src/vendor/six.py", "src/_pytest/_version_pb2.py",
         "changelog/123.bugfix.rst", "README.md", "src/pytest/__init__.py"]


def test_source_first_then_tests_docs_examples_generated_and_path_order_within():
    assert vector_order(PATHS) == [
        "src/_pytest/main.py", "src/_pytest/python.py", "src/pytest/__init__.py",  # source, by path
        "testing/test_main.py",
        ".github/labels.toml", "CHANGELOG.rst", "README.md", "changelog/123.bugfix.rst", "doc/en/conf.py",
        "examples/demo.py",
        "src/_pytest/_version_pb2.py", "src/vendor/six.py",
    ]


def test_the_files_the_history_changed_most_come_first_counting_only_commits_before_the_cut():
    commits = [Commit("a", 100, "fix", ("src/pytest/__init__.py",)),
               Commit("b", 200, "fix", ("src/pytest/__init__.py", "src/_pytest/python.py")),
               Commit("c", 300, "fix", ("src/_pytest/python.py",)),
               Commit("d", 400, "the fix itself", ("src/_pytest/python.py", "src/_pytest/main.py"))]
    assert vector_order(PATHS, commits)[:3] == ["src/_pytest/python.py", "src/pytest/__init__.py",
                                                "src/_pytest/main.py"]
    assert vector_order(PATHS, commits, before=250)[:3] == ["src/pytest/__init__.py", "src/_pytest/python.py",
                                                            "src/_pytest/main.py"]
    assert vector_order(PATHS, commits, before=150)[:3] == ["src/pytest/__init__.py", "src/_pytest/main.py",
                                                            "src/_pytest/python.py"]
