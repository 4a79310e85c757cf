"""The engine as an MCP server (official `mcp` SDK): tools search, find_files, index_status, reindex,
list_strategies.

Over stdio (`knowledge-explorer mcp`: a warm server for the data dir when one runs, else the engine
in-process) and over streamable HTTP at /mcp on `knowledge-explorer serve`. The tools call the
engine's own async API (KnowledgeService, or RemoteEngine with the same methods).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app.limits import query_request
from app.render import mcp_json
from services.core.errors import ForbiddenWorkspace, KnowledgeError
from services.core.settings import DEFAULT_STRATEGY
from services.transport.paths import check_glob, check_path_text
from services.transport.roots import refusal

INSTRUCTIONS = ("Semantic code search over indexed workspaces. `search` answers a question with code "
                "locations (path, lines, symbol, scores); `find_files` answers with ranked files and why they "
                "rank there; `reindex` brings an index up to date; "
                "`index_status` says whether it is fresh; `list_strategies` names the reranking strategies. "
                "Every tool returns fields of the REST API's JSON (`knowledge-explorer query --json` gives "
                "the same JSON with every field).")


def build_mcp(engine, registry=None) -> MCPServer:
    """An MCP server over `engine`. With a `registry` (the HTTP server's), workspaces must be registered;
    without one (stdio, the owner's own process) any folder but those never served (services.transport.roots)."""
    server = MCPServer("knowledge-explorer", instructions=INSTRUCTIONS)

    def workspace_path(workspace: str) -> str:
        if registry is not None:
            return str(registry.find(workspace)[1])
        check_path_text(workspace)
        reason = refusal(Path(workspace).expanduser().resolve())
        if reason is not None:
            raise ForbiddenWorkspace(f"The folder {workspace} cannot be served: {reason}.")
        return workspace

    @server.tool(description=f"Search a workspace's code by meaning (default strategy {DEFAULT_STRATEGY}). Returns "
                             "a subset of the REST query JSON: question, strategy, reranked, fallback_reason "
                             "(null or why the ranking was not reranked), and results, each with rank, score "
                             "(reranked), original_rank and original_score (vector search; null if only keyword "
                             "search found it), stale ('' fresh, 'modified' or 'deleted' since indexed) and "
                             "chunk {path, start_line, end_line, symbol, qualified_name, kind, language}. With "
                             "`workspaces` (more workspaces, as ids or folders) the question is asked in each and the "
                             "rankings merged by reciprocal rank: {question, strategy, workspaces, searched (results "
                             "per workspace), fallback_reasons, results: [{workspace, name, rank, fused_score, "
                             "result (as above)}]}.")
    async def search(question: str, workspace: str, strategy: str = DEFAULT_STRATEGY, top_k: int = 10,
                     languages: list[str] | None = None, path_glob: str = "",
                     workspaces: list[str] | None = None) -> dict[str, Any]:
        async def run():
            request = query_request(question=question, top_k=top_k, strategy=strategy,
                                    languages=tuple(languages or ()), path_glob=path_glob)  # REST's limits
            check_glob(path_glob)
            options = request.options(workspace_path(workspace))
            if not workspaces:
                return mcp_json("search", await engine.query(question, options))
            folders = [options.workspace, *(workspace_path(w) for w in workspaces)]
            return mcp_json("search_many", await engine.query_many(question, folders, options))

        return await reported(run())

    @server.tool(description=f"Answer a question about a workspace with ranked FILES (default strategy "
                             f"{DEFAULT_STRATEGY}): where to look for a bug report or a feature. Returns a subset of "
                             "the REST files JSON: question, strategy, history (commits used, or why none), "
                             "before, original (the file order without a strategy), and files, each with path, "
                             "rank, score, original_rank, its best chunks {start_line, end_line, symbol, rank} and "
                             "signals {name, contribution, note} that add up to its score and say why it ranks "
                             "there. `before` (unix time): ignore commits made at or after it.")
    async def find_files(question: str, workspace: str, strategy: str = DEFAULT_STRATEGY, max_files: int = 10,
                         languages: list[str] | None = None, path_glob: str = "",
                         before: int | None = None) -> dict[str, Any]:
        async def run():
            request = query_request(question=question, top_k=max_files, strategy=strategy,
                                    languages=tuple(languages or ()), path_glob=path_glob)  # REST's limits
            check_glob(path_glob)
            options = request.options(workspace_path(workspace))
            return mcp_json("find_files", await engine.find_files(question, options, max_files, before))

        return await reported(run())

    @server.tool(description="Index health of a workspace: files, chunks, stale files, whether it needs a reindex "
                             "(all of the REST health JSON: indexed, state, files, chunks, languages, stale_files, "
                             "needs_reindex, skipped, model, updated_at, message, ...).")
    async def index_status(workspace: str) -> dict[str, Any]:
        async def run():
            return mcp_json("index_status", await engine.health(workspace_path(workspace)))

        return await reported(run())

    @server.tool(description="Bring a workspace's index up to date (incremental: only changed files are "
                             "embedded). Returns the index report (all of it: files_indexed, files_unchanged, "
                             "files_removed, chunks_embedded, chunks_total, seconds, cancelled, rebuilt_reason, "
                             "skipped, failed, message, vectors_reused).")
    async def reindex(workspace: str, full: bool = False) -> dict[str, Any]:
        async def run():
            return mcp_json("reindex", await engine.index(workspace_path(workspace), full=full))

        return await reported(run())

    @server.tool(description="The reranking strategies, whether each is available now, and what it does: "
                             "{strategies: [{name, available, reason, description}]} (fields of the REST list).")
    async def list_strategies() -> dict[str, Any]:
        return mcp_json("list_strategies", await engine.strategies())

    return server


async def reported(work):
    """Run a tool's work; an engine error becomes a tool error with its message (no traceback)."""
    try:
        return await work
    except KnowledgeError as error:
        raise ToolError(str(error)) from None


def run_stdio(engine) -> int:
    """Serve MCP over stdin/stdout until the client closes it."""
    import anyio

    anyio.run(build_mcp(engine).run_stdio_async)
    return 0
