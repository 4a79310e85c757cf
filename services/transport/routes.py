"""Every REST route of the engine, said once: its name (the server's handler and OpenAPI's operation), method,
path, response type, summary and status. The server registers its handlers from this table in one loop
(app.server.register_routes, as chroma's `add_api_route` list) and the remote client builds every URL from it
(`url`, as datasette's `urls`); app.operations names the route of each operation by its key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from services.core.messages import (
    DocumentRerankResponse, IndexStatus, Labels, RerankingConfig, SearchRerankResponse, Workspace,
)
from services.core.models import (
    FileAnswer, GotoAnswer, GraphAnswer, IndexHealth, MultiQueryResult, QueryResult, StrategyInfo,
)


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    response: Any = None  # the response model (OpenAPI's schema); None: none declared
    summary: str | None = None
    status: int | None = None  # None: 200


WS = "/v1/workspaces/{workspace_id}"

ROUTES: dict[str, Route] = {
    # health
    "server_health": Route("GET", "/v1/health", None, "Is the engine up"),
    "health": Route("GET", f"{WS}/health", IndexHealth),
    # workspaces, index runs, watching
    "register": Route("POST", "/v1/workspaces", Workspace, "Register a folder", 201),
    "workspaces": Route("GET", "/v1/workspaces", list[Workspace]),
    "start_index": Route("POST", f"{WS}/index", IndexStatus,
                         "Start an (incremental) index run; follow it with GET …/index or …/index/events", 202),
    "index_status": Route("GET", f"{WS}/index", IndexStatus),
    "index_events": Route("GET", f"{WS}/index/events", None, "Index progress as server-sent events"),
    "cancel_index": Route("DELETE", f"{WS}/index", IndexStatus, "Cancel the run"),
    "watch": Route("PUT", f"{WS}/watch", None, "Keep the index fresh while the folder changes"),
    "watch_events": Route("GET", f"{WS}/watch/events", None,
                          "The watched folder's events (stale files, automatic runs, paused/resumed) as server-sent "
                          "events"),
    "unwatch": Route("DELETE", f"{WS}/watch", None, "Stop watching the folder"),
    "pause_watch": Route("POST", f"{WS}/watch/pause", None,
                         "Cancel the automatic run under way; index changes again after the next user's run"),
    # questions, strategies, reranking
    "query": Route("POST", f"{WS}/query", QueryResult, "Ask a question: both rankings, signals and stale flags"),
    "query_many": Route("POST", "/v1/query", MultiQueryResult,
                        "Ask a question over several registered workspaces: one merged ranking, each result "
                        "labelled with its workspace"),
    "files": Route("POST", f"{WS}/files", FileAnswer,
                   "Ask a question, answered as ranked files with the signals that rank them"),
    "search_rerank": Route("POST", f"{WS}/search/rerank", SearchRerankResponse),
    "configure": Route("PUT", f"{WS}/reranking/config", RerankingConfig),
    "reranking_config": Route("GET", f"{WS}/reranking/config", RerankingConfig),
    "strategies": Route("GET", "/v1/strategies", list[StrategyInfo]),
    "rerank": Route("POST", "/v1/rerank", DocumentRerankResponse, "Rerank arbitrary documents"),
    # navigation
    "symbols": Route("GET", f"{WS}/symbols", list[str]),
    "goto_symbols": Route("GET", f"{WS}/goto/symbols", GotoAnswer,
                          "Go to symbol: definitions whose names fuzzily match q (`fm`, `Class.method`)"),
    "goto_files": Route("GET", f"{WS}/goto/files", GotoAnswer,
                        "Go to file: indexed files whose paths fuzzily match q (`latex.py:120` asks for line 120)"),
    "graph_references": Route("GET", f"{WS}/graph/references", GraphAnswer,
                              "Find references: who uses q (a name, `Class.method` or a chunk id), grouped by file"),
    "graph_uses": Route("GET", f"{WS}/graph/uses", GraphAnswer,
                        "What q (a chunk id or a definition's name) uses: the definitions, grouped by file"),
    "read_file": Route("GET", f"{WS}/file", None, "A file of the workspace as text"),
    # labels
    "record_label": Route("PUT", f"{WS}/labels", Labels,
                          "Label a result relevant or not for a question (evaluation and `tuned` read labels)"),
    "labels_for": Route("GET", f"{WS}/labels", Labels, "A question's labels"),
}


def url(name: str, query: dict[str, Any] | None = None, **path: Any) -> str:
    """The path of route `name` with its path parameters filled in (quoted) and `query` as its query string:
    url("goto_symbols", {"q": "Fix", "limit": 5}, workspace_id="ab12")."""
    filled = ROUTES[name].path.format(**{key: quote(str(value), safe="") for key, value in path.items()})
    return f"{filled}?{urlencode(query)}" if query else filled
