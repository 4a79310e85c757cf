"""Command-line entry point: `knowledge-explorer [PATH]` opens the app; subcommands index, query, ..."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import os
import signal
import sys
import threading

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

COMMANDS = ("index", "health", "query", "strategies", "eval", "gui", "serve", "mcp", "goto", "refs", "uses", "desktop")
WARM_COMMANDS = ("index", "health", "query", "strategies", "goto", "refs", "uses")  # go through a running server when there is one


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error (`error: ...`, exit 2 as argparse's own) instead of usage and error."""

    def error(self, message: str):
        from app.render import shown  # here, not at the top: the codec stays out of `gui`'s start-up

        self.exit(2, f"error: {shown(message)} (see {self.prog} -h)\n")


def common_options() -> Parser:
    from services.core.settings import BACKENDS

    common = Parser(add_help=False)
    group = common.add_argument_group("global options")
    group.add_argument("--data-dir", default=argparse.SUPPRESS,
                       help="where indexes are kept (default: the user data dir)")
    group.add_argument("--chroma-url", default=argparse.SUPPRESS,
                       help="use a Chroma server, e.g. http://127.0.0.1:8000, instead of embedded Chroma")
    group.add_argument("--model", default=argparse.SUPPRESS,
                       help="embedding model: a Hugging Face id or a local folder (default all-MiniLM-L6-v2)")
    group.add_argument("--engine-url", default=argparse.SUPPRESS,
                       help="use the engine served at this URL (knowledge-explorer serve) instead of in-process")
    group.add_argument("--token-file", default=argparse.SUPPRESS,
                       help="file holding the bearer token for --engine-url or serve (or set KE_TOKEN)")
    group.add_argument("--backend", default=argparse.SUPPRESS, choices=BACKENDS,
                       help="embedding backend (default auto: openvino-int8 or onnx-int8, whichever measured faster on this "
                            "machine; an index keeps the backend it was built with)")
    group.add_argument("--device", default=argparse.SUPPRESS, choices=("auto", "cpu", "cuda", "mps"),
                       help="where the torch backend runs (default auto: a GPU when torch sees one)")
    group.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS, help="log more")
    return common


def build_parser() -> argparse.ArgumentParser:
    from services.core.settings import DEFAULT_STRATEGY

    common = common_options()
    parser = Parser(
        prog="knowledge-explorer", parents=[common],
        description="Explore a codebase by meaning and compare reranking strategies side by side.")
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", parents=[common], help="index a workspace (incrementally)")
    index.add_argument("path")
    index.add_argument("--full", action="store_true", help="rebuild the whole index")
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    health = sub.add_parser("health", parents=[common], help="show a workspace's index health")
    health.add_argument("path")
    health.add_argument("--json", action="store_true")
    query = sub.add_parser("query", parents=[common], help="ask a question")
    query.add_argument("path")
    query.add_argument("question")
    query.add_argument("--strategy", default=DEFAULT_STRATEGY,
                       help=f"reranking strategy (default {DEFAULT_STRATEGY}: the best measured, see `strategies`)")
    query.add_argument("--top-k", type=int, default=10, help="results to show, 1 to 100 (default 10)")
    query.add_argument("--min-relevance", type=float, default=None,
                       help="hide results below this relevance, 0 to 1 (default 0.2)")
    query.add_argument("--language", action="append", default=[], help="only this language (repeatable)")
    query.add_argument("--path-glob", default="", help="only paths matching this glob, e.g. 'src/*.py'")
    query.add_argument("--json", action="store_true")
    query.add_argument("--workspace", action="append", default=[], metavar="DIR",
                       help="search this workspace too (repeatable): one merged ranking, each result labelled "
                            "with its workspace")
    query.add_argument("--files", action="store_true",
                       help="answer with ranked files (--top-k files), each with why it ranks there")
    query.add_argument("--before", type=int, default=None,
                       help="ignore commits at or after this unix time (history votes; `tuned`'s history adapter)")
    strategies = sub.add_parser("strategies", parents=[common], help="list reranking strategies")
    strategies.add_argument("--json", action="store_true")
    gui = sub.add_parser("gui", parents=[common], help="open the desktop app (the default)")
    gui.add_argument("path", nargs="?")
    gui.add_argument("--screenshot", help="write a PNG of the window to this file and exit")
    gui.add_argument("--query", help="with --screenshot: run this question first")
    gui.add_argument("--strategy", help="with --screenshot: use this strategy")
    serve = sub.add_parser("serve", parents=[common], help="serve the engine over HTTP (REST, MCP at /mcp)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (non-loopback needs --token-file)")
    serve.add_argument("--port", type=int, default=8765, help="port (0: any free port)")
    serve.add_argument("--allow-root", action="append", default=[], metavar="DIR",
                       help="clients may register this folder and its subfolders (repeatable); by default only "
                            "folders opened on this machine from the CLI or window. Never /, the home folder "
                            "or system folders")
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="answer requests for this Host name too (repeatable; '*': any), beside the loopback "
                            "names and --host (DNS rebinding protection)")
    sub.add_parser("mcp", parents=[common], help="serve the engine as an MCP server over stdio")
    desktop = sub.add_parser("desktop", help="add or remove the app-menu entry and icon (freedesktop, "
                                             "under $XDG_DATA_HOME, default ~/.local/share)")
    desktop.add_argument("action", choices=("install", "uninstall"),
                         help="install: write the .desktop file and icon (the entry runs this knowledge-explorer); "
                              "uninstall: remove them")
    _add_goto(sub, common)
    _add_graph(sub, common)
    _add_eval(sub, common)
    return parser


