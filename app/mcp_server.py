"""The engine as an MCP server (official `mcp` SDK): one tool per operation of app.operations (search,
find_files, find_symbol, find_file, find_references, find_uses, open_file, index_status, reindex,
list_strategies), made from the same registry as REST's routes.

Over stdio (`knowledge-explorer mcp`: a warm server for the data dir when one runs, else the engine
in-process) and over streamable HTTP at /mcp on `knowledge-explorer serve`. The tools call the
engine's own async API (LocalEngine, or RemoteEngine with the same methods).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import BaseModel, ConfigDict

from app.limits import check_known
from app.operations import OPERATIONS, Operation, is_many, signature
from app.render import mcp_json
from services.core.errors import ForbiddenWorkspace, KnowledgeError
from services.storage.workspace_index import expanded
from services.core.paths import check_path_text
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
    def workspace_path(workspace: str) -> str:
        if registry is not None:
            return str(registry.find(workspace)[1])
        check_path_text(workspace)
        reason = refusal(expanded(workspace).resolve())
        if reason is not None:
            raise ForbiddenWorkspace(f"The folder {workspace} cannot be served: {reason}.")
        return workspace

    tools = [make_tool(operation, engine, workspace_path) for operation in OPERATIONS]
    return MCPServer("knowledge-explorer", instructions=INSTRUCTIONS, tools=tools)


def make_tool(operation: Operation, engine, workspace_path) -> Tool:
    """The operation as an MCP tool: its name, description and parameters (the SDK reads the input schema
    from the signature), its code path, and MCP's subset of its JSON. An argument the tool does not take is
    refused by name (InvalidRequest), never dropped."""
    known = [p.name for p in operation.params]

    async def tool(**arguments: Any) -> dict[str, Any]:
        async def run():
            check_known(arguments, known)
            value = await operation.run(engine, workspace_path, **arguments)
            if operation.render is None:
                return value
            return mcp_json("search_many" if is_many(value) else operation.render, value)

        return await reported(run())

    tool.__name__ = tool.__qualname__ = operation.name  # the SDK names the schema after it ("searchArguments")
    tool.__signature__ = signature(  # type: ignore[attr-defined]
        [(p.name, p.type, p.default) for p in operation.params], dict[str, Any])
    made = Tool.from_function(tool, name=operation.name, description=operation.description)
    made.fn_metadata.arg_model = keeping_unknown(made.fn_metadata.arg_model)
    made.parameters = {**made.parameters, "additionalProperties": False}
    return made


def keeping_unknown(model: type[BaseModel]) -> Any:
    """The SDK's argument model, keeping the arguments its schema lacks (the SDK would drop them unseen) for
    the tool to refuse by name."""

    class Arguments(model):  # type: ignore[valid-type,misc]
        model_config = ConfigDict(extra="allow")

        def model_dump_one_level(self) -> dict[str, Any]:
            return {**super().model_dump_one_level(), **(self.model_extra or {})}

    Arguments.__name__ = Arguments.__qualname__ = model.__name__
    return Arguments


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
