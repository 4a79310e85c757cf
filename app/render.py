"""One rendering of the engine's answers as JSON, shared by every face (CLI `--json`, REST, MCP), and the
CLI's text beside it.

Everything goes through the one codec (services.core.codec, a pydantic TypeAdapter per type), so
`query --json` and `POST /v1/workspaces/{id}/query` print the same JSON for the same answer. MCP
returns a documented subset of that JSON (the same names and values, fewer fields): MCP_FIELDS.
The JSON schema of every output is snapshotted in tests/snapshots (see tests/test_faces.py).
"""

from __future__ import annotations

import re
from typing import Any

from services.core import codec
from services.core.messages import DocumentRerankResponse, IndexStatus, SearchRerankHit, SearchRerankResponse
from services.core.models import (
    FileAnswer, IndexHealth, IndexReport, MultiQueryResult, QueryResult, StrategyInfo,
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
    "original_ranking": True,
    "results": {"__all__": {
        "rank": True, "score": True, "original_rank": True, "original_score": True, "stale": True,
        "chunk": {"path": True, "start_line": True, "end_line": True, "symbol": True, "qualified_name": True,
                  "kind": True, "language": True},
    }},
}
FILES_FIELDS = {
    "question": True, "strategy": True, "history": True, "before": True, "original": True, "question_note": True,
    "strategy_note": True, "warning": True,
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
                         "kind": True, "language": True, "score": True, "stale": True}},
}
GRAPH_FIELDS = {
    "query": True, "direction": True, "total": True, "message": True,
    "targets": {"__all__": {"path": True, "start_line": True, "end_line": True, "qualified_name": True, "kind": True,
                            "stale": True}},
    "files": {"__all__": {"path": True, "links": {"__all__": {"line": True, "name": True, "how": True,
                                                              "qualified_name": True, "kind": True, "lines": True,
                                                              "stale": True}}}},
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


# --- the CLI's text (`--json` prints the JSON above); every part a terminal shows passes through shown ---
# C0 and C1 controls (ESC, CSI, newline, carriage return, ...), bidirectional overrides, lone surrogates
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def shown(text, keep: str = "") -> str:
    """`text` as a terminal may print it: each control character (an escape sequence's ESC, a newline in a
    file name) written as its escape, `\\x1b`, `\\n`; those in `keep` are left."""
    return UNSAFE.sub(lambda m: m.group() if m.group() in keep else
                       m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), str(text))


def chunk_text(chunk) -> str:
    """path:lines  kind name, each part escaped (shown)."""
    return (f"{shown(chunk.path)}:{chunk.start_line}-{chunk.end_line}  {chunk.kind} "
            f"{shown(chunk.qualified_name or chunk.symbol)}")


def query_text(result) -> str:
    lines = [f"{result.question!r} with {result.strategy}"
             + (f" (fell back to the original ranking: {result.fallback_reason})" if result.fallback_reason else "")]
    if result.warning:
        lines.append(f"warning: {shown(result.warning)}")
    if result.strategy_note and not (result.reading_note and result.strategy_note.startswith("read as")):
        lines.append(f"({shown(result.strategy_note)})")  # a name's reading note says the same, and what was found
    if result.reading_note:
        lines.append(f"({shown(result.reading_note)})")
    for r in result.results:
        was = f"was {r.original_rank}" if r.original_rank else "new"
        original = f"{r.original_score:.3f}" if r.original_score is not None else "  -  "
        lines.append(f"{r.rank:>3}. {r.score:7.3f} (orig {original}, {was:>6})  "
                     f"{chunk_text(r.chunk)}" + stale_mark(r.stale))
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in result.timings_ms.items())
    lines.append(f"({timings}{'; cache hit' if result.cache_hit else ''})")
    return "\n".join(lines)


