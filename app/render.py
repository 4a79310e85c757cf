"""One rendering of the engine's answers as JSON, shared by every face (CLI `--json`, REST, MCP).

Everything goes through the one codec (services.core.codec, a pydantic TypeAdapter per type), so
`query --json` and `POST /v1/workspaces/{id}/query` print the same JSON for the same answer. MCP
returns a documented subset of that JSON (the same names and values, fewer fields): MCP_FIELDS.
The JSON schema of every output is snapshotted in tests/snapshots (see tests/test_faces.py).
"""

from __future__ import annotations

from typing import Any

from services.core import codec
from services.core.messages import DocumentRerankResponse, IndexStatus, SearchRerankHit, SearchRerankResponse
from services.core.models import (
    FileAnswer, IndexHealth, IndexReport, MultiQueryResult, QueryResult, RelevantFile, StrategyInfo,
)
from services.core.models import GotoAnswer  # go to symbol / file
from services.core.models import GraphAnswer  # find references, uses

# Every face's output type, by the name of its schema snapshot (tests/snapshots/NAME.json).
OUTPUTS: dict[str, Any] = {
    "query_result": QueryResult,
    "health": IndexHealth,
    "index_report": IndexReport,
    "index_status": IndexStatus,
    "strategies": list[StrategyInfo],
    "relevant_files": list[RelevantFile],
    "search_rerank_response": SearchRerankResponse,
    "document_rerank_response": DocumentRerankResponse,
    "file_answer": FileAnswer,
    "multi_query_result": MultiQueryResult,
    "goto_answer": GotoAnswer,
    "graph_answer": GraphAnswer,
}

# What MCP's tools return: fields of the JSON above (True: the whole value; "__all__": every list item).
SEARCH_FIELDS = {
    "question": True, "strategy": True, "reranked": True, "fallback_reason": True,
    "reading": True, "reading_note": True, "warning": True, "question_note": True, "strategy_note": True,
    "results": {"__all__": {
        "rank": True, "score": True, "original_rank": True, "original_score": True, "stale": True,
        "chunk": {"path": True, "start_line": True, "end_line": True, "symbol": True, "qualified_name": True,
                  "kind": True, "language": True},
    }},
}
FILES_FIELDS = {
    "question": True, "strategy": True, "history": True, "before": True, "original": True, "question_note": True,
    "strategy_note": True,
    "files": {"__all__": {
        "path": True, "rank": True, "score": True, "original_rank": True,
        "chunks": {"__all__": {"start_line": True, "end_line": True, "symbol": True, "rank": True}},
        "signals": {"__all__": {"name": True, "contribution": True, "note": True}},
    }},
}
SEARCH_MANY_FIELDS = {
    "question": True, "strategy": True, "workspaces": True, "searched": True, "fallback_reasons": True, "warnings": True,
    "question_note": True, "unanswered": True,
    "results": {"__all__": {
        "workspace": True, "name": True, "rank": True, "evidence": True,
        "result": SEARCH_FIELDS["results"]["__all__"],
    }},
}
GOTO_FIELDS = {
    "query": True, "target": True, "matched": True, "line": True, "message": True,
    "hits": {"__all__": {"path": True, "start_line": True, "end_line": True, "symbol": True, "qualified_name": True,
                         "kind": True, "language": True, "score": True}},
}
GRAPH_FIELDS = {
    "query": True, "direction": True, "total": True, "message": True,
    "targets": {"__all__": {"path": True, "start_line": True, "end_line": True, "qualified_name": True, "kind": True}},
    "files": {"__all__": {"path": True, "links": {"__all__": {"line": True, "name": True, "how": True,
                                                              "qualified_name": True, "kind": True, "lines": True}}}},
}
STRATEGY_FIELDS = {"name": True, "available": True, "reason": True, "description": True}
# MCP tool -> (output type, fields); list_strategies wraps its list as {"strategies": [...]}.
MCP_FIELDS: dict[str, tuple[Any, Any]] = {
    "search": (QueryResult, SEARCH_FIELDS),
    "search_many": (MultiQueryResult, SEARCH_MANY_FIELDS),  # `search` with `workspaces`
    "find_files": (FileAnswer, FILES_FIELDS),
    "index_status": (IndexHealth, True),
    "reindex": (IndexReport, True),
    "list_strategies": (list[StrategyInfo], {"__all__": STRATEGY_FIELDS}),
    "find_symbol": (GotoAnswer, GOTO_FIELDS),
    "find_file": (GotoAnswer, GOTO_FIELDS),
    "find_references": (GraphAnswer, GRAPH_FIELDS),
    "find_uses": (GraphAnswer, GRAPH_FIELDS),
}


