"""Every read of a workspace file is bounded, and every location says its age (issue 50).

An indexed file that grows past the index's limit is never read whole: a question, references, go-to and the
file route answer in a bounded size and say why ("d.py is 20.0 MiB now, over the 1.0 MiB limit: reindex to drop
it"). Go-to hits and what a chunk uses move to the lines their text is on now, and say `stale`, as query results
do. A folder whose name is not ASCII (or has spaces, or is long) is indexed like any other. Real files, a real
`knowledge-explorer serve` process on 127.0.0.1 and real engines with the stand-in encoder (the model is not the
point)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.render import goto_text, graph_text
from tests.helpers.engine_server import index_and_wait, register
from tests.helpers.engine_server import served as serving

served = contextlib.contextmanager(serving)

pytestmark = pytest.mark.stand_in_encoder

D_PY = '''"""Ledger helpers."""


def settle_ledger(entries):
    """Sum the ledger's entries into a balance."""
    return sum(entry.amount for entry in entries)


def audit_ledger(entries):
    return [entry for entry in entries if settle_ledger([entry]) < 0]
'''

A_PY = '''def target_fn(x):
    return second(x) + 1


def second(x):
    return x * 2
'''

MIB = 1024 * 1024


def make_workspace(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "d.py").write_text(D_PY)
    (folder / "a.py").write_text(A_PY)
    (folder / "b.py").write_text("from a import target_fn\n\n\ndef caller():\n    return target_fn(3)\n")
    return folder


@pytest.fixture
def ledger(tmp_path):
    """(REST client, workspace id, workspace folder): the ledger workspace indexed by a real server."""
    workspace = make_workspace(tmp_path / "projects" / "ledger")
    (tmp_path / "server").mkdir()
    with served(tmp_path / "server", tmp_path / "projects") as server, \
            httpx.Client(base_url=server["url"], timeout=120) as client:
        key = register(client, workspace)
        assert index_and_wait(client, key)["state"] == "done"
        yield client, key, workspace


def test_an_indexed_file_grown_past_the_limit_is_never_read_whole(ledger):
    client, key, workspace = ledger
    os.truncate(workspace / "d.py", 20 * MIB)  # as `truncate -s 20M d.py`: the indexed text, then zeros

    query = client.post(f"/v1/workspaces/{key}/query", json={"question": "settle the ledger balance", "top_k": 5})
    assert query.status_code == 200, query.text
    assert len(query.content) < 256 * 1024  # it answered 480 MB
    answer = query.json()
    assert "d.py is 20.0 MiB now, over the 1.0 MiB limit: reindex to drop it" in answer["warning"]
    grown = [r for r in answer["results"] if r["chunk"]["path"] == "d.py"]
    assert grown and all(r["stale"] == "modified" for r in grown)

    refs = client.get(f"/v1/workspaces/{key}/graph/references", params={"q": "settle_ledger"})
    assert refs.status_code == 200 and len(refs.content) < 64 * 1024
    goto = client.get(f"/v1/workspaces/{key}/goto/symbols", params={"q": "settle_ledger"}).json()
    assert goto["hits"][0]["path"] == "d.py" and goto["hits"][0]["stale"] == "modified"

    whole = client.get(f"/v1/workspaces/{key}/file", params={"path": "d.py"})
    assert whole.status_code == 400 and len(whole.content) < 4096
    assert "too large to open (20,971,520 bytes, over the 2.0 MiB limit)" in whole.json()["error"]["message"]


def test_a_long_line_is_cut_where_it_is_shown(ledger):
    client, key, workspace = ledger
    with open(workspace / "d.py", "a") as handle:  # one 900 KB line: under the limit, not text to show
        handle.write("BLOB = '" + "x" * 900_000 + "'\n")
    query = client.post(f"/v1/workspaces/{key}/query",
                        json={"question": "settle the ledger balance", "top_k": 5, "context_lines": 20})
    assert query.status_code == 200 and len(query.content) < 128 * 1024, len(query.content)
    opened = client.get(f"/v1/workspaces/{key}/file", params={"path": "d.py"}).json()["text"]
    assert len(opened) < 8000 and "… [896,009 more characters]" in opened


async def test_go_to_and_uses_follow_a_changed_file_and_say_it(service, tmp_path):
    workspace = make_workspace(tmp_path / "ws")
    await service.index(workspace)
    source = workspace / "a.py"
    source.write_text("# one\n# two\n# three\n" + A_PY)  # every definition three lines down, no reindex

    hit = (await service.goto_symbols("target_fn", workspace)).hits[0]
    assert (hit.path, hit.start_line, hit.end_line, hit.stale) == ("a.py", 4, 5, "modified")
    assert "a.py:4-5" in goto_text(await service.goto_symbols("target_fn", workspace))

    uses = await service.uses("target_fn", workspace)
    assert uses.targets[0].start_line == 4 and uses.targets[0].stale == "modified"
    second = [link for group in uses.files for link in group.links if link.name == "second"]
    assert [(link.line, link.lines, link.stale) for link in second] == [(8, (5,), "modified")]
    assert "[modified]" in graph_text(uses)

    fresh = (await service.goto_symbols("caller", workspace)).hits[0]  # b.py did not change
    assert (fresh.start_line, fresh.stale) == (4, "")
    source.unlink()
    assert (await service.goto_symbols("target_fn", workspace)).hits[0].stale == "deleted"


@pytest.mark.parametrize("name", ["école", "my project", "n" * 200, "日本語"])
def test_a_folder_of_any_name_is_indexed_and_answers(tmp_path, name, capsys):
    workspace = make_workspace(tmp_path / name)
    data = str(tmp_path / "data")
    assert main(["index", str(workspace), "--data-dir", data]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["query", str(workspace), "settle the ledger balance", "--data-dir", data, "--json"]) == 0
    assert '"path": "d.py"' in capsys.readouterr().out
    assert main(["health", str(workspace), "--data-dir", data]) == 0
    assert "cannot be read" not in capsys.readouterr().out