def multi_query_text(result) -> str:
    """Like query_text, each line naming the workspace it comes from."""
    counts = ", ".join(f"{hit_name(result, w)} {n}" for w, n in result.searched.items())
    lines = [f"{result.question!r} with {result.strategy} over {len(result.workspaces)} workspaces ({counts})"]
    width = max((len(shown(h.name)) for h in result.results), default=0)
    for h in result.results:
        r = h.result
        lines.append(f"{h.rank:>3}. [{shown(h.name):<{width}}] {h.evidence:5.2f} (#{r.rank} there, {r.score:.3f})  "
                     f"{chunk_text(r.chunk)}" + stale_mark(r.stale))
    lines.extend(f"(not reranked in {hit_name(result, w)}: {why})" for w, why in result.fallback_reasons.items())
    lines.extend(f"warning, {hit_name(result, w)}: {why}" for w, why in result.warnings.items())
    lines.append(f"(total {result.timings_ms.get('total', 0.0):.1f} ms)")
    return "\n".join(lines)


def hit_name(result, workspace: str) -> str:
    """The label the results use for a workspace (its folder name)."""
    from services.retrieval.multi import display_names

    return shown(display_names(result.workspaces)[workspace])


def files_text(answer) -> str:
    """Per file: rank, score, movement against the `none` order, path, best chunks, then why."""
    cut = f", before {answer.before}" if answer.before is not None else ""
    lines = [f"{answer.question!r} with {answer.strategy}, as files (history: {answer.history}{cut})"]
    if answer.warning:
        lines.append(f"warning: {shown(answer.warning)}")
    if answer.strategy_note:
        lines.append(f"({shown(answer.strategy_note)})")
    for f in answer.files:
        was = f"was {f.original_rank}" if f.original_rank else "new"
        chunks = ", ".join(f"{shown(c.symbol or 'lines')} {c.start_line}-{c.end_line}" for c in f.chunks)
        lines.append(f"{f.rank:>3}. {f.score:6.3f} ({was:>6})  {shown(f.path)}" + (f"  [{chunks}]" if chunks else ""))
        lines.extend(f"         {s.contribution:+.2f}  {shown(s.note)}" for s in f.signals)
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in answer.timings_ms.items())
    lines.append(f"({timings})")
    return "\n".join(lines)


def health_text(health) -> str:
    """The health lines, then one line for each repair made in the workspace's stores (in every state)."""
    return _health_text(health) + "".join(f"\n  repaired: {shown(line)}" for line in health.repaired)


def _health_text(health) -> str:
    from services.core.models import state_label, vectors_reused_text

    first = f"{health.workspace}: {state_label(health)}" + (f" ({health.message})" if health.message else "")
    if not health.indexed:
        hint = "" if health.state != "missing" else f"\nRun: knowledge-explorer index {health.workspace}"
        return first + hint + (f"\nLast error: {health.last_error}" if health.last_error and health.last_error not in first else "")
    if health.state == "unavailable":  # it cannot be read now: its one line says why
        return f"{health.workspace}: {health.message}" + (f"\nLast error: {health.last_error}" if health.last_error else "")
    if health.state == "damaged" and not health.model:  # nothing of it can be read
        return first
    languages = ", ".join(f"{k} {v}" for k, v in health.languages.items())
    lines = [first,
             f"  {health.files} files, {health.chunks} chunks ({languages})",
             f"  model {health.model}, {health.vectors or f'{health.dimension} dimensions'}, {health.backend} on {health.device}, "
             f"{health.size_bytes / 1e6:.1f} MB on disk",
             f"  created {health.created_at}, updated {health.updated_at}"]
    if health.history:
        lines.append(f"  history: {health.history}")
    if health.last_run_vectors:
        lines.append(f"  {vectors_reused_text(health.last_run_reused, health.last_run_vectors)} (last run)")
    if health.vector_cache and health.vector_cache != "on":
        lines.append(f"  shared vector cache: {health.vector_cache}")
    if health.chunks_embedded is not None and health.chunks_embedded < health.chunks:
        lines.append(f"  semantic: {100 * health.chunks_embedded // health.chunks}% of {health.chunks:,} chunks "
                     "embedded so far (keyword search covers them all)")
    lines += [f"  {s.change:>8}: {shown(s.path)}" for s in health.stale_files]
    lines += [f"  skipped: {shown(s.path)} ({shown(s.reason)})" for s in health.skipped]
    if health.encoder_note:
        lines.append(f"  note: {health.encoder_note}")
    if health.last_error:
        lines.append(f"  last error: {health.last_error}")
    return "\n".join(lines)


