"""A qualified-names set made from a snapshot at run time (issue 41b): `Class.method` questions whose bare method
name is defined three times or more in the repository, so the class is what tells the definition apart.

    python benchmarks/qualified_names.py SNAPSHOT   # e.g. a swe/pytest snapshot unpacked; prints the set, one JSON line a question

Read with Python's `ast` over the files git tracks: methods defined directly in a module-level class, outside tests
(`tests/`, `testing/`, `test_*.py`, `conftest.py`), neither name private (`_x`, dunders included), the `Class.method`
pair defined once in the repository (no overloads, no property setters, no same-named class elsewhere), in a file the
app indexes (not machine-made: xarray's generated `_aggregations.py` is skipped), the method's bare name defined 3+
times (functions and methods, tests and generated files included); 100 picked with a fixed seed. Each judged by its
definition's chunk, `path::Class.method`.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.indexing.scanning import MIB, machine_made  # noqa: E402

COUNT = 100
SEED = 41
MIN_DEFINED = 3
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def python_files(folder: Path) -> dict[str, tuple[ast.Module, bool]]:
    """The tracked Python files that parse, by path: (tree, whether the app indexes it: not machine-made)."""
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=folder, capture_output=True, text=True, check=True)
    trees = {}
    for path in sorted(listed.stdout.split()):
        try:
            text = (folder / path).read_text(encoding="utf-8")
            trees[path] = ast.parse(text), len(text) <= MIB and not machine_made(Path(path).name, text)
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
    return trees


def is_test(path: str) -> bool:
    parts = path.split("/")
    return bool({"tests", "testing", "test"} & set(parts[:-1])) or parts[-1].startswith("test_") \
        or parts[-1] == "conftest.py"


def methods(tree: ast.Module):
    """(class, method) for each method of a module-level class."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, FUNCTIONS):
                    yield node.name, item.name


def make(folder: Path, count: int = COUNT, seed: int = SEED) -> list[tuple[str, str]]:
    """(question `Class.method`, judged chunk `path::Class.method`), sorted then sampled with the seed."""
    trees = python_files(folder)
    defined = Counter(n.name for tree, _ in trees.values() for n in ast.walk(tree) if isinstance(n, FUNCTIONS))
    pairs = Counter(pair for tree, _ in trees.values() for pair in methods(tree))
    candidates = sorted((f"{cls}.{name}", f"{path}::{cls}.{name}") for path, (tree, indexed) in trees.items()
                        if indexed and not is_test(path) for cls, name in methods(tree)
                        if defined[name] >= MIN_DEFINED and pairs[cls, name] == 1
                        and not cls.startswith("_") and not name.startswith("_"))
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


if __name__ == "__main__":
    for number, (question, judged) in enumerate(make(Path(sys.argv[1]))):
        print(json.dumps({"id": f"qualified-{number}", "text": question, "judged": judged}))
