"""Long questions everywhere (issue 33): one limit for every face (services.core.messages.MAX_QUESTION_CHARS),
room for a real bug report with its traceback; a 12,000-character report is answered by the CLI, REST (a real
uvicorn server) and MCP (a real client session) alike, and each answer says how long the question was, the
limit, and how it was reduced."""

from __future__ import annotations

import json
import subprocess

import httpx
import pytest

from app.render import MCP_FIELDS
from services.core.errors import QueryError
from services.core.messages import MAX_QUESTION_CHARS
from services.core.models import QueryOptions
from tests.helpers.engine_server import ROOT, cli, env


def bug_report(length: int = 12_000) -> str:
    """A user's report: a title, what happened, a traceback, then the log they pasted, to `length` characters."""
    head = ("SearchEngine.score crashes when a note has no tags\n\n"
            "Searching my notes folder fails as soon as one note was saved without tags. Steps: save a note with "
            "FileNoteStore, leave its tags empty, then search for any word.\n\n"
            "Traceback (most recent call last):\n"
            '  File "/home/me/app/notes/search.py", line 41, in search\n'
            "    scored = [(self.score(note, keywords), note) for note in self.store.all_notes()]\n"
            '  File "/home/me/app/notes/search.py", line 47, in score\n'
            "    hits = sum(1 for k in keywords if k in note.tags)\n"
            "TypeError: 'NoneType' object is not iterable\n\nThe log before it:\n")
    lines, n = [head], 0
    while sum(map(len, lines)) < length:
        n += 1
        lines.append(f"2024-05-0{n % 9 + 1} 10:{n % 60:02d}:00 DEBUG notes.store loaded note {n:05d} "
                     f"from notes/{n:05d}.json (title 'meeting {n}', tags []), tokenize_query kept 3 words\n")
    return "".join(lines)[:length]


REPORT = bug_report()


def test_the_limit_is_one_for_every_face_and_fits_real_bug_reports():
    from app.limits import query_request

    assert MAX_QUESTION_CHARS >= 22_778 and len(REPORT) == 12_000  # the longest real report in our sets
    assert query_request(question="x" * MAX_QUESTION_CHARS).question  # the CLI's and MCP's check, as REST's
    with pytest.raises(Exception, match=f"{MAX_QUESTION_CHARS}|{MAX_QUESTION_CHARS:,}"):
        query_request(question="x" * (MAX_QUESTION_CHARS + 1))


async def test_the_engine_refuses_a_question_over_the_limit_in_one_line(service, workspace):
    """The window asks the engine directly: the engine applies the same limit."""
    with pytest.raises(QueryError) as refused:
        await service.query("x" * (MAX_QUESTION_CHARS + 1), QueryOptions(workspace=str(workspace), strategy="none"))
    assert f"{MAX_QUESTION_CHARS:,}" in str(refused.value) and "\n" not in str(refused.value)


def where(result: dict) -> tuple:
    return result["chunk"]["path"], result["chunk"]["start_line"], result["chunk"]["end_line"]


def said_how_it_was_reduced(note: str) -> bool:
    return "12,000 characters" in note and f"{MAX_QUESTION_CHARS:,}" in note and "most telling words" in note


@pytest.mark.slow
async def test_a_12000_character_bug_report_is_answered_by_the_cli_rest_and_mcp_alike(served_workspace):
    from mcp import Client

    key, workspace, data_dir = served_workspace["id"], str(served_workspace["workspace"]), served_workspace["data_dir"]
    body = {"question": REPORT, "strategy": "bug-report", "top_k": 5, "use_cache": False}
    async with httpx.AsyncClient(base_url=served_workspace["url"], timeout=300) as client:
        rest = (await client.post(f"/v1/workspaces/{key}/query", json=body)).json()
        files = (await client.post(f"/v1/workspaces/{key}/files", json=body)).json()
        over = await client.post(f"/v1/workspaces/{key}/query", json={**body, "question": "x" * (MAX_QUESTION_CHARS + 1)})
    assert rest["results"] and rest["results"][0]["chunk"]["path"] == "notes/search.py", rest.get("results")
    assert said_how_it_was_reduced(rest["question_note"]) and "bug-report adds" in rest["question_note"]
    assert files["files"][0]["path"] == "notes/search.py" and said_how_it_was_reduced(files["question_note"])
    assert over.status_code == 422

    # the CLI (through the running server, which owns the data dir): the same answer
    done = subprocess.run(cli("query", workspace, REPORT, "--strategy", "bug-report", "--top-k", "5",
                              "--data-dir", str(data_dir), "--json"),
                          cwd=ROOT, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    mine = json.loads(done.stdout)
    assert [where(r) for r in mine["results"]] == [where(r) for r in rest["results"]]
    assert mine["question_note"] == rest["question_note"]

    async with Client(served_workspace["url"] + "/mcp", read_timeout_seconds=300) as mcp:
        found = (await mcp.call_tool("search", {"question": REPORT, "workspace": key, "strategy": "bug-report",
                                                "top_k": 5})).structured_content
    assert found["question_note"] == rest["question_note"]
    assert [where(r) for r in found["results"]] == [where(r) for r in rest["results"]]
    assert set(found) == set(MCP_FIELDS["search"][1])
