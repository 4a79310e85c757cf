"""`query a.b.C`, `goto a.b.C` and `refs a.b.C` name the same definitions (issue #53): over every name and
qualified name this repository's own `services/` defines (a real code base, about 1,800 names), the question's
reading (names.find), go to symbol's exact tier (goto.SymbolFinder) and references (graph.resolve) agree. Names
defined more than names.MAX_DEFINITIONS times (`__init__`) are not one place to go, and are left out. The three
agree on where each definition starts too: one definition is its chunks merged by one rule (definitions.whole), so
overloads are each one, and a long function cut by the chunker is one.

Real parts: LocalEngine, the catalogue, step 1 of a real run (no vectors needed: names are complete before)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from services.engine.service import LocalEngine
from services.retrieval import goto, graph, names
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]
SERVICES = Path(__file__).resolve().parent.parent / "services"


async def test_a_question_go_to_and_references_name_the_same_definitions(tmp_path):
    workspace = tmp_path / "services"
    shutil.copytree(SERVICES, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    service = LocalEngine(stand_in_settings(), data_dir=tmp_path / "data")
    stop = threading.Event()
    try:
        await service.index(workspace, cancel=stop,  # step 1 is all names need
                            progress=lambda event: stop.set() if event.phase == "embedding" else None)
        catalog = service.workspace_index(workspace).catalog()
        finder = goto.SymbolFinder(catalog.graph.definition_rows())
        asked = {n for item in finder.items for n in (item.symbol, item.qualified_name) if n}
        assert len(asked) > 1000
        disagree = []
        for name in sorted(asked):
            by_question = {(d.chunk.path, d.chunk.qualified_name, d.chunk.start_line)
                           for d in names.find(catalog, names.read(name)) if d.match in ("qualified name", "name")}
            if len(by_question) >= names.MAX_DEFINITIONS:
                continue
            by_references = {(t.path, t.qualified_name, t.start_line) for t in graph.resolve(catalog, name)[0]}
            by_go_to = {(h.path, h.qualified_name, h.start_line) for h in finder.find(name, 100)[0] if h.label == name}
            if not by_question == by_references == by_go_to:
                disagree.append((name, by_question ^ by_references, by_question ^ by_go_to))
        assert not disagree, f"{len(disagree)} of {len(asked)} names: {disagree[:5]}"
    finally:
        service.close()


async def test_overloads_are_each_a_definition_and_a_long_function_is_one_in_all_three(tmp_path):
    """Three `@overload`s of `parse` are three places to go in a question's answer, go to symbol and references;
    a function too long for one chunk is one (before, references merged the overloads into one span reaching
    from the first to the last)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    body = "\n".join(f"    total += {i}  # a line of a long function" for i in range(400))
    (workspace / "parser.py").write_text(
        "from typing import overload\n\n\n"
        "@overload\ndef parse(x: int) -> int: ...\n\n\n"
        "@overload\ndef parse(x: str) -> str: ...\n\n\n"
        "def parse(x):\n    return x\n\n\n"
        f"def long_sum():\n    total = 0\n{body}\n    return total\n")
    (workspace / "use.py").write_text("from parser import parse, long_sum\n\nparse(1)\nlong_sum()\n")
    service = LocalEngine(stand_in_settings(), data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        catalog = service.workspace_index(workspace).catalog()
        assert len(catalog.chunks(path="parser.py")) > 4  # the long function is cut into pieces
        finder = goto.SymbolFinder(catalog.graph.definition_rows())
        for name, starts in (("parse", [4, 8, 12]), ("long_sum", [16])):
            by_question = sorted(d.chunk.start_line for d in names.find(catalog, names.read(name)))
            by_references = sorted(t.start_line for t in graph.resolve(catalog, name)[0])
            by_go_to = sorted(h.start_line for h in finder.find(name, 100)[0])
            assert by_question == by_references == by_go_to == starts, name
        long_sum = graph.resolve(catalog, "long_sum")[0][0]
        assert long_sum.end_line == 418  # its last line
    finally:
        service.close()
