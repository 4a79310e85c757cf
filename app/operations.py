"""The operations every face offers, in one registry: MCP's tools (app.mcp_server), their REST routes
(app.server) and CLI subcommands (app.cli) all call the operations of OPERATIONS.

Each Operation names its engine call (`run`, the one code path every face takes: the same validation, the
same engine method), its parameters (names, types, MCP defaults), its description, its MCP tool and what
MCP returns of the JSON (`render`, a key of app.render.MCP_FIELDS), its REST route (method, path and the
REST name of each parameter it takes) and its CLI subcommand (the argparse dest of each parameter). Where
REST differs (`q` for a name, a path's `workspace_id`, body fields MCP does not offer, a larger default
limit) the Route says so, where the CLI differs the Command; tests/test_operations.py fails on any
difference the registry does not declare, and on a tool, route or subcommand made beside it.

A face passes `where`: how it turns a `workspace` argument into a folder, its own confinement (MCP: a
registered workspace or an allowed folder; REST: a registered id; the CLI: the folder as typed).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.limits import query_request
from services.core import files
from services.core.errors import QueryError, WorkspaceError
from services.core.messages import QueryRequest
from services.core.models import (
    FileAnswer, GotoAnswer, GraphAnswer, IndexHealth, MultiQueryResult, StrategyInfo,
)
from services.core.settings import DEFAULT_STRATEGY
from services.engine.protocol import Engine
from services.core.paths import confined
from services.transport.routes import ROUTES

Where = Callable[[str], "str | Path"]
REQUIRED = inspect.Parameter.empty


@dataclass(frozen=True)
class Param:
    name: str  # MCP's argument name, the operation's keyword
    type: Any
    default: Any = REQUIRED  # MCP's default


@dataclass(frozen=True)
class Route:
    """The REST route of an operation: `name`, its key in the route table (services.transport.routes, which
    holds its method, path and summary). `names`: the REST name of each operation parameter it takes (the
    others are MCP's only); `extra`: REST-only parameters (body fields); `defaults`: REST defaults that
    differ from MCP's. The route's handler is app.server's and calls the operation's `run`."""

    name: str
    names: dict[str, str]
    extra: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> str:
        return ROUTES[self.name].method

    @property
    def path(self) -> str:
        return ROUTES[self.name].path


@dataclass(frozen=True)
class Command:
    """The CLI subcommand that runs an operation (app.cli). `names`: the argparse dest of each operation
    parameter it takes (goto's `where` holds the folder and the name); `extra`: the subcommand's own options
    (--json, ...); `defaults`: CLI defaults that differ from MCP's."""

    name: str
    names: dict[str, str]
    extra: tuple[str, ...] = ("json",)
    defaults: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    name: str  # the MCP tool
    run: Callable[..., Awaitable[Any]]  # run(engine, where, **arguments) -> the engine's answer
    params: tuple[Param, ...]
    description: str
    render: str | None  # MCP's subset of the JSON (app.render.MCP_FIELDS), None: the answer as it is
    routes: tuple[Route, ...]
    commands: tuple[Command, ...] = ()


# --- the code path of each operation ---
async def search(engine: Engine, where: Where, question: str, workspace: str, strategy: str = DEFAULT_STRATEGY,
                 top_k: int = 10, languages: list[str] | None = None, path_glob: str = "",
                 workspaces: list[str] | None = None, **rest: Any):
    """MCP's and the CLI's search: the fields parsed as REST's body is (app.limits), then `ask`."""
    request = query_request(question=question, top_k=top_k, strategy=strategy, languages=tuple(languages or ()),
                            path_glob=path_glob, **rest)
    return await ask(engine, where, request, workspace, workspaces)


async def ask(engine: Engine, where: Where, request: QueryRequest, workspace: str,
              workspaces: list[str] | None = None):
    """A parsed question (the engine checks its rules, once) in one workspace, or over several."""
    first = str(where(workspace))
    if not workspaces:
        return await engine.query(request.question, request.options(first))
    return await search_many(engine, request.question, [first, *(str(where(w)) for w in workspaces)], request)


async def search_many(engine: Engine, question: str, folders: list[str], request: QueryRequest) -> MultiQueryResult:
    """`search` over several workspaces (folders already confined), the rankings merged by evidence."""
    return await engine.query_many(question, folders, request.options(folders[0] if folders else ""))


async def find_files(engine: Engine, where: Where, question: str, workspace: str, strategy: str = DEFAULT_STRATEGY,
                     max_files: int = 10, languages: list[str] | None = None, path_glob: str = "",
                     before: int | None = None, top_k: int | None = None, **rest: Any) -> FileAnswer:
    """`top_k` (REST's body only): the chunks asked for before they are grouped by file; MCP's is max_files."""
    request = query_request(question=question, top_k=max_files if top_k is None else top_k, strategy=strategy,
                            languages=tuple(languages or ()), path_glob=path_glob, **rest)
    return await ask_files(engine, where, request, workspace, max_files, before)


async def ask_files(engine: Engine, where: Where, request: QueryRequest, workspace: str, max_files: int,
                    before: int | None = None) -> FileAnswer:
    """A parsed question answered as files (the engine checks its rules, once)."""
    return await engine.find_files(request.question, request.options(str(where(workspace))), max_files, before)


async def find_symbol(engine: Engine, where: Where, name: str, workspace: str, limit: int = 10) -> GotoAnswer:
    return await engine.goto_symbols(name, where(workspace), limit)


async def find_file(engine: Engine, where: Where, path: str, workspace: str, limit: int = 10) -> GotoAnswer:
    return await engine.goto_files(path, where(workspace), limit)


async def find_references(engine: Engine, where: Where, name: str, workspace: str) -> GraphAnswer:
    return await engine.references(name, where(workspace))


async def find_uses(engine: Engine, where: Where, name: str, workspace: str) -> GraphAnswer:
    return await engine.uses(name, where(workspace))


MAX_OPEN_LINES = 2000
MAX_OPEN_BYTES = 2 * 1024 * 1024  # a file opened by a face (REST `file`, MCP `open_file`): larger ones are refused


async def open_file(engine: Engine, where: Where, path: str, workspace: str, start_line: int = 1,
                    end_line: int | None = None) -> dict[str, Any]:
    root = Path(where(workspace)).expanduser().resolve()
    return await asyncio.to_thread(file_lines, confined(root, path), path, start_line, end_line)


def file_lines(target: Path, path: str, start_line: int, end_line: int | None) -> dict[str, Any]:
    """Lines start_line..end_line of a workspace file (clamped to the file), as open_file returns them."""
    if start_line < 1 or (end_line is not None and end_line < start_line):
        raise QueryError(f"Lines {start_line} to {end_line} are not a range of lines (1-based, start <= end).")
    lines = workspace_text(target, path).splitlines()
    last = min(len(lines), end_line or len(lines), start_line + MAX_OPEN_LINES - 1)
    return {"path": path, "start_line": start_line, "end_line": max(last, start_line - 1), "total_lines": len(lines),
            "text": "\n".join(lines[start_line - 1:last])}


def workspace_text(target: Path, path: str) -> str:
    """A workspace file's text as a face sends it: at most MAX_OPEN_BYTES, each line cut at
    files.MAX_LINE_CHARS; WorkspaceError (one line) when it is not there, too large or unreadable."""
    if not target.is_file():
        raise WorkspaceError(f"No file {path!r} in the workspace.")
    try:
        text = files.read_text(target, limit=MAX_OPEN_BYTES)
    except files.FileTooLarge as error:
        raise WorkspaceError(f"The file {path!r} is too large to open ({error.size:,} bytes, over the "
                             f"{files.format_size(MAX_OPEN_BYTES)} limit).") from None
    except (OSError, UnicodeDecodeError) as error:
        raise WorkspaceError(f"Cannot read {path!r}: {error}") from None
    return "".join(files.cut_line(line) for line in text.splitlines(keepends=True))


async def index_status(engine: Engine, where: Where, workspace: str) -> IndexHealth:
    return await engine.health(where(workspace))


async def reindex(engine: Engine, where: Where, workspace: str, full: bool = False, **run: Any):
    """`run`: the CLI's progress and cancel (a terminal's progress line, Ctrl-C)."""
    return await engine.index(where(workspace), full=full, **run)


async def list_strategies(engine: Engine, where: Where) -> list[StrategyInfo]:
    return await engine.strategies()


# --- the registry ---
WORKSPACE = Param("workspace", str)
QUESTION = Param("question", str)
STRATEGY = Param("strategy", str, DEFAULT_STRATEGY)
LANGUAGES = Param("languages", list[str] | None, None)
PATH_GLOB = Param("path_glob", str, "")
IN_URL = {"workspace": "workspace_id"}
QUERY_FIELDS = {"question": "question", "strategy": "strategy", "languages": "languages", "path_glob": "path_glob"}
QUERY_EXTRA = ("min_relevance", "context_lines", "expand_context", "use_cache", "before", "pool")  # REST's QueryRequest beyond MCP
GOTO_HITS = ("{query, target, matched (how many names matched), line, message ('' or why nothing was found), "
             "hits: [{path, start_line, end_line, symbol, qualified_name, kind, language, score}]}, fields of the "
             "REST goto JSON")
GRAPH_LINKS = ("{query, direction, total, message ('' or why nothing was found), targets: [{path, start_line, "
               "end_line, qualified_name, kind}], files: [{path, links: [{line, name, how, qualified_name, kind, "
               "lines}]}]}, fields of the REST graph JSON")
CLI_QUERY = {"question": "question", "workspace": "path", "strategy": "strategy", "languages": "language",
             "path_glob": "path_glob"}
CLI_NAMED = {"name": "where", "workspace": "where"}  # goto, refs, uses: `[PATH] NAME`

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "search", search,
        (QUESTION, WORKSPACE, STRATEGY, Param("top_k", int, 10), LANGUAGES, PATH_GLOB,
         Param("workspaces", list[str] | None, None)),
        f"Search a workspace's code by meaning (default strategy {DEFAULT_STRATEGY}). Returns "
        "a subset of the REST query JSON: question, strategy, reranked, fallback_reason "
        "(null or why the ranking was not reranked), and results, each with rank, score "
        "(reranked), original_rank and original_score (vector search; null if only keyword "
        "search found it), stale ('' fresh, 'modified' or 'deleted' since indexed) and "
        "chunk {path, start_line, end_line, symbol, qualified_name, kind, language}. With "
        "`workspaces` (more workspaces, as ids or folders) the question is asked in each and the "
        "rankings merged by evidence (cosine): {question, strategy, workspaces, searched (results "
        "per workspace), fallback_reasons, results: [{workspace, name, rank, evidence, "
        "result (as above)}]}.",
        "search",
        (Route("query", {**IN_URL, **QUERY_FIELDS, "top_k": "top_k"}, extra=QUERY_EXTRA),
         Route("query_many", {"workspace": "workspaces", "workspaces": "workspaces", **QUERY_FIELDS, "top_k": "top_k"},
               extra=QUERY_EXTRA)),
        (Command("query", {**CLI_QUERY, "top_k": "top_k", "workspaces": "workspace"},
                 extra=("json", "min_relevance", "files", "before")),)),
    Operation(
        "find_files", find_files,
        (QUESTION, WORKSPACE, STRATEGY, Param("max_files", int, 10), LANGUAGES, PATH_GLOB,
         Param("before", int | None, None)),
        f"Answer a question about a workspace with ranked FILES (default strategy "
        f"{DEFAULT_STRATEGY}): where to look for a bug report or a feature. Returns a subset of "
        "the REST files JSON: question, strategy, history (commits used, or why none), "
        "before, original (the file order without a strategy), and files, each with path, "
        "rank, score, original_rank, its best chunks {start_line, end_line, symbol, rank} and "
        "signals {name, contribution, note} that add up to its score and say why it ranks "
        "there. `before` (unix time): ignore commits made at or after it.",
        "find_files",
        (Route("files", {**IN_URL, **QUERY_FIELDS, "max_files": "max_files", "before": "before"},
               extra=("top_k", *QUERY_EXTRA)),),
        (Command("query", {**CLI_QUERY, "max_files": "top_k", "before": "before"},
                 extra=("json", "min_relevance", "files", "workspace")),)),
    Operation(
        "find_symbol", find_symbol, (Param("name", str), WORKSPACE, Param("limit", int, 10)),
        "Where is a symbol defined: the definitions whose names match `name` (exact names "
        "first, then fuzzy: `FixMan` or `fm` find FixtureManager; `Class.method` a method), "
        "every definition of a name defined in several places, each with its path and lines, "
        f"in any language of the workspace. Returns {GOTO_HITS}.",
        "find_symbol",
        (Route("goto_symbols", {**IN_URL, "name": "q", "limit": "limit"}, defaults={"limit": 20}),),
        (Command("goto", {**CLI_NAMED, "limit": "limit"}, extra=("json", "files")),)),
    Operation(
        "find_file", find_file, (Param("path", str), WORKSPACE, Param("limit", int, 10)),
        "Which indexed file a path or file name means (fuzzy, file names count most: "
        "`latex.py`, `printing/latex`, `latex.py:120` for line 120). Returns "
        f"{GOTO_HITS}; start_line is the line asked for.",
        "find_file",
        (Route("goto_files", {**IN_URL, "path": "q", "limit": "limit"}, defaults={"limit": 20}),),
        (Command("goto", {**CLI_NAMED, "limit": "limit"}, extra=("json", "files")),)),
    Operation(
        "find_references", find_references, (Param("name", str), WORKSPACE),
        "Find references, who uses this: every use of a definition (`name`: a name, "
        "`Class.method` or a chunk id) in the workspace's code, calls, attribute uses, imports, "
        "base classes, grouped by file, each with its line and the function or class using it; after a file's "
        f"code uses, the name's mentions in its docstrings, comments and strings (how: text). Returns {GRAPH_LINKS}.",
        "find_references",
        (Route("graph_references", {**IN_URL, "name": "q"}),),
        (Command("refs", CLI_NAMED),)),
    Operation(
        "find_uses", find_uses, (Param("name", str), WORKSPACE),
        "What a definition uses (its callees): the functions, classes and methods of the "
        "workspace that `name`'s code (a name, `Class.method` or a chunk id) calls, imports or "
        "extends, grouped by the file defining them, `lines` where it uses each. "
        f"Returns {GRAPH_LINKS}.",
        "find_uses",
        (Route("graph_uses", {**IN_URL, "name": "q"}),),
        (Command("uses", CLI_NAMED),)),
    Operation(
        "open_file", open_file,
        (Param("path", str), WORKSPACE, Param("start_line", int, 1), Param("end_line", int | None, None)),
        "Read lines of a file of a workspace, e.g. a definition find_symbol found: "
        "{path, start_line, end_line, total_lines, text}. `path` is relative to the workspace "
        f"and must stay inside it; lines are 1-based and inclusive, at most {MAX_OPEN_LINES}.",
        None,
        # REST sends the whole file as {path, text} (app.handlers, read_file), not a range of lines
        (Route("read_file", {**IN_URL, "path": "path"}),)),
    Operation(
        "index_status", index_status, (WORKSPACE,),
        "Index health of a workspace: files, chunks, stale files, whether it needs a reindex "
        "(all of the REST health JSON: indexed, state, files, chunks, languages, stale_files, "
        "needs_reindex, skipped, model, updated_at, message, ...).",
        "index_status",
        (Route("health", IN_URL),),
        (Command("health", {"workspace": "path"}),)),
    Operation(
        "reindex", reindex, (WORKSPACE, Param("full", bool, False)),
        "Bring a workspace's index up to date (incremental: only changed files are "
        "embedded). Returns the index report (all of it: files_indexed, files_unchanged, "
        "files_removed, chunks_embedded, chunks_total, seconds, cancelled, rebuilt_reason, "
        "skipped, failed, message, vectors_reused).",
        "reindex",
        # REST starts a background run (202, followed with GET …/index or …/index/events): app.feeds.IndexRuns
        (Route("start_index", {**IN_URL, "full": "full"}),),
        (Command("index", {"workspace": "path", "full": "full"}),)),
    Operation(
        "list_strategies", list_strategies, (),
        "The reranking strategies, whether each is available now, and what it does: "
        "{strategies: [{name, available, reason, description}]} (fields of the REST list).",
        "list_strategies",
        (Route("strategies", {}),),
        (Command("strategies", {}),)),
)
BY_NAME = {operation.name: operation for operation in OPERATIONS}


def signature(params: list[tuple[str, Any, Any]], returns: Any = Any) -> inspect.Signature:
    """A function signature from (name, type, default) triples: what MCP reads a tool's parameters from."""
    return inspect.Signature([inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                                annotation=kind) for name, kind, default in params],
                             return_annotation=returns)


def is_many(value: Any) -> bool:
    return isinstance(value, MultiQueryResult)
