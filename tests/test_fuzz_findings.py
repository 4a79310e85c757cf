"""What the generated requests found (tests/test_fuzz_faces.py), one regression test each, below the server."""

from __future__ import annotations

import pytest

from services.core.errors import WorkspaceError
from services.storage.labels import labels_for, record_label
from services.storage.workspace_index import workspace_root


@pytest.mark.parametrize("odd", ["\x85", "\u2028", "\u2029"])
def test_a_label_with_a_line_separator_inside_reads_back_and_keeps_the_file_readable(tmp_path, odd):
    """splitlines() cut the stored line at U+0085 and the like: the PUT answered 500 and every later read
    of the workspace's labels failed."""
    queries = tmp_path / "labels.jsonl"
    record_label(queries, "first question", "a.py", "", True)
    record_label(queries, f"q{odd}", f"b{odd}.py", "", True)
    assert labels_for(queries, f"q{odd}") == {(f"b{odd}.py", ""): 1}
    assert labels_for(queries, "first question") == {("a.py", ""): 1}


def test_the_home_of_no_user_is_a_workspace_error():
    """`~name` of no user made pathlib raise RuntimeError: a 500 (or a dropped connection) on register."""
    with pytest.raises(WorkspaceError, match="no such user's home"):
        workspace_root("~no-such-user-ke-42")
