"""`llm`: heuristic-and-llm-reranking.md, LLMReranker over an OpenAI-compatible endpoint.

Off unless settings.llm_base_url is set. One POST {base_url}/chat/completions (temperature 0)
lists the first llm_max_candidates chunks and asks for `[{"index": 1, "score": 8}, ...]`, 0-10.
The answer is read robustly: JSON in a code fence or in prose, a list of objects, a list of
numbers, or an object such as {"scores": [...]} / {"1": 8}. A missing, non-numeric or
out-of-range entry counts as 5. score = llm score / 10. Candidates beyond llm_max_candidates keep
their order after the scored ones. Timeout, HTTP error or an answer with no usable score raise
StrategyUnavailable (the pipeline falls back to the vector ranking).
"""

from __future__ import annotations

import json
import re

from services.core.errors import StrategyUnavailable
from services.core.models import Availability, Candidate, Signal
from services.retrieval.strategies._ranking import explained, tie_key
from services.retrieval.strategies.base import PROBABILITY, BaseStrategy, RerankRequest, register

NEUTRAL = 5.0
PREVIEW_LINES = 6
PREVIEW_CHARS = 400
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def build_prompt(query: str, candidates: list[Candidate]) -> str:
    lines = [f'Rate the relevance (0-10) of each code chunk to the question "{query}".', ""]
    for index, candidate in enumerate(candidates, start=1):
        chunk = candidate.chunk
        name = chunk.qualified_name or chunk.symbol or "(no name)"
        preview = "\n".join(chunk.content.splitlines()[:PREVIEW_LINES])[:PREVIEW_CHARS]
        lines.append(f"{index}. {name} ({chunk.kind}) {chunk.path}:{chunk.start_line}")
        if chunk.docstring:
            lines.append(f"   summary: {chunk.docstring.splitlines()[0][:200]}")
        lines.extend("   " + line for line in preview.splitlines())
    lines += ["", 'Respond with JSON only: [{"index": 1, "score": 8}, ...] '
              "with one entry per chunk, scores from 0 to 10."]
    return "\n".join(lines)


def _json_values(text: str) -> list:
    """Every JSON value we can find: fenced blocks first, then the whole text, then the
    outermost [...] and {...} spans."""
    attempts = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            attempts.append(text[start:end + 1])
    values = []
    for attempt in attempts:
        try:
            values.append(json.loads(attempt.strip()))
        except ValueError:
            continue
    return values


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0.0 <= number <= 10.0 else None


def _entries(value) -> dict[int, float | None]:
    """1-based index -> score (None when unusable) from one parsed JSON value."""
    if isinstance(value, dict):
        for key in ("scores", "results", "rankings", "ratings"):
            if isinstance(value.get(key), list | dict):
                return _entries(value[key])
        if "index" in value:
            return _entries([value])
        return {int(k): _number(v) for k, v in value.items() if str(k).strip().isdigit()}
    if not isinstance(value, list):
        return {}
    found: dict[int, float | None] = {}
    for position, item in enumerate(value, start=1):
        if isinstance(item, dict):
            index = item.get("index", item.get("id", position))
            try:
                found[int(index)] = _number(item.get("score", item.get("relevance")))
            except (TypeError, ValueError):
                continue
        else:
            found[position] = _number(item)
    return found


def parse_scores(text: str, count: int) -> list[float]:
    """0-10 scores for candidates 1..count; raises ValueError when nothing usable is found."""
    for value in _json_values(text):
        entries = {i: s for i, s in _entries(value).items() if 1 <= i <= count}
        if entries:
            return [entries.get(i) if entries.get(i) is not None else NEUTRAL
                    for i in range(1, count + 1)]
    raise ValueError(f"no scores found in the model's answer: {text[:120]!r}")


@register
class LLMStrategy(BaseStrategy):
    name = "llm"
    label = "LLM judge"
    description = ("Asks a language model (OpenAI-compatible endpoint) to rate each chunk's "
                   "relevance 0-10. Needs KE_LLM_BASE_URL.")
    scale = PROBABILITY
    order = 70

    def availability(self) -> Availability:
        s = self.settings
        if not s.llm_base_url:
            return Availability(False, "set KE_LLM_BASE_URL (and KE_LLM_MODEL, OPENAI_API_KEY) to enable")
        return Availability(True, f"{s.llm_model or 'default model'} at {s.llm_base_url}")

    def pool_size(self, top_k: int) -> int:
        return max(top_k, self.settings.llm_max_candidates)

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        candidates = list(request.candidates)
        if not candidates:
            return candidates
        if not self.settings.llm_base_url:
            raise StrategyUnavailable(self.availability().reason)
        head = candidates[:self.settings.llm_max_candidates]
        answer = self.ask(build_prompt(request.query, head))
        try:
            scores = parse_scores(answer, len(head))
        except ValueError as error:
            raise StrategyUnavailable(f"LLM reranker: {error}") from None
        scored = sorted((explained(c, [Signal(f"LLM score {s:g}/10", s, s / 10.0, "set", self.settings.llm_model)])
                         for c, s in zip(head, scores)),
                        key=lambda c: (-c.score, *tie_key(c)))
        return scored + candidates[len(head):]

    def ask(self, prompt: str) -> str:
        """One chat completion; the answer's text. Raises StrategyUnavailable on any failure."""
        import httpx  # here, not at the top: the strategy list is read on every cold start (httpx: ~0.1 s)

        s = self.settings
        url = s.llm_base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {s.llm_api_key}"} if s.llm_api_key else {}
        body = {"model": s.llm_model, "temperature": 0,
                "messages": [{"role": "user", "content": prompt}]}
        try:
            response = httpx.post(url, json=body, headers=headers, timeout=s.llm_timeout_seconds)
            response.raise_for_status()
            return response.json()["choices"][0]["message"]["content"] or ""
        except httpx.TimeoutException:
            raise StrategyUnavailable(
                f"LLM reranker timed out after {s.llm_timeout_seconds:g} s ({url})") from None
        except httpx.HTTPStatusError as error:
            raise StrategyUnavailable(
                f"LLM reranker: HTTP {error.response.status_code} from {url}") from None
        except httpx.HTTPError as error:
            raise StrategyUnavailable(f"LLM reranker could not reach {url}: {error}") from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise StrategyUnavailable(f"LLM reranker: {url} did not answer in the chat format") from None
