"""The engine's own error types: each carries a message a user can act on."""


class KnowledgeError(Exception):
    """Base class for every error the engine reports to a user."""


class WorkspaceError(KnowledgeError):
    """The workspace folder is missing, not a folder, or unreadable."""


class ModelLoadError(KnowledgeError):
    """An embedding or cross-encoder model could not be loaded."""


class IndexMissingError(KnowledgeError):
    """The workspace has no index (never built, or its folder was deleted)."""


class QueryError(KnowledgeError):
    """The question or the query options are invalid."""


class StrategyUnavailable(KnowledgeError):
    """A reranking strategy cannot run now (missing model, no endpoint); the pipeline falls back."""


class Cancelled(KnowledgeError):
    """A long operation was cancelled by the user."""


class IndexStoreError(KnowledgeError):
    """Indexing stopped because the vector store, the catalogue or the model failed for every file
    (disk full, Chroma down). Every file committed before stays; the next run resumes."""
