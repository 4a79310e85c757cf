"""The faces cannot drift: every operation of the registry (app.operations) is an MCP tool, a REST route and
(where it has one) a CLI subcommand with the parameters the registry says, and no face has a tool, a route or
an engine subcommand beside it.

Real parts: the MCP server and the FastAPI app as `knowledge-explorer serve` builds them, over a real
(un-warmed) LocalEngine; nothing is called on it, the faces are read as a client or FastAPI reads them;
the CLI's parser as `knowledge-explorer` builds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

import argparse

import pytest
from fastapi.routing import APIRoute

from app.cli import build_parser, common_options

from app.mcp_server import build_mcp
from app.operations import OPERATIONS, REQUIRED, Command
from app.server import build_app
from services.engine.service import LocalEngine

# REST routes that are no MCP tool (yet): workspaces, index runs, watching, labels, the reranking spec
REST_ONLY = {
    ("GET", "/v1/health"), ("POST", "/v1/workspaces"), ("GET", "/v1/workspaces"),
    ("GET", "/v1/workspaces/{workspace_id}/index"), ("GET", "/v1/workspaces/{workspace_id}/index/events"),
    ("DELETE", "/v1/workspaces/{workspace_id}/index"), ("PUT", "/v1/workspaces/{workspace_id}/watch"),
    ("GET", "/v1/workspaces/{workspace_id}/watch/events"), ("DELETE", "/v1/workspaces/{workspace_id}/watch"),
    ("POST", "/v1/workspaces/{workspace_id}/watch/pause"), ("POST", "/v1/workspaces/{workspace_id}/search/rerank"),
    ("PUT", "/v1/workspaces/{workspace_id}/reranking/config"),
    ("GET", "/v1/workspaces/{workspace_id}/reranking/config"), ("GET", "/v1/workspaces/{workspace_id}/symbols"),
    ("PUT", "/v1/workspaces/{workspace_id}/labels"), ("GET", "/v1/workspaces/{workspace_id}/labels"),
    ("POST", "/v1/rerank"),
}


@pytest.fixture(scope="module")
def faces(tmp_path_factory):
    """(MCP tools by name, REST routes by (method, path)) of the server `serve` builds."""
    data = tmp_path_factory.mktemp("operations") / "data"
    service = LocalEngine(data_dir=data, kind="server")
    with contextlib.closing(service):
        app = build_app(service, data, warm=False)
        tools = asyncio.run(build_mcp(service).list_tools())
        routes = {(method, route.path): route for route in app.routes if isinstance(route, APIRoute)
                  for method in route.methods}
        yield {tool.name: tool for tool in tools}, routes


def tool_parameters(tool) -> dict[str, Any]:
    """An MCP tool's parameters and their defaults (REQUIRED where it has none), from its input schema."""
    schema = tool.input_schema
    return {name: REQUIRED if name in schema.get("required", ()) else field.get("default")
            for name, field in schema["properties"].items()}


def route_parameters(route: APIRoute) -> dict[str, Any]:
    """A REST route's parameters (path, query, and a body's fields) and their defaults."""
    dependant = route.dependant
    found = {p.name: REQUIRED if p.field_info.is_required() else p.default
             for p in (*dependant.path_params, *dependant.query_params)}
    for body in dependant.body_params:  # a dataclass of services.core.messages
        for item in dataclasses.fields(body.field_info.annotation):
            found[item.name] = REQUIRED if item.default is dataclasses.MISSING else item.default
    return found


def drift(tools: dict, routes: dict) -> list[str]:
    """Every difference between the faces the registry does not declare, as one line each."""
    problems = [f"MCP tool {name!r} has no operation in app.operations"
                for name in sorted(set(tools) - {op.name for op in OPERATIONS})]
    declared = {(r.method, r.path) for op in OPERATIONS for r in op.routes}
    problems += [f"REST route {method} {path} is neither an operation's nor listed in REST_ONLY"
                 for method, path in sorted(set(routes) - declared - REST_ONLY)]
    for op in OPERATIONS:
        params = {p.name: p.default for p in op.params}
        if op.name not in tools:
            problems.append(f"operation {op.name!r} is no MCP tool")
        elif tool_parameters(tools[op.name]) != params:
            problems.append(f"MCP tool {op.name!r} takes {tool_parameters(tools[op.name])}, the registry {params}")
        for route in op.routes:
            problems += route_drift(op, route, routes.get((route.method, route.path)))
    return problems


def route_drift(op, route, found: APIRoute | None) -> list[str]:
    where = f"{route.method} {route.path} ({op.name})"
    if found is None:
        return [f"no REST route {where}"]
    actual = route_parameters(found)
    expected = {*route.names.values(), *route.extra}
    if set(actual) != expected:
        return [f"{where} takes {sorted(actual)}, the registry says {sorted(expected)}"]
    problems = []
    for p in op.params:  # a plain default (a number, a name) must be MCP's unless the route declares its own
        rest_name = route.names.get(p.name)
        if rest_name and isinstance(p.default, (int, str)) and p.default is not REQUIRED:
            wanted = route.defaults.get(p.name, p.default)
            if actual[rest_name] != wanted:
                problems.append(f"{where}: {rest_name} defaults to {actual[rest_name]!r}, the registry {wanted!r}")
    return problems


