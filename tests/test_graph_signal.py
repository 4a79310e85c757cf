"""The code graph as evidence for file answers (issue 35): a file that the question's top chunk calls, or that
defines what a traceback frame's function calls, gains the `graph` signal and says who calls it; with the
weight at 0 (Settings.files_graph_weight) nothing changes; optionally (off by default) the callees of a
definition the question names and the callers of the top chunks gain it too. Over a real indexed generated
repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.core.models import QueryOptions
from services.core.settings import Settings
from services.engine.service import LocalEngine

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier

API = '''\
from pkg.printing.pycode import render_source


def lambdify(expression, modules=None):
    """Lambdify: turn a symbolic expression into a numeric Python function."""
    return eval("lambda x: " + render_source(expression))
'''

PYCODE = '''\
def render_source(tree):
    return str(tree).replace("^", "**")
'''

UNRELATED = '''\
def shout(words):
    return words.upper() + "!"
'''

PRINTER = '''\
def print_code(code):
    """Prints code to the terminal; wrong code is printed in red."""
    print(code)
'''


def graph_row(answer, path: str):
    """The `graph` signal of `path` in a file answer, or None."""
    for ranked in answer.files:
        if ranked.path == path:
            return next((s for s in ranked.signals if s.name == "graph"), None)
    return None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("graphsignal") / "workspace"
    for path, text in {"pkg/__init__.py": "", "pkg/api.py": API, "pkg/printing/__init__.py": "",
                       "pkg/printing/pycode.py": PYCODE, "pkg/loud.py": UNRELATED,
                       "pkg/printer.py": PRINTER}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def answer(workspace: Path, data: Path, weight: float, question: str, **settings):
    service = LocalEngine(Settings(files_graph_weight=weight, **settings), data_dir=data)
    try:
        asyncio.run(service.index(workspace))
        return asyncio.run(service.find_files(question, QueryOptions(workspace=str(workspace), strategy="none"), 5))
    finally:
        service.close()


def test_a_file_the_top_chunk_calls_gains_the_graph_signal(workspace, tmp_path):
    question = "lambdify gives a wrong numeric function for a symbolic expression"
    found = answer(workspace, tmp_path / "data", 0.5, question)
    assert found.files[0].path == "pkg/api.py"  # the top chunk is lambdify's
    row = graph_row(found, "pkg/printing/pycode.py")
    assert row is not None and row.contribution > 0
    assert row.note == "called by `lambdify` (#1)"
    assert graph_row(found, "pkg/loud.py") is None  # nothing calls it
    assert graph_row(found, "pkg/api.py") is None  # a caller does not vote for its own file

    off = answer(workspace, tmp_path / "data", 0.0, question)
    assert all(s.name != "graph" for f in off.files for s in f.signals)


def test_a_file_a_traceback_frame_calls_gains_the_graph_signal(workspace, tmp_path):
    question = ("Crash when printing a big expression\n\nTraceback (most recent call last):\n"
                '  File "/home/me/venv/lib/python3.11/site-packages/pkg/api.py", line 6, in lambdify\n'
                "ZeroDivisionError: division by zero\n")
    found = answer(workspace, tmp_path / "data", 0.5, question)
    row = graph_row(found, "pkg/printing/pycode.py")
    assert row is not None and "`lambdify` (traceback)" in row.note


def rank_of(answer, path: str) -> int | None:
    return next((f.rank for f in answer.files if f.path == path), None)


def test_a_file_called_by_a_function_the_question_names_rises(workspace, tmp_path):
    # the top chunk is not followed (files_graph_chunks 0): only the name `lambdify` leads to pycode.py
    question = "`lambdify` prints wrong code"
    # a weight well above the shipped 0.2, so that one vote outweighs the text evidence of printer.py's "prints code"
    before = answer(workspace, tmp_path / "data", 3.0, question, files_graph_chunks=0)
    after = answer(workspace, tmp_path / "data", 3.0, question, files_graph_chunks=0, files_graph_names=1.0)
    assert graph_row(before, "pkg/printing/pycode.py") is None
    row = graph_row(after, "pkg/printing/pycode.py")
    assert row is not None and row.note == "called by `lambdify` (named)"
    assert rank_of(after, "pkg/printing/pycode.py") < rank_of(before, "pkg/printing/pycode.py")


def test_a_file_calling_the_top_chunk_gains_the_graph_signal(workspace, tmp_path):
    question = "render_source turns ^ into ** in the source it renders"
    found = answer(workspace, tmp_path / "data", 0.5, question, files_graph_chunks=0, files_graph_callers=1)
    assert found.files[0].path == "pkg/printing/pycode.py"  # the top chunk is render_source's
    row = graph_row(found, "pkg/api.py")
    assert row is not None and row.note == "calls `render_source` (#1)"
    assert graph_row(found, "pkg/loud.py") is None
