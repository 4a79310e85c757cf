"""Find references on a file changed since it was indexed lists each use once, at the line it is on now (issue 42):
the index's uses move to the lines that hold their text on disk, a use whose line is gone is dropped, and the file's
mentions read from disk never repeat them as "text". Real files, a real engine and index (the stand-in model)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import copy_sample

pytestmark = pytest.mark.stand_in_encoder  # the code graph is tested, not the model


def links(answer, path: str) -> list[tuple[int, str]]:
    return [(link.line, link.how) for group in answer.files if group.path == path for link in group.links]


async def test_a_changed_files_uses_are_listed_once_at_their_lines_now(service, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")
    await service.index(workspace)
    before = await service.references("tokenize_query", workspace)
    assert links(before, "notes/search.py") == [(38, "call"), (47, "call"), (48, "call")]
    source = workspace / "notes" / "search.py"
    lines = source.read_text().splitlines(keepends=True)
    del lines[47]  # line 48, `body = Counter(tokenize_query(note.body))`: that use is gone
    source.write_text("# three lines\n# moved every use\n# down\n" + "".join(lines))
    after = await service.references("tokenize_query", workspace)
    assert links(after, "notes/search.py") == [(41, "call"), (50, "call")]
    assert links(after, "notes/__init__.py") == links(before, "notes/__init__.py")  # unchanged: as indexed


async def test_a_touched_file_and_a_gone_file_keep_the_indexed_lines(service, tmp_path):
    workspace = copy_sample(tmp_path / "workspace")
    await service.index(workspace)
    source = workspace / "notes" / "search.py"
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))  # same bytes
    assert links(await service.references("tokenize_query", workspace), "notes/search.py") == \
        [(38, "call"), (47, "call"), (48, "call")]
    source.unlink()
    assert links(await service.references("tokenize_query", workspace), "notes/search.py") == \
        [(38, "call"), (47, "call"), (48, "call")]
