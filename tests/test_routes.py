"""One route table (issue 53): every REST path is written in services/transport/routes.py only; the server
registers exactly its routes, in its order, each with a handler; the remote client's URLs come from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute

from app.server import register_routes
from services.transport.routes import ROUTES, url

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "services" / "transport" / "routes.py"


def path_literals(source: Path) -> list[str]:
    """The string constants of a module's code (docstrings and messages aside) that start like a REST path."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/v1"):
            found.append(f"{source.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return found


def test_no_rest_path_is_written_outside_the_route_table():
    modules = [p for folder in ("app", "services", "ui") for p in (ROOT / folder).rglob("*.py") if p != TABLE]
    assert [line for module in modules for line in path_literals(module)] == []
    assert path_literals(TABLE)  # the check reads what it means to: the table's own paths are found


def handler_for(name: str):
    async def handler() -> None:
        return None

    handler.__name__ = name
    return handler


def test_the_server_registers_the_table_in_its_order_and_refuses_a_handler_beside_it():
    router = APIRouter()
    register_routes(router, {name: handler_for(name) for name in ROUTES})
    registered = [(next(iter(r.methods)), r.path, r.summary) for r in router.routes if isinstance(r, APIRoute)]
    assert registered == [(r.method, r.path, r.summary) for r in ROUTES.values()]

    with pytest.raises(RuntimeError, match="grep"):  # a handler with no route in the table
        register_routes(APIRouter(), {**{name: handler_for(name) for name in ROUTES}, "grep": handler_for("grep")})
    with pytest.raises(RuntimeError, match="labels_for"):  # a route of the table with no handler
        register_routes(APIRouter(), {name: handler_for(name) for name in ROUTES if name != "labels_for"})


def test_a_url_fills_the_path_and_quotes_what_it_is_given():
    assert url("goto_symbols", {"q": "a b/c", "limit": 5}, workspace_id="ab/12") == (
        "/v1/workspaces/ab%2F12/goto/symbols?q=a+b%2Fc&limit=5")
    assert url("strategies") == "/v1/strategies"
    with pytest.raises(KeyError):
        url("health")  # its workspace is missing
