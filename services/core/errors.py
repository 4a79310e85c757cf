"""The engine's error types and their one table of stable codes.

Each error carries a message a user can act on, a stable `code` and the HTTP `status` a server
answers with. The server sends {"error": {"code", "message"}}; the client rebuilds the same class
with `error_from(code, message)`, so a caller catches the same type whichever way it reached the engine.
"""

from __future__ import annotations


class KnowledgeError(Exception):
    """Base class for every error the engine reports to a user."""

    code = "error"
    status = 400


class WorkspaceError(KnowledgeError):
    """The workspace folder is missing, not a folder, or unreadable."""

    code = "bad_workspace"


class ModelLoadError(KnowledgeError):
    """An embedding or cross-encoder model could not be loaded."""

    code, status = "model_unavailable", 503


class InvalidVectors(ModelLoadError):
    """The embedding model produced vectors that are not finite (NaN or infinity): damaged model files.
    Such vectors are never stored nor searched with."""

    code = "invalid_vectors"


class IndexMissingError(KnowledgeError):
    """The workspace has no index (never built, or its folder was deleted)."""

    code, status = "not_indexed", 409


class QueryError(KnowledgeError):
    """The question or the query options are invalid."""

    code = "bad_request"


class InvalidRequest(QueryError):
    """A request body does not match its schema (a server's validation)."""

    code, status = "invalid_request", 422


class MalformedJson(QueryError):
    """A request body is not valid JSON."""

    code = "malformed_json"


class BodyTooLarge(QueryError):
    """A request body is larger than the server accepts."""

    code, status = "body_too_large", 413


class StrategyUnavailable(KnowledgeError):
    """A reranking strategy cannot run now (missing model, no endpoint); the pipeline falls back."""

    code, status = "strategy_unavailable", 503


class Cancelled(KnowledgeError):
    """A long operation was cancelled by the user."""

    code, status = "cancelled", 409


class IndexStoreError(KnowledgeError):
    """Indexing stopped because the vector store, the catalogue or the model failed for every file
    (disk full, Chroma down). Every file committed before stays; the next run resumes."""

    code, status = "index_store_failed", 500


class IndexUnavailable(IndexStoreError):
    """A part of the index cannot be read or written now (a full disk, too many open files, a permission,
    a lock another process holds, a timeout): nothing was changed, and it is whole once that passes.
    Never treated as damage (services/storage/faults.py). The message starts "unavailable: " or "busy: "."""

    code, status = "index_unavailable", 503


class UnknownWorkspace(WorkspaceError):
    """No workspace with that id is registered (on a server)."""

    code, status = "unknown_workspace", 404


class ForbiddenWorkspace(WorkspaceError):
    """A server may not serve that folder (a system folder, or one its operator did not allow)."""

    code, status = "forbidden_workspace", 403


class PathEscape(QueryError):
    """A path in a request points outside its workspace."""

    code = "path_escape"


class IndexRunning(KnowledgeError):
    """An index run is already going on for this workspace (on a server)."""

    code, status = "index_running", 409


class IndexBusyError(KnowledgeError):
    """Another process owns this data dir; this one must not write (or open) its indexes.
    `owner` is the services.storage.ownership.Owner when known (None when it came over HTTP)."""

    code, status = "data_dir_busy", 409

    def __init__(self, message: str, owner=None) -> None:
        super().__init__(message)
        self.owner = owner

    def __reduce__(self):  # survives the engine process's pipe
        return (IndexBusyError, (str(self), self.owner))


class EngineStopped(KnowledgeError):
    """The engine process ended unexpectedly (it is restarted on the next call)."""

    code, status = "engine_stopped", 503


class EngineUnreachable(KnowledgeError):
    """The server does not answer."""

    code, status = "engine_unreachable", 503


class Unauthorized(KnowledgeError):
    """The server wants a valid bearer token."""

    code, status = "unauthorized", 401


class NotFound(KnowledgeError):
    """No such route on the server."""

    code, status = "not_found", 404


class HttpError(KnowledgeError):
    """Any other HTTP error of the server (its status varies: 405, ...)."""

    code = "http_error"


class InternalError(KnowledgeError):
    """The server failed on a request (details in its log)."""

    code, status = "internal", 500


ERRORS: dict[str, type[KnowledgeError]] = {cls.code: cls for cls in (
    KnowledgeError, WorkspaceError, ModelLoadError, InvalidVectors, IndexMissingError, QueryError, InvalidRequest, MalformedJson,
    BodyTooLarge, StrategyUnavailable, Cancelled, IndexStoreError, IndexUnavailable, UnknownWorkspace,
    ForbiddenWorkspace, PathEscape, IndexRunning, IndexBusyError, EngineStopped, EngineUnreachable, Unauthorized,
    NotFound, HttpError, InternalError,
)}


def error_from(code: str, message: str) -> KnowledgeError:
    """The error a code stands for (KnowledgeError for a code this table does not know)."""
    return ERRORS.get(code, KnowledgeError)(message)
