"""The limits every face applies to its input: the REST body schema (services.core.messages.QueryRequest),
parsed the same way for MCP tools and CLI arguments (query_request), plus one validator per label field beyond
the schema (FIELD_CHECKS: workspace-relative paths, names). A question's own rules (its length, the strategy,
known languages, a path filter inside the workspace) are the engine's, checked once whichever face asks
(LocalEngine.validate)."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable

from pydantic import TypeAdapter, ValidationError

from services.core.errors import InvalidRequest, QueryError
from services.core.messages import MAX_QUESTION_CHARS, QueryRequest
from services.core.paths import check_relative_path

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
    return request


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


FIELD_CHECKS = {"path": check_relative_path, "symbol": check_name, "question": check_question}


def check_fields(**fields) -> None:
    """Check each field with its one validator (FIELD_CHECKS); the first failure is raised (a QueryError,
    400, with one line saying what is wrong), the same on every face."""
    for name, value in fields.items():
        FIELD_CHECKS[name](value)
