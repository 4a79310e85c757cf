"""The limits every face applies to its input: the REST body schema (services.core.messages.QueryRequest),
checked the same way for MCP tools and CLI arguments, plus one validator per field beyond the schema
(FIELD_CHECKS: known languages, path filters, workspace-relative paths, names) that REST, MCP and the CLI
all call through check_fields."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable

from pydantic import TypeAdapter, ValidationError

from services.core.errors import InvalidRequest, QueryError
from services.core.messages import MAX_QUESTION_CHARS, QueryRequest
from services.transport.paths import check_glob, check_relative_path

_QUERY = TypeAdapter(QueryRequest)
QUERY_FIELDS = [field.name for field in dataclasses.fields(QueryRequest)]


UNKNOWN = ("unexpected_keyword_argument", "extra_forbidden")  # pydantic's types for a field the model lacks


def unknown_field(name: str, known: Iterable[str]) -> str:
    """"unknown field 'topk'; did you mean 'top_k'?" (the known names when none is close)."""
    known = sorted(set(known))
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known) or 'none'}."
    return f"unknown field {name!r}; {hint}"


def check_known(given: Iterable[str], known: Iterable[str]) -> None:
    """InvalidRequest (422) for the first name in `given` that is not in `known`: never dropped."""
    known = set(known)
    for name in given:
        if name not in known:
            raise InvalidRequest(unknown_field(name, known))


def describe(problem: dict, known: Iterable[str] = ()) -> str:
    """One pydantic problem as "field: message" (the REST API's 422 message); an unknown field as
    unknown_field says it, with the `known` names."""
    if problem.get("type") in UNKNOWN and problem.get("loc"):
        return unknown_field(str(problem["loc"][-1]), known)
    where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body")
    return f"{where}: {problem.get('msg', 'invalid')}" if where else problem.get("msg", "invalid")


def query_request(**fields) -> QueryRequest:
    """A QueryRequest from `fields`, or InvalidRequest with the message REST gives for the same body;
    QueryError for an unknown language."""
    check_known(fields, QUERY_FIELDS)
    try:
        request = _QUERY.validate_python(fields)
    except ValidationError as error:
        raise InvalidRequest("; ".join(describe(p) for p in error.errors()[:5])) from None
    check_fields(languages=request.languages, path_glob=request.path_glob)
    return request


def known_languages() -> list[str]:
    # here, not at the top: the scanner's tables pull in pathspec, which the CLI's start-up does not need
    from services.indexing.scanning import LANGUAGE_BY_EXTENSION, LANGUAGE_BY_INTERPRETER, LANGUAGE_BY_NAME

    return sorted({*LANGUAGE_BY_EXTENSION.values(), *LANGUAGE_BY_NAME.values(), *LANGUAGE_BY_INTERPRETER.values()})


def check_languages(languages) -> None:
    if not languages:
        return
    known = known_languages()
    unknown = [language for language in languages if language not in known]
    if unknown:
        raise QueryError(f"Unknown language {unknown[0]!r}. Known: {', '.join(known)}.")


MAX_NAME_CHARS = 1000


def check_name(symbol: str) -> None:
    """A symbol name (a label's): no control characters, at most MAX_NAME_CHARS characters."""
    if len(symbol) > MAX_NAME_CHARS:
        raise QueryError(f"symbol: at most {MAX_NAME_CHARS} characters (got {len(symbol):,}).")
    if any(ord(c) < 32 or ord(c) == 127 for c in symbol):
        raise QueryError("symbol: control characters (a NUL byte, a newline, an escape) are not allowed.")


def check_question(question: str) -> None:
    if not question.strip() or len(question) > MAX_QUESTION_CHARS:
        raise QueryError(f"question: give 1 to {MAX_QUESTION_CHARS} characters.")


FIELD_CHECKS = {"languages": check_languages, "path_glob": check_glob, "path": check_relative_path,
                "symbol": check_name, "question": check_question}


def check_fields(**fields) -> None:
    """Check each field with its one validator (FIELD_CHECKS); the first failure is raised (a QueryError,
    400, with one line saying what is wrong), the same on every face."""
    for name, value in fields.items():
        FIELD_CHECKS[name](value)
