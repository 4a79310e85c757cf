"""The filesystem under the engine, as a property (issue 50): indexed files grow past the limit, shrink, move,
change mode and are renamed to odd names, while questions, go to symbol, references, uses and label writes
run. Whatever hypothesis tries: every answer comes back (or a one-line KnowledgeError), every answer's JSON is
bounded, no file is read past the limit, and no label written is lost. A real engine and index (the stand-in
encoder: the model is not the point), real files."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from app.render import graph_json, goto_json, query_json
from services.core.errors import KnowledgeError
from services.core.models import QueryOptions
from services.engine.service import LocalEngine
from tests.conftest import copy_sample
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = [pytest.mark.slow, pytest.mark.stand_in_encoder]

MIB = 1024 * 1024
ANSWER_BYTES = 512 * 1024  # far above a real answer of 10 results, far below a file read whole
ODD_NAMES = st.sampled_from(["école.py", "with space.py", "日本.py", "a" * 200 + ".py", "-dash.py", "new\tline.py"])
NAMES = ("tokenize_query", "FileNoteStore", "search_notes", "Note")


class FilesUnderTheEngine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.labels: set[str] = set()

    @initialize()
    def index(self) -> None:
        self.folder = Path(FilesUnderTheEngine.scratch) / f"run-{id(self)}"
        self.workspace = copy_sample(self.folder / "workspace")
        self.engine = LocalEngine(stand_in_settings(), data_dir=self.folder / "data")
        self.run(self.engine.index(self.workspace))
        self.files = sorted(str(p.relative_to(self.workspace)) for p in (self.workspace / "notes").glob("*.py"))

    def teardown(self) -> None:
        if hasattr(self, "engine"):
            self.engine.close()
            shutil.rmtree(self.folder, ignore_errors=True)
        self.loop.close()

    def run(self, work):
        return self.loop.run_until_complete(work)

    def answered(self, work, render) -> None:
        try:
            answer = self.run(work)
        except KnowledgeError as error:
            assert "\n" not in str(error) and str(error), repr(error)
            return
        size = len(json.dumps(render(answer)))
        assert size < ANSWER_BYTES, size

    # --- what happens to the files ---
    @rule(index=st.integers(0, 100), size=st.sampled_from([0, 10, MIB + 1, 5 * MIB, 64 * MIB]))
    def resize(self, index: int, size: int) -> None:
        path = self.workspace / self.files[index % len(self.files)]
        if path.exists():
            os.truncate(path, size)

    @rule(index=st.integers(0, 100), line=st.integers(1, 300_000))
    def append_a_long_line(self, index: int, line: int) -> None:
        path = self.workspace / self.files[index % len(self.files)]
        if path.exists():
            with open(path, "a") as handle:
                handle.write("x = '" + "y" * line + "'\n")

    @rule(index=st.integers(0, 100), name=ODD_NAMES)
    def rename(self, index: int, name: str) -> None:
        path = self.workspace / self.files[index % len(self.files)]
        if path.exists():
            target = path.with_name(name)
            path.rename(target)
            self.files.append(str(target.relative_to(self.workspace)))

    @rule(index=st.integers(0, 100), mode=st.sampled_from([0o000, 0o200, 0o644]))
    def change_mode(self, index: int, mode: int) -> None:
        path = self.workspace / self.files[index % len(self.files)]
        if path.exists():
            path.chmod(mode)

    @rule(index=st.integers(0, 100))
    def prepend_lines(self, index: int) -> None:
        path = self.workspace / self.files[index % len(self.files)]
        if path.exists() and path.stat().st_size < MIB:
            path.chmod(0o644)
            path.write_bytes(b"# moved\n# down\n" + path.read_bytes())

    # --- what the user asks meanwhile ---
    @rule(question=st.sampled_from(["search notes by tag", "tokenize a string", "Note", "store.py"]))
    def ask(self, question: str) -> None:
        options = QueryOptions(workspace=str(self.workspace), top_k=10, use_cache=False, context_lines=200, strategy="none")
        self.answered(self.engine.query(question, options), query_json)

    @rule(name=st.sampled_from(NAMES))
    def go_to(self, name: str) -> None:
        self.answered(self.engine.goto_symbols(name, self.workspace), goto_json)

    @rule(name=st.sampled_from(NAMES))
    def references(self, name: str) -> None:
        self.answered(self.engine.references(name, self.workspace), graph_json)

    @rule(name=st.sampled_from(NAMES))
    def uses(self, name: str) -> None:
        self.answered(self.engine.uses(name, self.workspace), graph_json)

    @rule(number=st.integers(0, 10_000))
    def label(self, number: int) -> None:
        question = f"question {number}"
        self.run(self.engine.record_label(self.workspace, question, "notes/search.py", "", True))
        self.labels.add(question)

    @invariant()
    def every_label_is_kept(self) -> None:
        if self.labels and hasattr(self, "engine"):
            for question in sorted(self.labels)[:5]:
                assert self.run(self.engine.labels_for(self.workspace, question)), question


def test_the_engine_holds_whatever_happens_to_the_files(tmp_path):
    FilesUnderTheEngine.scratch = str(tmp_path)
    machine = FilesUnderTheEngine.TestCase
    machine.settings = settings(max_examples=10, stateful_step_count=12, deadline=None, derandomize=True,
                                suppress_health_check=list(HealthCheck))
    machine().runTest()