# --- go to symbol / file (services/retrieval/goto.py) ---
def _add_goto(sub, common) -> None:
    goto = sub.add_parser("goto", parents=[common], help="go to a symbol's definition or a file by name (fuzzy)",
                          description="Where NAME is defined: `goto FixtureManager`, `goto fm`, `goto Class.method`; "
                                      "a path goes to a file: `goto printing/latex.py`, `goto latex.py:120`.")
    goto.add_argument("where", nargs="+", metavar="[PATH] NAME",
                      help="the workspace folder (default: the current folder), then the name or path")
    goto.add_argument("--files", action="store_true", help="match file paths (automatic for a path-like NAME)")
    goto.add_argument("--limit", type=int, default=10, help="matches to show, 1 to 500 (default 10)")
    goto.add_argument("--json", action="store_true", help="print the REST API's JSON")


async def cmd_goto(args, service) -> int:
    """Exit 0 with matches, 1 with none (the message says so), as grep does."""
    from app import operations
    from app.render import goto_json, goto_text  # here, not at the top: keeps the codec out of `gui`'s start-up

    if len(args.where) > 2:
        print("error: give the workspace folder and one name (quote a name with spaces)", file=sys.stderr)
        return 2
    path, name = (args.where if len(args.where) == 2 else (".", args.where[0]))
    find = operations.find_file if args.files or looks_like_path(name) else operations.find_symbol
    answer = await find(service, os.path.abspath, name, path, args.limit)
    emit(args, answer, goto_json, goto_text)
    return 0 if answer.hits else 1


def looks_like_path(text: str) -> bool:
    """A name meant for go to file: it has a folder, a line number or ends in a known file extension
    (`printing/latex`, `store.py:40`, `latex.py`; not `Store.save`)."""
    from services.indexing.scanning import LANGUAGE_BY_EXTENSION
    from services.retrieval.goto import parse_target

    name, line = parse_target(text)
    extension = name[name.rfind("."):].lower() if "." in name else ""
    return "/" in name or "\\" in name or line is not None or extension in LANGUAGE_BY_EXTENSION


# --- the code graph: find references, uses (services/retrieval/graph.py) ---
def _add_graph(sub, common) -> None:
    helps = {"refs": ("who uses a definition (find references)",
                      "Every use of NAME (`parse`, `Class.method`, or a chunk id), grouped by file, with the line "
                      "and the function or class that uses it."),
             "uses": ("what a definition uses (its calls, imports, bases)",
                      "The definitions NAME's code uses, grouped by the file defining them, with the lines.")}
    for command, (short, long) in helps.items():
        parser = sub.add_parser(command, parents=[common], help=short, description=long)
        parser.add_argument("where", nargs="+", metavar="[PATH] NAME",
                            help="the workspace folder (default: the current folder), then the name or chunk id")
        parser.add_argument("--json", action="store_true", help="print the REST API's JSON")