def to_json(value: Any, kind: Any = None) -> Any:
    """The JSON of any engine value (a dataclass of services.core.models or .messages, or a list: pass `kind`)."""
    return codec.encode(value, kind)


def query_json(result: QueryResult) -> dict:
    return to_json(result, QueryResult)


def multi_query_json(result: MultiQueryResult) -> dict:
    return to_json(result, MultiQueryResult)


def files_json(answer: FileAnswer) -> dict:
    return to_json(answer, FileAnswer)


def health_json(health: IndexHealth) -> dict:
    return to_json(health, IndexHealth)


def index_report_json(report: IndexReport) -> dict:
    return to_json(report, IndexReport)


def goto_json(answer: GotoAnswer) -> dict:
    return to_json(answer, GotoAnswer)


def graph_json(answer: GraphAnswer) -> dict:
    return to_json(answer, GraphAnswer)


def strategies_json(infos) -> list[dict]:
    return to_json(list(infos), list[StrategyInfo])


def mcp_json(tool: str, value: Any) -> dict:
    """What MCP's `tool` returns for the engine's `value`: the subset MCP_FIELDS names of its JSON."""
    kind, fields = MCP_FIELDS[tool]
    data = codec.encode(value, kind, include=None if fields is True else fields)
    return {"strategies": data} if tool == "list_strategies" else data


def search_rerank_response(result: QueryResult, model: str, strategy: str) -> SearchRerankResponse:
    """The spec's search-then-rerank response (POST …/search/rerank), from the pipeline's QueryResult."""
    hits = [SearchRerankHit(r.chunk.id, r.original_score, r.score, r.score,
                            {"path": r.chunk.path, "start_line": r.chunk.start_line, "end_line": r.chunk.end_line,
                             "symbol": r.chunk.qualified_name or r.chunk.symbol, "kind": r.chunk.kind,
                             "language": r.chunk.language, "text": r.chunk.content, "stale": r.stale})
            for r in result.results]
    timings = result.timings_ms
    return SearchRerankResponse(
        hits, result.pool_size or result.chunks_above_threshold, len(hits),
        round(timings.get("embed", 0.0) + timings.get("search", 0.0), 2), timings.get("rerank", 0.0),
        timings.get("total", 0.0), model, strategy, result.reranked, result.fallback_reason)


# --- JSON schemas (the snapshots) ---
def schemas() -> dict[str, dict]:
    """The JSON schema of every face's output: OUTPUTS by name, and "mcp_TOOL" for MCP's subsets."""
    found = {name: codec.schema(kind) for name, kind in OUTPUTS.items()}
    for tool, (kind, fields) in MCP_FIELDS.items():
        schema = subset_schema(codec.schema(kind), fields)
        if tool == "list_strategies":
            schema = {"type": "object", "properties": {"strategies": schema}, "required": ["strategies"]}
        found[f"mcp_{tool}"] = schema
    return found


def subset_schema(schema: dict, fields: Any) -> dict:
    """`schema` cut to `fields` (as in MCP_FIELDS), with its $refs resolved inline."""
    defs = schema.get("$defs", {})

    def pick(node: dict, wanted: Any) -> dict:
        if "$ref" in node:
            node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
        if "anyOf" in node:
            return {**node, "anyOf": [pick(option, wanted) for option in node["anyOf"]]}
        if wanted is True or node.get("type") == "null":
            return {k: resolve(v) for k, v in node.items() if k != "$defs"}
        if node.get("type") == "array":
            return {**node, "items": pick(node["items"], wanted["__all__"])}
        properties = {name: pick(node["properties"][name], sub) for name, sub in wanted.items()}
        return {**node, "properties": properties, "required": [r for r in node.get("required", []) if r in wanted]}

    def resolve(value: Any) -> Any:
        if isinstance(value, dict):
            return pick(value, True) if "$ref" in value else {k: resolve(v) for k, v in value.items()}
        return [resolve(v) for v in value] if isinstance(value, list) else value

    picked = pick(schema, fields)
    picked.pop("$defs", None)
    return picked
