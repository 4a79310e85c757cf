"""Issue 42, nothing silent, nothing hangs: requests generated from the REST server's OpenAPI document and
from the MCP tools' input schemas, sent to a real `knowledge-explorer serve` on 127.0.0.1 with its own data
dir and a copy of the sample workspace (the only folder it may register). None may get a 5xx or hang
(tests/helpers/fuzz.py). A few examples per operation here, derandomized; KE_FUZZ_EXAMPLES=N for more
(benchmarks/fuzz_faces.py records the long run)."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.fuzz import examples, fuzz_mcp, fuzz_rest, fuzz_server

pytestmark = pytest.mark.slow  # a real server and the model


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """A server of its own, allowed only under its own folder, with the sample copy registered and indexed."""
    yield from fuzz_server(tmp_path_factory.mktemp("fuzz"))


def findings(tally) -> str:
    return "\n".join(tally.server_errors[:10] + [f"hang: {h}" for h in tally.hangs[:10]])


def test_generated_rest_requests_get_no_5xx_and_no_hang(fuzzed):
    tally = fuzz_rest(fuzzed["url"], fuzzed["openapi"], fuzzed["id"], examples())
    assert tally.requests > 0
    assert not tally.server_errors and not tally.hangs, findings(tally)


def test_generated_mcp_calls_get_no_server_error_and_no_hang(fuzzed):
    tally = fuzz_mcp(fuzzed["url"], str(fuzzed["workspace"]), examples())
    assert tally.requests > 0
    assert not tally.server_errors and not tally.hangs, findings(tally)


# --- what the generated requests found, through the server ---
def test_a_label_with_a_line_separator_keeps_the_labels_readable(fuzzed):
    with httpx.Client(base_url=fuzzed["url"], timeout=60) as client:
        labels = f"/v1/workspaces/{fuzzed['id']}/labels"
        put = client.put(labels, json={"question": "q\x0f", "path": "\x85"})
        assert put.status_code == 200, put.text
        assert client.get(labels, params={"question": "q\x0f"}).json()["labels"][0]["path"] == "\x85"
        assert client.get(labels, params={"question": "another"}).status_code == 200


def test_the_home_of_no_user_is_refused_in_words(fuzzed):
    with httpx.Client(base_url=fuzzed["url"], timeout=60) as client:
        answer = client.post("/v1/workspaces", json={"path": "~no-such-user-ke-42"})
    assert (answer.status_code, answer.json()["error"]["code"]) == (400, "bad_workspace"), answer.text
