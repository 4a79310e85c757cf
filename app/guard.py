"""The guard in front of every route of `knowledge-explorer serve` (the MCP endpoint too): the token, the Host
and Origin a request may come with, JSON bodies only, a size limit; and the JSON error every refusal answers."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from fastapi.responses import JSONResponse

from services.core.errors import (
    BodyTooLarge, HttpError, KnowledgeError, Unauthorized,
)



def error_response(error: KnowledgeError, status: int | None = None) -> JSONResponse:
    """{"error": {"code", "message"}} with the error's code and HTTP status (services.core.errors). A message
    quoting a path that is not valid UTF-8 shows its odd characters escaped."""
    message = str(error).encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": {"code": error.code, "message": message}}, status_code=status or error.status)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- guards, in front of every route (the MCP endpoint too) ---
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")


def host_name(value: str) -> str:
    """The name in a Host header or URL authority, without the port: "[::1]:8765" -> "::1"."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_host_names(host: str, extra: Sequence[str] = ()) -> set[str] | None:
    """The Host names the server answers to: the loopback names, the bound address (unless a wildcard one)
    and `extra` (--allowed-host); None when `extra` holds "*" (no check)."""
    if "*" in extra:
        return None
    names = set(LOOPBACK_NAMES) | {host_name(h) for h in extra}
    if host not in ("0.0.0.0", "::", ""):
        names.add(host_name(host) if not host.count(":") > 1 else host.lower())
    return names


class Guard:
    """Pure ASGI middleware: 401 without the bearer token; 400 for a Host header the server does not answer
    to (DNS rebinding); 403 for a request from another site's page (its Origin); 415 for a state-changing
    request whose body is not JSON (what a cross-site form or `text/plain` fetch sends); 413 for bodies
    over `max_body` bytes."""

    def __init__(self, app, token: str | None, max_body: int, hosts: set[str] | None = None) -> None:
        self.app, self.token, self.max_body, self.hosts = app, token, max_body, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        refused = self._refusal(scope, headers)
        if refused is not None:
            return await refused(scope, receive, send)
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            return await self._too_large(scope, receive, send)
        body, more = [], True
        size = 0
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.append(message.get("body", b""))
            size += len(body[-1])
            more = message.get("more_body", False)
            if size > self.max_body:
                return await self._too_large(scope, receive, send)
        if size and scope["method"] in STATE_CHANGING and b"content-type" not in headers:
            return await self._not_json(scope, receive, send)
        replay = [{"type": "http.request", "body": b"".join(body), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        return await self.app(scope, replayed, send)

    def _refusal(self, scope, headers: dict) -> JSONResponse | None:
        """The response refusing the request from its headers alone, or None."""
        if self.token is not None and not self._authorised(headers):
            return error_response(Unauthorized("A valid bearer token is required."))
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._answers_to(host, any_address=True):
            return error_response(HttpError(f"This server does not answer to the host name {host!r} (DNS "
                                            "rebinding protection); start it with --allowed-host NAME to add one."),
                                  400)
        origin = headers.get(b"origin")
        if origin is not None and not self._answers_to(urlsplit(origin.decode("latin-1")).netloc):
            return error_response(HttpError("Requests from other sites' pages are refused."), 403)
        content_type = headers.get(b"content-type")
        if scope["method"] in STATE_CHANGING and content_type is not None and not is_json(content_type):
            return error_response(HttpError(NOT_JSON), 415)
        return None

    def _answers_to(self, authority: str, any_address: bool = False) -> bool:
        """A Host (or Origin authority) this server answers to: a listed name, a loopback address, or (for
        the Host header) any address: DNS rebinding needs a name, an address cannot be rebound."""
        name = host_name(authority)
        if self.hosts is None or name in self.hosts or is_loopback(name):
            return True
        return any_address and is_address(name)

    async def _not_json(self, scope, receive, send):
        return await error_response(HttpError(NOT_JSON), 415)(scope, receive, send)

    def _authorised(self, headers: dict) -> bool:
        value = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, given = value.partition(" ")
        token = self.token or ""  # (asked only when the server has one)
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())

    async def _too_large(self, scope, receive, send):
        message = f"The request body is larger than {self.max_body} bytes."
        return await error_response(BodyTooLarge(message))(scope, receive, send)


NOT_JSON = "The request body must be JSON (Content-Type: application/json)."


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_json(content_type: bytes) -> bool:
    media = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