def index_report_text(report) -> str:
    from services.core.models import vectors_reused_text

    lines = []
    if report.rebuilt_reason:
        lines.append(f"Rebuilt the index: {report.rebuilt_reason}.")
    lines.append(f"{report.files_indexed} files indexed, {report.files_unchanged} unchanged, "
                 f"{report.files_removed} removed; {report.chunks_embedded} chunks embedded, "
                 f"{report.chunks_total} in the index ({report.seconds:.1f} s).")
    if report.vectors_reused:
        lines.append(f"{vectors_reused_text(report.vectors_reused, report.chunks_embedded).capitalize()} "
                     "(the same chunks, embedded before in this data dir).")
    if report.message:
        lines.append(report.message[:1].upper() + report.message[1:] + ".")
    if report.failed:
        lines.append("Failed: " + ", ".join(f"{n} {reason}" for reason, n in report.failed.items()) + ".")
    if report.skipped:
        lines.append(f"{len(report.skipped)} files skipped:")
        lines.extend(f"  {shown(s.path)}: {shown(s.reason)}" for s in report.skipped)
    return "\n".join(lines)


def strategies_text(infos) -> str:
    return "\n".join(f"{s.name:<14} {'available' if s.available else f'unavailable: {s.reason}'}\n"
                     f"{'':<14} {s.description}" for s in infos)


def goto_text(answer) -> str:
    """One line per match: rank, kind and name, path:lines; a name defined in several places shows each."""
    if not answer.hits:
        return shown(answer.message)
    lines = []
    for rank, hit in enumerate(answer.hits, 1):
        where = f"{shown(hit.path)}:{hit.start_line}" + (f"-{hit.end_line}" if hit.end_line > hit.start_line else "")
        name = "" if hit.kind == "file" else f"{hit.kind} {shown(hit.qualified_name or hit.symbol)}  "
        lines.append(f"{rank:>3}. {name}{where}  ({hit.language})" + stale_mark(hit.stale))
    more = answer.matched - len(answer.hits)
    if more > 0:
        lines.append(f"({more:,} more match{'es' if more > 1 else ''}; --limit shows more)")
    return "\n".join(lines)


def stale_mark(stale: str) -> str:
    """"  [modified]" after a location whose file changed since it was indexed (as a query result's)."""
    return f"  [{stale}]" if stale else ""


def graph_text(answer) -> str:
    """The definitions asked about, then per file one line per use (refs) or definition used (uses)."""
    lines = [f"{hit.kind} {shown(hit.qualified_name)} ({shown(hit.path)}:{hit.start_line})" + stale_mark(hit.stale)
             for hit in answer.targets]
    if answer.message:
        lines.append(shown(answer.message))
    for group in answer.files:
        lines.append(shown(group.path))
        for link in group.links:
            if answer.direction == "uses":
                at = ", ".join(map(str, link.lines))
                lines.append(f"  {link.line:>6}  {link.kind} {shown(link.qualified_name)}  ({link.how}, line {at})"
                             + stale_mark(link.stale))
            else:
                lines.append(f"  {link.line:>6}  {link.how:<9} in {shown(link.qualified_name) or '(file)'}")
    if answer.total:
        noun = "definitions" if answer.direction == "uses" else "uses"
        lines.append(f"({answer.total:,} {noun} in {len(answer.files):,} files)")
    return "\n".join(lines)


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
