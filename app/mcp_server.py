"""The engine as an MCP server (official `mcp` SDK): tools search, find_files, index_status, reindex,
list_strategies, and find_symbol, find_file, open_file (go to a definition or a file by name).

Over stdio (`knowledge-explorer mcp`: a warm server for the data dir when one runs, else the engine
in-process) and over streamable HTTP at /mcp on `knowledge-explorer serve`. The tools call the
engine's own async API (KnowledgeService, or RemoteEngine with the same methods).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from app.limits import query_request
from app.render import mcp_json
from services.core.errors import ForbiddenWorkspace, KnowledgeError, QueryError, WorkspaceError
from services.core.settings import DEFAULT_STRATEGY
from services.transport.paths import check_glob, check_path_text, confined
from services.transport.roots import refusal

INSTRUCTIONS = ("Semantic code search over indexed workspaces. `search` answers a question with code "
                "locations (path, lines, symbol, scores); `find_files` answers with ranked files and why they "
                "rank there; `reindex` brings an index up to date; "
                "`index_status` says whether it is fresh; `list_strategies` names the reranking strategies; "
                "`find_symbol` and `find_file` go to a definition or a file by name, `open_file` reads its lines. "
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
                             "rankings merged by evidence (cosine): {question, strategy, workspaces, searched (results "
                             "per workspace), fallback_reasons, results: [{workspace, name, rank, evidence, "
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

    add_goto_tools(server, engine, workspace_path)

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


# --- go to symbol / file, and reading a definition (services/retrieval/goto.py) ---
GOTO_HITS = ("{query, target, matched (how many names matched), line, message ('' or why nothing was found), "
             "hits: [{path, start_line, end_line, symbol, qualified_name, kind, language, score}]}, fields of the "
             "REST goto JSON")
GRAPH_LINKS = ("{query, direction, total, message ('' or why nothing was found), targets: [{path, start_line, "
               "end_line, qualified_name, kind}], files: [{path, links: [{line, name, how, qualified_name, kind, "
               "lines}]}]}, fields of the REST graph JSON")
MAX_OPEN_LINES = 2000
MAX_OPEN_BYTES = 2 * 1024 * 1024


def add_goto_tools(server: MCPServer, engine, workspace_path) -> None:
    """find_symbol, find_file and open_file: where a name is defined, which file a path means, and its text."""

    @server.tool(description="Where is a symbol defined: the definitions whose names match `name` (exact names "
                             "first, then fuzzy: `FixMan` or `fm` find FixtureManager; `Class.method` a method), "
                             "every definition of a name defined in several places, each with its path and lines, "
                             f"in any language of the workspace. Returns {GOTO_HITS}.")
    async def find_symbol(name: str, workspace: str, limit: int = 10) -> dict[str, Any]:
        async def run():
            return mcp_json("find_symbol", await engine.goto_symbols(name, workspace_path(workspace), limit))

        return await reported(run())

    @server.tool(description="Which indexed file a path or file name means (fuzzy, file names count most: "
                             "`latex.py`, `printing/latex`, `latex.py:120` for line 120). Returns "
                             f"{GOTO_HITS}; start_line is the line asked for.")
    async def find_file(path: str, workspace: str, limit: int = 10) -> dict[str, Any]:
        async def run():
            return mcp_json("find_file", await engine.goto_files(path, workspace_path(workspace), limit))

        return await reported(run())

    @server.tool(description="Find references, who uses this: every use of a definition (`name`: a name, "
                             "`Class.method` or a chunk id) in the workspace's code, calls, attribute uses, imports, "
                             "base classes, grouped by file, each with its line and the function or class using it. "
                             f"Returns {GRAPH_LINKS}.")
    async def find_references(name: str, workspace: str) -> dict[str, Any]:
        async def run():
            return mcp_json("find_references", await engine.references(name, workspace_path(workspace)))

        return await reported(run())

    @server.tool(description="What a definition uses (its callees): the functions, classes and methods of the "
                             "workspace that `name`'s code (a name, `Class.method` or a chunk id) calls, imports or "
                             "extends, grouped by the file defining them, `lines` where it uses each. "
                             f"Returns {GRAPH_LINKS}.")
    async def find_uses(name: str, workspace: str) -> dict[str, Any]:
        async def run():
            return mcp_json("find_uses", await engine.uses(name, workspace_path(workspace)))

        return await reported(run())

    @server.tool(description="Read lines of a file of a workspace, e.g. a definition find_symbol found: "
                             "{path, start_line, end_line, total_lines, text}. `path` is relative to the workspace "
                             f"and must stay inside it; lines are 1-based and inclusive, at most {MAX_OPEN_LINES}.")
    async def open_file(path: str, workspace: str, start_line: int = 1, end_line: int | None = None) -> dict[str, Any]:
        async def run():
            root = Path(workspace_path(workspace)).expanduser().resolve()
            return await asyncio.to_thread(file_lines, confined(root, path), path, start_line, end_line)

        return await reported(run())


def file_lines(target: Path, path: str, start_line: int, end_line: int | None) -> dict[str, Any]:
    """Lines start_line..end_line of a workspace file (clamped to the file), as open_file returns them."""
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise QueryError(f"Lines {start_line} to {end_line} are not a range of lines (1-based, start <= end).")
    if not target.is_file():
        raise WorkspaceError(f"No file {path!r} in the workspace.")
    if target.stat().st_size > MAX_OPEN_BYTES:
        raise WorkspaceError(f"The file {path!r} is too large to open ({target.stat().st_size:,} bytes).")
    try:
        lines = target.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise WorkspaceError(f"Cannot read {path!r}: {error}") from None
    last = min(len(lines), end_line or len(lines), start_line + MAX_OPEN_LINES - 1)
    return {"path": path, "start_line": start_line, "end_line": max(last, start_line - 1), "total_lines": len(lines),
            "text": "\n".join(lines[start_line - 1:last])}


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