def test_every_operation_is_an_mcp_tool_and_a_rest_route_with_the_same_parameters(faces):
    tools, routes = faces
    assert drift(tools, routes) == []
    assert list(tools) == [op.name for op in OPERATIONS]  # the order MCP clients list them in


def test_a_tool_or_route_added_by_hand_beside_the_registry_is_caught(faces, tmp_path):
    tools, routes = faces
    service = LocalEngine(data_dir=tmp_path / "data", kind="server")
    with contextlib.closing(service):
        server = build_mcp(service)

        @server.tool(description="made by hand")
        async def grep(pattern: str, workspace: str) -> dict[str, Any]:
            return {}

        app = build_app(service, tmp_path / "data", warm=False, mcp=False)

        @app.get("/v1/workspaces/{workspace_id}/grep")
        async def rest_grep(workspace_id: str, pattern: str):
            return {}

        more_tools = {tool.name: tool for tool in asyncio.run(server.list_tools())}
        more_routes = {**routes, ("GET", "/v1/workspaces/{workspace_id}/grep"): app.routes[-1]}
        assert drift(more_tools, more_routes) == [
            "MCP tool 'grep' has no operation in app.operations",
            "REST route GET /v1/workspaces/{workspace_id}/grep is neither an operation's nor listed in REST_ONLY"]


def test_a_parameter_renamed_or_defaulted_on_one_face_only_is_caught(faces):
    tools, routes = faces
    find_symbol = routes[("GET", "/v1/workspaces/{workspace_id}/goto/symbols")]
    goto_op = next(op for op in OPERATIONS if op.name == "find_symbol")
    route = goto_op.routes[0]
    assert route_drift(goto_op, dataclasses.replace(route, defaults={}), find_symbol) == [
        "GET /v1/workspaces/{workspace_id}/goto/symbols (find_symbol): limit defaults to 20, the registry 10"]
    renamed = dataclasses.replace(route, names={**route.names, "name": "name"})
    assert route_drift(goto_op, renamed, find_symbol) == [
        "GET /v1/workspaces/{workspace_id}/goto/symbols (find_symbol) takes ['limit', 'q', 'workspace_id'], "
        "the registry says ['limit', 'name', 'workspace_id']"]


# --- the CLI ---
CLI_ONLY = {"eval", "gui", "serve", "mcp", "desktop"}  # subcommands that run no operation


def subcommands(parser: argparse.ArgumentParser | None = None) -> dict[str, dict[str, Any]]:
    """The CLI's subcommands: each one's options and arguments (argparse dests) and their defaults, less the
    global options every subcommand takes."""
    parser = parser or build_parser()
    common = {action.dest for action in common_options()._actions} | {"help"}
    found = {}
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            found[name] = {a.dest: a.default for a in sub._actions if a.dest not in common}
    return found


def cli_drift(commands: dict[str, dict[str, Any]]) -> list[str]:
    """Every difference between the CLI and the registry the registry does not declare, as one line each."""
    declared = {command.name for op in OPERATIONS for command in op.commands}
    problems = [f"CLI subcommand {name!r} runs no operation and is not listed in CLI_ONLY"
                for name in sorted(set(commands) - declared - CLI_ONLY)]
    for op in OPERATIONS:
        for command in op.commands:
            problems += command_drift(op, command, commands.get(command.name))
    return problems


def command_drift(op, command: Command, found: dict[str, Any] | None) -> list[str]:
    where = f"`{command.name}` ({op.name})"
    if found is None:
        return [f"no CLI subcommand {where}"]
    expected = {*command.names.values(), *command.extra}
    if set(found) != expected:
        return [f"{where} takes {sorted(found)}, the registry says {sorted(expected)}"]
    problems = []
    for p in op.params:  # a plain default (a number, a name) must be MCP's unless the command declares its own
        dest = command.names.get(p.name)
        if dest and isinstance(p.default, (int, str)) and p.default is not REQUIRED:
            wanted = command.defaults.get(p.name, p.default)
            if found[dest] != wanted:
                problems.append(f"{where}: {dest} defaults to {found[dest]!r}, the registry {wanted!r}")
    return problems


def test_every_operation_with_a_subcommand_is_one_with_the_same_parameters():
    assert cli_drift(subcommands()) == []


def test_a_subcommand_added_or_changed_beside_the_registry_is_caught():
    parser = build_parser()
    sub = parser._subparsers._group_actions[0]
    grep = sub.add_parser("grep")
    grep.add_argument("pattern")
    commands = subcommands(parser)
    commands["goto"] = {**commands["goto"], "limit": 20}
    assert cli_drift(commands) == [
        "CLI subcommand 'grep' runs no operation and is not listed in CLI_ONLY",
        "`goto` (find_symbol): limit defaults to 20, the registry 10",
        "`goto` (find_file): limit defaults to 20, the registry 10"]