async def cmd_graph(args, service) -> int:
    """Exit 0 with links, 1 with none (the message says so), as grep does."""
    from app import operations
    from app.render import graph_json, graph_text  # here, not at the top: keeps the codec out of `gui`'s start-up

    if len(args.where) > 2:
        print("error: give the workspace folder and one name (quote a name with spaces)", file=sys.stderr)
        return 2
    path, name = (args.where if len(args.where) == 2 else (".", args.where[0]))
    find = operations.find_references if args.command == "refs" else operations.find_uses
    answer = await find(service, os.path.abspath, name, path)
    emit(args, answer, graph_json, graph_text)
    return 0 if answer.total else 1


def _add_eval(sub, common) -> None:
    try:
        from app.eval_command import add_eval_parser
    except ImportError:
        return
    add_eval_parser(sub, parents=[common])


def normalise_argv(argv: list[str]) -> list[str]:
    """`knowledge-explorer [PATH]` means `knowledge-explorer gui [PATH]`."""
    if any(a in ("-h", "--help") for a in argv[:1]):
        return argv
    first = _first_positional(argv)
    if first is None or first not in COMMANDS:
        return ["gui", *argv]
    return argv


def _first_positional(argv: list[str]) -> str | None:
    takes_value = {"--data-dir", "--chroma-url", "--model", "--engine-url", "--token-file", "--backend", "--device"}
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def not_utf8(argv: list[str]) -> str | None:
    """The first argument that is not UTF-8 text (Python keeps its bytes as lone surrogates), if any."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


def collect_from_now() -> None:
    """A command that runs on (index, eval, the window, the servers) collects garbage again once its modules are
    imported; what they made is frozen, never scanned. One that answers once and exits (exit_now) never does."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    from_command_line = argv is None
    if from_command_line:  # imports make garbage: collecting it cost a cold question ~50 ms of its ~0.4 s
        gc.disable()
    argv = list(sys.argv[1:] if argv is None else argv)
    bad = not_utf8(argv)
    if bad is not None:
        print(f"error: the argument {bad!r} is not valid UTF-8 text (check the terminal's encoding)", file=sys.stderr)
        return 2
    args = build_parser().parse_args(normalise_argv(argv))
    if args.command == "desktop":  # before logging: it touches nothing but the menu entry
        return cmd_desktop(args)
    from app.logging_setup import setup_logging
    from services.core.settings import default_data_dir

    global LOG_FILE
    LOG_FILE = setup_logging(getattr(args, "verbose", False), getattr(args, "data_dir", None) or default_data_dir(),
                             quiet=args.command in COMMAND_HANDLERS)
    from services.core.errors import KnowledgeError
    from services.core.settings import check_env_names

    try:
        check_env_names()  # a misspelt KE_ name is one line, whichever engine (local, warm, remote) answers
    except KnowledgeError as error:
        return print_error(error)
    if args.command == "gui":
        from app.gui import run_gui
        from app.render import shown
        from services.core.errors import KnowledgeError

        try:
            kwargs = service_kwargs(args)  # a bad KE_* value is one line, before any window opens
        except KnowledgeError as error:
            print(f"error: {shown(error)}", file=sys.stderr)
            return 1
        collect_from_now()
        return run_gui(args.path, args.screenshot, args.query, args.strategy, kwargs,
                       getattr(args, "engine_url", None), getattr(args, "token_file", None), LOG_FILE)
    if args.command in ("serve", "mcp"):
        return run_service_command(args)
    if args.command == "query" and not valid_query(args):
        return 2
    code = asyncio.run(run_command(args))
    if from_command_line:
        exit_now(code)
    return code


def cmd_desktop(args) -> int:
    """`desktop install|uninstall`: one line saying what was written or removed."""
    from app import desktop_entry
    from app.render import shown

    try:
        print(desktop_entry.install() if args.action == "install" else desktop_entry.uninstall())
    except OSError as error:
        print(f"error: {shown(error)}", file=sys.stderr)
        return 1
    return 0


