"""The LLM reranker against a real local HTTP server speaking the OpenAI chat protocol."""

from __future__ import annotations

import json

import pytest

from services.core.errors import StrategyUnavailable
from services.retrieval.strategies import create_strategy
from services.retrieval.strategies.llm import parse_scores
from services.core.settings import Settings
from tests.helpers.chat_server import ChatServer
from tests.helpers.reranking import chunk, names, ranked, request

QUERY = "where are sessions saved"


@pytest.fixture
def server():
    with ChatServer() as running:
        yield running


def llm(server, **changes):
    values = {"llm_base_url": server.base_url, "llm_model": "tiny-judge", "llm_api_key": "sk-test",
              "llm_timeout_seconds": 5.0, **changes}
    settings = Settings().with_changes(**values)
    return create_strategy("llm", settings)


def three():
    return ranked([chunk("load_config"), chunk("save_session"), chunk("parse_token")], [0.7, 0.6, 0.5])


def test_off_without_a_base_url():
    strategy = create_strategy("llm", Settings())
    assert not strategy.availability().available
    assert "KE_LLM_BASE_URL" in strategy.availability().reason
    with pytest.raises(StrategyUnavailable, match="KE_LLM_BASE_URL"):
        strategy.rerank(request(QUERY, three()))


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_good_json_reorders_and_scales_to_zero_one(server):
    server.reply = '[{"index": 1, "score": 2}, {"index": 2, "score": 9}, {"index": 3, "score": 5}]'
    strategy = llm(server)
    assert strategy.availability().available
    result = strategy.rerank(request(QUERY, three()))
    assert names(result) == ["save_session", "parse_token", "load_config"]
    assert [c.score for c in result] == pytest.approx([0.9, 0.5, 0.2])
    assert [sig.name for c in result for sig in c.signals] == ["LLM score 9/10", "LLM score 5/10", "LLM score 2/10"]
    assert result[0].original_score == 0.6 and result[0].original_rank == 2


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_request_follows_the_chat_protocol(server):
    server.reply = "[]"
    with pytest.raises(StrategyUnavailable):
        llm(server).rerank(request(QUERY, three()))
    sent = server.received[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    body = sent["body"]
    assert body["model"] == "tiny-judge" and body["temperature"] == 0
    prompt = body["messages"][-1]["content"]
    assert QUERY in prompt and "1. load_config" in prompt and "3. parse_token" in prompt
    assert '"index"' in prompt and "src/save_session.py" in prompt


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_fenced_json_in_prose_is_understood(server):
    server.reply = ("Sure! Here are the ratings:\n```json\n"
                    '[{"index": 3, "score": 10}, {"index": 1, "score": 4}]\n```\nHope this helps.')
    result = llm(server).rerank(request(QUERY, three()))
    assert names(result) == ["parse_token", "save_session", "load_config"]  # missing #2 -> 5
    assert [c.score for c in result] == pytest.approx([1.0, 0.5, 0.4])


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_garbage_answer_makes_the_strategy_unavailable(server):
    server.reply = "I cannot rate these, sorry."
    with pytest.raises(StrategyUnavailable, match="no scores"):
        llm(server).rerank(request(QUERY, three()))


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_slow_server_times_out(server):
    server.delay = 1.5
    server.reply = '[{"index": 1, "score": 9}]'
    with pytest.raises(StrategyUnavailable, match="timed out"):
        llm(server, llm_timeout_seconds=0.3).rerank(request(QUERY, three()))


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_http_500_makes_the_strategy_unavailable(server):
    server.status = 500
    with pytest.raises(StrategyUnavailable, match="HTTP 500"):
        llm(server).rerank(request(QUERY, three()))


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_unreachable_endpoint_is_reported():
    settings = Settings().with_changes(llm_base_url="http://127.0.0.1:9/v1", llm_timeout_seconds=2.0)
    with pytest.raises(StrategyUnavailable, match="could not reach"):
        create_strategy("llm", settings).rerank(request(QUERY, three()))


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_only_the_first_max_candidates_are_sent_and_the_rest_keep_their_order(server):
    many = ranked([chunk(f"c{i}") for i in range(6)], [0.9 - 0.1 * i for i in range(6)])
    server.reply = lambda body: json.dumps([{"index": i, "score": i * 2} for i in (1, 2, 3)])
    result = llm(server, llm_max_candidates=3).rerank(request(QUERY, many))
    assert names(result) == ["c2", "c1", "c0", "c3", "c4", "c5"]
    assert [c.score for c in result[3:]] == [c.score for c in many[3:]]
    assert "4. " not in server.received[0]["body"]["messages"][-1]["content"]


@pytest.mark.parametrize("answer, expected", [
    ('[{"index": 1, "score": 8}, {"index": 2, "score": 3}]', [8, 3, 5]),
    ('{"scores": [{"index": 2, "score": 7}]}', [5, 7, 5]),
    ('{"1": 9, "3": 1}', [9, 5, 1]),
    ("[6, 7, 8]", [6, 7, 8]),
    ('[{"index": 1, "score": 42}, {"index": 2, "score": "high"}, {"index": 3, "score": -1}]', [5, 5, 5]),
    ('Scores: [{"index": 2, "score": 10}] done', [5, 10, 5]),
])
def test_parse_scores_forms(answer, expected):
    assert parse_scores(answer, 3) == expected


def test_parse_scores_rejects_answers_without_scores():
    for answer in ("", "no json here", '{"note": "nothing"}', "[]"):
        with pytest.raises(ValueError):
            parse_scores(answer, 3)
