"""The limits every face applies to a question: the REST body schema (services.core.messages.QueryRequest),
checked the same way for MCP tools and CLI arguments, plus the known languages."""

from __future__ import annotations

import math

from pydantic import TypeAdapter, ValidationError

from services.core.errors import InvalidRequest, QueryError
from services.core.messages import QueryRequest

_QUERY = TypeAdapter(QueryRequest)


def describe(problem: dict) -> str:
    """One pydantic problem as "field: message" (the REST API's 422 message)."""
    where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body")
    return f"{where}: {problem.get('msg', 'invalid')}" if where else problem.get("msg", "invalid")


def query_request(**fields) -> QueryRequest:
    """A QueryRequest from `fields`, or InvalidRequest with the message REST gives for the same body;
    QueryError for an unknown language."""
    relevance = fields.get("min_relevance")
    if isinstance(relevance, float) and not math.isfinite(relevance):
        raise InvalidRequest("min_relevance: Input should be a finite number between 0 and 1")
    try:
        request = _QUERY.validate_python(fields)
    except ValidationError as error:
        raise InvalidRequest("; ".join(describe(p) for p in error.errors()[:5])) from None
    check_languages(request.languages)
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
