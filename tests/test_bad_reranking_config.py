"""A bad reranking config never takes a workspace down (issue 42): NaN, infinity or an out-of-range threshold is
refused with a 4xx naming the field and its range, storing nothing, and a bad value already stored is ignored
with a note on the answers, never a failed query. Real parts: uvicorn on 127.0.0.1 in a thread, httpx, the
engine with a real index (the stand-in model) and store."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from services.core.models import QueryOptions
from tests.helpers.engine_server import one_file_server
from tests.helpers.stand_in_encoder import stand_in_settings

pytestmark = pytest.mark.stand_in_encoder  # the config is tested, not the model


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, workspace id, service, workspace folder): a small workspace, indexed, on a served engine."""
    with one_file_server(tmp_path_factory.mktemp("reranking-config"), "adder.py",
                         "def add_numbers(a, b):\n    return a + b\n", stand_in_settings()) as (url, key, service, workspace):
        asyncio.run(service.index(workspace))
        yield url, key, service, workspace


def put_config(url: str, key: str, raw: str) -> httpx.Response:
    """PUT a JSON text as it is (httpx will not write NaN or Infinity, a Python client's json.dumps does)."""
    return httpx.put(f"{url}/v1/workspaces/{key}/reranking/config", content=raw.encode(),
                     headers={"content-type": "application/json"}, timeout=60)


def ask(url: str, key: str) -> httpx.Response:
    body = {"question": "add numbers", "strategy": "none", "use_cache": False}
    return httpx.post(f"{url}/v1/workspaces/{key}/query", json=body, timeout=120)


@pytest.mark.parametrize("value, shown", [("NaN", "nan"), ("Infinity", "inf"), ("-Infinity", "-inf"), ("1.5", "1.5"),
                                          ("-0.1", "-0.1")])
def test_a_threshold_that_is_not_a_finite_number_from_0_to_1_is_refused_and_not_stored(served, value, shown):
    url, key, _service, _workspace = served
    before = httpx.get(f"{url}/v1/workspaces/{key}/reranking/config").json()
    response = put_config(url, key, f'{{"strategy": "none", "score_threshold": {value}}}')
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"] == \
        f"score_threshold: Input should be a finite number from 0 to 1 (got {shown})"
    assert httpx.get(f"{url}/v1/workspaces/{key}/reranking/config").json() == before
    answer = ask(url, key)
    assert answer.status_code == 200 and answer.json()["results"][0]["chunk"]["symbol"] == "add_numbers"
    assert answer.json()["warning"] == ""


def test_raw_scores_are_refused_with_why_and_nothing_is_stored(served):
    url, key, _service, _workspace = served
    before = httpx.get(f"{url}/v1/workspaces/{key}/reranking/config").json()
    response = put_config(url, key, '{"strategy": "none", "normalize_scores": false}')
    assert response.status_code == 422, response.text
    assert response.json()["error"]["message"].startswith("normalize_scores: Scores are always normalized to 0-1")
    assert httpx.get(f"{url}/v1/workspaces/{key}/reranking/config").json() == before


def test_a_bad_stored_value_is_ignored_with_a_note_and_queries_still_answer(served):
    url, key, service, workspace = served
    assert put_config(url, key, '{"strategy": "none", "score_threshold": 0.3}').status_code == 200
    # as a store written before the check would hold it
    service.reranking.changes[workspace.resolve()] = {"cross_encoder_score_threshold": float("nan")}
    answer = ask(url, key)
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["chunk"]["symbol"] == "add_numbers"
    assert answer.json()["warning"].startswith("This workspace's reranker settings were ignored")
    assert "cross_encoder_score_threshold" in answer.json()["warning"]
    assert asyncio.run(service.query("add numbers", QueryOptions(str(workspace), strategy="none"))).warning
    assert put_config(url, key, '{"strategy": "none", "score_threshold": 0.2}').status_code == 200
    assert ask(url, key).json()["warning"] == ""  # configured again: no note
