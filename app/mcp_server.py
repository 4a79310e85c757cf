"""The engine as an MCP server (official `mcp` SDK): tools search, index_status, reindex, list_strategies.

Over stdio (`knowledge-explorer mcp`: a warm server for the data dir when one runs, else the engine
in-process) and over streamable HTTP at /mcp on `knowledge-explorer serve`. The tools call the
engine's own async API (KnowledgeService, or RemoteEngine with the same methods).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from services.transport.paths import check_glob
from services.core.errors import KnowledgeError

INSTRUCTIONS = ("Semantic code search over indexed workspaces. `search` answers a question with code "
                "locations (path, lines, symbol, scores); `reindex` brings an index up to date; "
                "`index_status` says whether it is fresh; `list_strategies` names the reranking strategies.")


def build_mcp(engine, registry=None) -> MCPServer:
    """An MCP server over `engine`. With a `registry` (the HTTP server's), workspaces must be registered."""
    server = MCPServer("knowledge-explorer", instructions=INSTRUCTIONS)

    def workspace_path(workspace: str) -> str:
        if registry is None:
            return workspace
        return str(registry.find(workspace)[1])

    @server.tool(description="Search a workspace's code by meaning. Returns the reranked results with "
                             "path, lines, symbol, the reranked and the original (vector) score, and a stale "
                             "flag when the file changed since it was indexed.")
    async def search(question: str, workspace: str, strategy: str = "none", top_k: int = 10,
                     languages: list[str] | None = None, path_glob: str = "") -> dict[str, Any]:
        from services.core.models import QueryOptions

        async def run():
            check_glob(path_glob)
            if not 1 <= top_k <= 100:
                raise KnowledgeError("top_k must be between 1 and 100.")
            options = QueryOptions(workspace=workspace_path(workspace), top_k=top_k, strategy=strategy,
                                   languages=tuple(languages or ()), path_glob=path_glob)
            return search_result(await engine.query(question, options))

        return await reported(run())

    @server.tool(description="Index health of a workspace: files, chunks, stale files, whether it needs a reindex.")
    async def index_status(workspace: str) -> dict[str, Any]:
        from app.cli import health_json

        async def run():
            return health_json(await engine.health(workspace_path(workspace)))

        return await reported(run())

    @server.tool(description="Bring a workspace's index up to date (incremental: only changed files are "
                             "embedded). Returns the index report.")
    async def reindex(workspace: str, full: bool = False) -> dict[str, Any]:
        from app.cli import index_report_json

        async def run():
            return index_report_json(await engine.index(workspace_path(workspace), full=full))

        return await reported(run())

    @server.tool(description="The reranking strategies, whether each is available now, and what it does.")
    async def list_strategies() -> dict[str, Any]:
        return {"strategies": [{"name": s.name, "available": s.available, "reason": s.reason or None,
                                "description": s.description} for s in await engine.strategies()]}

    return server


async def reported(work):
    """Run a tool's work; an engine error becomes a tool error with its message (no traceback)."""
    try:
        return await work
    except KnowledgeError as error:
        raise ToolError(str(error)) from None


def search_result(result) -> dict[str, Any]:
    return {
        "question": result.question, "strategy": result.strategy, "reranked": result.reranked,
        "fallback_reason": result.fallback_reason,
        "results": [{
            "rank": r.rank, "path": r.chunk.path, "start_line": r.chunk.start_line, "end_line": r.chunk.end_line,
            "symbol": r.chunk.qualified_name or r.chunk.symbol, "kind": r.chunk.kind, "score": r.score,
            "original_score": r.original_score, "original_rank": r.original_rank, "stale": bool(r.stale),
            "change": r.stale or None,
        } for r in result.results],
    }


def run_stdio(engine) -> int:
    """Serve MCP over stdin/stdout until the client closes it."""
    import anyio

    anyio.run(build_mcp(engine).run_stdio_async)
    return 0