def exit_now(code: int) -> None:
    """End a one-shot command at once, its service closed (the index consistent, the data dir given up):
    the interpreter's teardown of torch, onnxruntime and Chroma's native threads took up to 9 s after a
    Ctrl-C on a busy machine. Only for a real command line; a caller of main(argv) gets the status back."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def valid_query(args) -> bool:
    """Parse `query`'s options as the server parses a body (app.limits: types and ranges), into args.request;
    print one line when they fail (the question's own rules are the engine's, checked as it is asked)."""
    from app.limits import query_request
    from app.render import shown
    from services.core.errors import KnowledgeError

    if args.files and args.workspace:
        print("error: --files answers one workspace; drop --workspace or --files", file=sys.stderr)
        return False
    fields = {"question": args.question, "top_k": args.top_k, "strategy": args.strategy,
              "languages": tuple(args.language), "path_glob": args.path_glob, "before": args.before}
    if args.min_relevance is not None:
        fields["min_relevance"] = args.min_relevance
    try:
        args.request = query_request(**fields)  # parsed once, here: cmd_query asks with it
    except KnowledgeError as error:
        print(f"error: {shown(error)}", file=sys.stderr)
        return False
    return True


def run_service_command(args) -> int:
    """`serve` (HTTP) or `mcp` (stdio); errors print one line."""
    from services.core.errors import KnowledgeError

    try:
        if args.command == "serve":
            from app.server import run_server

            collect_from_now()
            return run_server(service_kwargs(args), args.host, args.port, getattr(args, "token_file", None),
                              allowed_roots=args.allow_root, allowed_hosts=args.allowed_host)
        from app.mcp_server import run_stdio

        engine = warm_engine(args)
        if engine is None:
            load_soon(args)  # ready for the first question, however soon it comes
        engine = engine or local_engine(args)
        collect_from_now()
        return run_stdio(engine)
    except KnowledgeError as error:
        return print_error(error)
    except KeyboardInterrupt:
        return 130


def warm_engine(args):
    """A RemoteEngine for --engine-url, or for the server that owns the data dir when one answers; else None."""
    from services.transport.remote import RemoteEngine, token_from

    url = getattr(args, "engine_url", None)
    if not url:
        from services.storage.ownership import read_owner
        from services.core.settings import default_data_dir

        owner = read_owner(getattr(args, "data_dir", None) or default_data_dir())
        url = owner.url if owner else None
    if not url:
        return None
    engine = RemoteEngine(url, token=token_from(getattr(args, "token_file", None)),
                          data_dir=getattr(args, "data_dir", None))
    if getattr(args, "engine_url", None) or engine.ping():
        return engine
    engine.close()
    return None


def load_soon(args) -> None:
    """Load the engine's question encoder and import the vector store's client (chromadb, ~0.4 s) in threads,
    while the engine's modules import and the index opens: a cold `query` waits for all three, an MCP server's
    first question for none. A failure is left to the engine, which loads it again and says why."""
    from services.encoders.embedder import query_embedder

    embedder = query_embedder(service_kwargs(args)["settings"])

    def ahead(what: str, work) -> None:
        try:
            work()
        except Exception:  # the engine does it again where it needs it, and says why it failed
            import logging

            logging.getLogger("app.cli").debug("%s ahead failed", what, exc_info=True)

    threading.Thread(target=ahead, args=("loading the encoder", embedder.load), daemon=True,
                     name="ke-encoder-ahead").start()
    threading.Thread(target=ahead, args=("importing chromadb", lambda: importlib.import_module("chromadb")),
                     daemon=True, name="ke-store-ahead").start()


def by_name(args) -> bool:
    """Whether `query` may be answered without vectors: `auto` on a name, as chunks (services/retrieval/
    name_answer.py). Its encoder is then not loaded ahead (a name the index does not define loads it when asked)."""
    from services.retrieval.plan import plan

    return args.strategy == "auto" and not args.files and plan(args.question).by_name


def local_engine(args):
    from services.engine.service import LocalEngine

    return LocalEngine(**service_kwargs(args))


def service_kwargs(args) -> dict:
    from services.core.settings import settings_from_env

    settings = settings_from_env()
    if getattr(args, "model", None):
        settings = settings.with_changes(embedding_model=args.model)
    if getattr(args, "backend", None):
        settings = settings.with_changes(embedding_backend=args.backend)
    if getattr(args, "device", None):
        settings = settings.with_changes(embedding_device=args.device)
    return {"settings": settings, "data_dir": getattr(args, "data_dir", None),
            "chroma_url": getattr(args, "chroma_url", None)}


LOG_FILE = None  # where main() sends the log (tracebacks included)


def print_error(error: Exception) -> int:
    """One line on stderr; the traceback of an unexpected error goes to the log file (-v shows it)."""
    import logging

    from app.render import shown
    from services.core.errors import KnowledgeError

    if isinstance(error, KnowledgeError):
        print(f"error: {shown(error)}", file=sys.stderr)
        return 1
    logging.getLogger("app.cli").info("the command failed", exc_info=error)  # the log file (and -v) only
    if isinstance(error, UnicodeError):
        text = "the arguments are not valid UTF-8 text (check the terminal's encoding)"
    else:
        text = " ".join(f"{type(error).__name__}: {error}".split())[:300]
    where = f"; details in {LOG_FILE}" if LOG_FILE else ""
    print(f"error: {shown(text)}{where}", file=sys.stderr)
    return 1


async def run_command(args) -> int:
    try:
        service = (args.command in WARM_COMMANDS and warm_engine(args)) or None
        if service is None and args.command == "query" and not by_name(args):
            load_soon(args)
        service = service or local_engine(args)
        if args.command in ("index", "eval"):
            collect_from_now()
    except Exception as error:
        return print_error(error)
    try:
        return await COMMAND_HANDLERS[args.command](args, service)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        return print_error(error)
    finally:
        service.close()


async def cmd_index(args, service) -> int:
    from app import operations
    from app.progress import TerminalProgress
    from app.render import index_report_json, index_report_text  # here, not at the top: keeps the codec out of `gui`'s start-up (~60 ms)

    progress = TerminalProgress(enabled=not args.json and sys.stderr.isatty())
    cancel = stop_on_interrupt()
    try:
        report = await operations.reindex(service, as_given, args.path, args.full, progress=progress.update,
                                          cancel=cancel)
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        progress.close()
    if report.cancelled:
        print(f"Stopped: {report.files_indexed} files indexed, {report.chunks_total} chunks in the index; "
              "it is consistent, run the command again to go on.", file=sys.stderr)
        return 130
    return emit(args, report, index_report_json, index_report_text)


def stop_on_interrupt() -> threading.Event:
    """Ctrl-C (SIGINT) sets the returned event: the run stops after the batch it is in."""
    cancel = threading.Event()

    def interrupted() -> None:
        if not cancel.is_set():
            print("\nStopping after the current batch...", file=sys.stderr, flush=True)
        cancel.set()

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupted)
    return cancel


def emit(args, value, as_json, as_text) -> int:
    """Print a command's result as JSON (--json: app.render's, the same as the REST API's) or as text, whose
    control characters (but its line breaks) are escaped: a file name cannot drive the terminal."""
    from app.render import shown

    print(json.dumps(as_json(value), indent=2) if args.json else shown(as_text(value), keep="\n"))
    return 0


async def cmd_health(args, service) -> int:
    from app import operations
    from app.render import health_json, health_text  # here, not at the top: keeps the codec out of `gui`'s start-up (~60 ms)

    return emit(args, await operations.index_status(service, as_given, args.path), health_json, health_text)


async def cmd_query(args, service) -> int:
    """search (with --workspace: over several) or, with --files, find_files: the operations MCP and REST run."""
    from app import operations
    from app.render import (  # here, not at the top: keeps the codec out of `gui`'s start-up
        files_json, files_text, multi_query_json, multi_query_text, query_json, query_text,
    )

    if args.files:
        answer = await operations.ask_files(service, as_given, args.request, args.path, args.top_k)
        return emit(args, answer, files_json, files_text)
    result = await operations.ask(service, as_given, args.request, args.path, args.workspace)
    if operations.is_many(result):
        return emit(args, result, multi_query_json, multi_query_text)
    return emit(args, result, query_json, query_text)


def as_given(workspace: str) -> str:
    """The CLI's workspace: the folder as the user typed it (the engine resolves it)."""
    return workspace


async def cmd_strategies(args, service) -> int:
    from app import operations
    from app.render import strategies_json, strategies_text  # here, not at the top: keeps the codec out of `gui`'s start-up (~60 ms)

    return emit(args, await operations.list_strategies(service, as_given), strategies_json, strategies_text)


async def cmd_eval(args, service) -> int:
    from app.eval_command import run_eval_command

    return await run_eval_command(args, service)


COMMAND_HANDLERS = {"index": cmd_index, "health": cmd_health, "query": cmd_query,
                    "strategies": cmd_strategies, "eval": cmd_eval, "goto": cmd_goto,
                    "refs": cmd_graph, "uses": cmd_graph}

if __name__ == "__main__":
    sys.exit(main())
