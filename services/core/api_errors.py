"""Errors of the service API (light: the remote client imports them without the engine)."""

from services.core.errors import KnowledgeError


class UnknownWorkspace(KnowledgeError):
    """No workspace with that id is registered."""


class PathEscape(KnowledgeError):
    """A path in a request points outside its workspace."""


class IndexRunning(KnowledgeError):
    """An index run is already going on for this workspace (on a server)."""
