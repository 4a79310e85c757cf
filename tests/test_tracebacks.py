"""Tracebacks as evidence at file level (issue 41), and `auto`, the default that reads the question.

The traceback's frames are matched to the workspace's files by the longest path suffix and weighed by depth
(innermost first); `auto` routes each kind of question to the strategy measured best for it. Pure logic
here (an in-memory file index); the real engine on the pytest snapshot is tests/test_traceback_pytest.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from services.core.settings import DEFAULT_STRATEGY, Settings
from services.retrieval import file_ranking as fr
from services.retrieval.query_signals import extract
from services.retrieval.strategies import create_strategy, strategy_names
from services.retrieval.plan import plan

SITE = "/usr/local/lib/python3.8/site-packages"
STDLIB = "/usr/local/lib/python3.8"
REPORT = f"""INTERNALERROR when exception in __repr__

```
INTERNALERROR> Traceback (most recent call last):
INTERNALERROR>   File "{SITE}/_pytest/main.py", line 191, in wrap_session
INTERNALERROR>   File "{SITE}/_pytest/_code/code.py", line 693, in repr_args
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 82, in saferepr
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 51, in repr
INTERNALERROR>   File "{STDLIB}/reprlib.py", line 52, in repr
INTERNALERROR>   File "{SITE}/_pytest/_io/saferepr.py", line 56, in repr_instance
INTERNALERROR>   File "/home/me/project/tests/test_mine.py", line 6, in __repr__
INTERNALERROR> RuntimeError: No active exception to reraise
```
"""
FILES = {
    "src/_pytest/main.py": "def wrap_session(): pass",
    "src/_pytest/_code/code.py": "def repr_args(): pass",
    "src/_pytest/_io/saferepr.py": "def saferepr(): pass\nclass SafeRepr:\n    def repr(self): pass",
    "testing/io/test_saferepr.py": "def test_saferepr(): pass",
    "src/_pytest/reprlib_helpers.py": "def repr(): pass",
    "doc/reprlib.py": "def repr(): pass",
}


def ranked(question: str, files: dict[str, str] = FILES) -> list[str]:
    index = fr.FileIndex.from_texts(files)
    scores = fr.combine(fr.file_features(question, index), index.is_test, fr.Weights())
    return fr.rank(index.paths, scores, 3)


def test_frames_are_read_in_the_order_written_in_both_styles():
    report = ('E   boom\nsrc/_pytest/nodes.py:355: in _repr_failure_py\n  File "src/_pytest/main.py", line 9, in run\n'
              "../test_path_error.py:29: AssertionError\n")
    frames = extract(report).frames
    assert [(f.path, f.line, f.function) for f in frames] == [
        ("src/_pytest/nodes.py", 355, "_repr_failure_py"), ("src/_pytest/main.py", 9, "run"),
        ("../test_path_error.py", 29, "")]


def test_the_file_of_the_innermost_project_frames_ranks_first_by_its_path_suffix():
    assert ranked(REPORT)[0] == "src/_pytest/_io/saferepr.py"


def test_each_frame_is_matched_by_the_longest_shared_path_suffix_and_counted_by_depth():
    index = fr.FileIndex.from_texts(FILES)
    scores, told = index.traceback(extract(REPORT).frames)
    by_path = dict(zip(index.paths, scores))
    saferepr = index.position["src/_pytest/_io/saferepr.py"]
    assert told[saferepr] == (3, 1)  # three frames, the innermost project frame among them
    assert by_path["src/_pytest/_io/saferepr.py"] > by_path["src/_pytest/_code/code.py"] > by_path["src/_pytest/main.py"] > 0
    assert by_path["doc/reprlib.py"] == 0  # a standard-library frame, while project frames matched
    assert by_path["testing/io/test_saferepr.py"] == 0


def test_a_traceback_of_only_standard_library_frames_still_counts():
    report = f'Traceback (most recent call last):\n  File "{STDLIB}/reprlib.py", line 52, in repr\nValueError'
    index = fr.FileIndex.from_texts(FILES)
    scores, _ = index.traceback(extract(report).frames)
    assert scores[index.position["doc/reprlib.py"]] == 1.0


def test_ties_on_a_bare_file_name_go_to_the_files_defining_the_frames_function():
    files = {"a/util.py": "def parse(): pass", "b/util.py": "def other(): pass"}
    index = fr.FileIndex.from_texts(files)
    scores, _ = index.traceback(extract('Traceback:\n  File "/x/util.py", line 3, in parse\nKeyError').frames)
    assert list(np.round(scores, 3)) == [1.0, 0.0]


def test_the_why_row_says_how_many_frames_name_the_file_and_how_deep():
    from services.retrieval.file_answer import _frames_note

    assert _frames_note(7, 1) == "named in 7 traceback frames, innermost"
    assert _frames_note(1, 3) == "named in 1 traceback frame, 3rd from the innermost"


def test_auto_reads_each_kind_of_question():
    assert choose("Poly.degree")[0] == "metadata" and "dotted name `Poly.degree`" in choose("Poly.degree")[1]
    assert choose("fixture manager")[0] == "metadata"  # words that may spell a name: the names channel checks
    assert choose("_pytest.nodes")[0] == "metadata"
    assert choose("src/_pytest/nodes.py") == ("metadata", "read as a path `src/_pytest/nodes.py`: the file first (metadata)")
    name, note = choose(REPORT)
    assert name == "bug-report" and note.startswith("a traceback of 7 frames")
    long_report = "Wrong path to test file when directory changed in fixture\n\n" + "the path is shown wrong " * 10
    assert choose(long_report)[0] == "bug-report" and "bug report" in choose(long_report)[1]
    assert choose("how do I read a config file")[0] == "metadata"


def test_auto_is_the_default_and_a_listed_strategy_that_answers_as_the_one_it_picks():
    assert DEFAULT_STRATEGY == "auto" and strategy_names()[0] == "auto"
    auto = create_strategy("auto", Settings())
    chosen, note = auto.route(plan(REPORT))
    assert chosen.name == "bug-report" and note
    assert create_strategy("none", Settings()).route(plan(REPORT))[0].name == "none"


def test_a_fused_answer_keeps_the_report_ranking_s_lead_and_lifts_what_both_rank_well():
    from services.retrieval.file_answer import fuse

    report = ["saferepr.py", "code.py", "main.py", "runner.py"]
    words = ["runner.py", "code.py", "reports.py"]
    fused = [path for path, _ in fuse(report, words, 0.3, 10)]
    assert fused[:2] == ["code.py", "runner.py"]  # ranked by both beats #1 in one alone
    assert set(fused) == set(report) | set(words) and "reports.py" == fused[-1]
    apart = [path for path, _ in fuse(["a.py", "b.py"], ["c.py", "d.py"], 0.3, 10)]
    assert apart == ["a.py", "b.py", "c.py", "d.py"]  # the report's ranking leads (0.7 of the weight)
    assert [path for path, _ in fuse(report, words, 0.0, 10)] == report + ["reports.py"]  # no share: the report's order
    assert fuse(["a.py"], ["a.py"], 0.3, 10) == [("a.py", 1.0)]  # first in both: 1


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from tests.conftest import indexed_sample

    yield from indexed_sample(tmp_path_factory.mktemp("auto"))


@pytest.mark.slow
async def test_the_default_says_what_it_read_in_every_face_s_json(sample):
    from app.render import files_json, mcp_json, query_json
    from services.core.models import QueryOptions

    service, workspace = sample
    default = QueryOptions(workspace=str(workspace), strategy=DEFAULT_STRATEGY)  # what every face asks with
    words = await service.query("save a note to disk", default)
    assert words.strategy == "auto" and words.strategy_note == "a question in words: ranking by metadata, measured best for those"
    name = await service.query("DiskChunkStore", default)
    assert name.strategy_note.startswith("read as a name `DiskChunkStore`") and name.results[0].chunk.symbol == "DiskChunkStore"
    files = await service.find_files("save a note to disk", default, 3)
    assert query_json(name)["strategy_note"] == name.strategy_note  # CLI --json and REST
    assert mcp_json("search", name)["strategy_note"] == name.strategy_note
    assert files_json(files)["strategy_note"] == files.strategy_note == words.strategy_note
    chosen = await service.query("save a note to disk", QueryOptions(workspace=str(workspace), strategy="none"))
    assert chosen.strategy == "none" and chosen.strategy_note == ""  # a strategy picked by the user is used as is


@pytest.mark.slow
async def test_a_report_s_files_are_bug_report_s_and_metadata_s_fused_and_each_says_where_both_put_it(sample):
    from app.render import files_json
    from services.core.models import QueryOptions

    service, workspace = sample
    asked = ("Saving a note to disk loses its tags\n\nWhen I save a note with tags and open the store again, "
             "the note is there but its tags are gone. The disk store writes the text and the title only. "
             "Expected: the tags are kept like the rest of the note.")
    default = await service.find_files(asked, QueryOptions(workspace=str(workspace), strategy=DEFAULT_STRATEGY), 5)
    assert default.strategy_note.startswith("a bug report of") and "fused by rank with metadata's (20%)" in default.strategy_note
    assert files_json(default)["strategy_note"] == default.strategy_note
    scores = [f.score for f in default.files]
    assert default.files and scores == sorted(scores, reverse=True) and [f.rank for f in default.files] == [1, 2, 3, 4, 5][:len(scores)]
    for f in default.files:
        fused = f.signals[-1]
        assert fused.name == "fused by rank" and fused.op == "set" and fused.contribution == f.score
        assert "by bug-report" in fused.note and "by metadata" in fused.note
        assert all("`auto` ranking" not in s.note for s in f.signals)  # its chunks are bug-report's, and say so
    assert default.strategy == "auto"
    alone = await service.find_files(asked, QueryOptions(workspace=str(workspace), strategy="bug-report"), 5)
    assert all(s.name != "fused by rank" for f in alone.files for s in f.signals)  # a picked strategy is not fused


def choose(question: str) -> tuple[str, str]:
    """What the question's plan routes it to, and why."""
    asked = plan(question)
    return asked.route, asked.note
