"""Request and response types of the engine's service API (HTTP and MCP), beside services.core.models.

Plain dataclasses: FastAPI validates request bodies against them and the remote client decodes
responses with services.core.codec. Limits (top_k, documents) are checked here, so every face of
the API rejects the same bad input with the same message.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from services.core.models import IndexReport, ProgressEvent, QueryOptions
from services.core.settings import DEFAULT_STRATEGY

MAX_TOP_K = 100
MAX_DOCUMENTS = 200
MAX_DOCUMENT_CHARS = 20_000
# One limit on a question for every face (CLI, REST, MCP and the window, checked by the engine too): room for a
# real bug report with its traceback (the longest of the pytest and Sphinx reports SWE-bench collected has 22,778
# characters). A long question is reduced to keep answers fast, and its result says how
# (services.retrieval.search_steps.reduction_note).
MAX_QUESTION_CHARS = 50_000


def question_too_long(length: int) -> str:
    return (f"The question has {length:,} characters; the limit is {MAX_QUESTION_CHARS:,} "
            "(enough for a bug report with its traceback). Shorten it.")

# Every request type refuses a field it does not know (a typo, `topk`, or one another route takes): never dropped.
STRICT = ConfigDict(extra="forbid")

def _fraction(value: float) -> float:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):  # NaN and infinity fail any range check
        raise PydanticCustomError("fraction", "Input should be a finite number from 0 to 1 (got {value})",
                                  {"value": value})
    return value


def _normalized(value: bool) -> bool:
    if not value:
        raise PydanticCustomError("normalized", "Scores are always normalized to 0-1 here (min_relevance and "
                                  "score_threshold are on that scale); leave it true")
    return value


TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
Fraction = Annotated[float, AfterValidator(_fraction), WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]
Question = Annotated[str, Field(min_length=1, max_length=MAX_QUESTION_CHARS)]


@dataclass(frozen=True)
class WorkspaceRequest:
    __pydantic_config__ = STRICT

    path: str  # a folder on the server's machine


@dataclass(frozen=True)
class Workspace:
    id: str  # services.storage.workspace_index.workspace_key of the folder
    path: str


@dataclass(frozen=True)
class QueryRequest:
    """QueryOptions without the workspace (it is in the URL), plus the question."""
    __pydantic_config__ = STRICT

    question: Question
    top_k: TopK = 10
    strategy: str = DEFAULT_STRATEGY
    min_relevance: Fraction = 0.2
    languages: tuple[str, ...] = ()
    path_glob: str = ""
    context_lines: Annotated[int, Field(ge=0, le=200)] = 5
    expand_context: bool = True
    use_cache: bool = True
    before: int | None = None  # history cut-off (unix time): commits at or after it are ignored
    pool: TopK | None = None  # vector candidates the strategy sees (the spec's initial_top_k); None: its own

    def options(self, workspace: str) -> QueryOptions:
        return QueryOptions(workspace=workspace, top_k=self.top_k, strategy=self.strategy,
                            min_relevance=self.min_relevance, languages=tuple(self.languages),
                            path_glob=self.path_glob, context_lines=self.context_lines,
                            expand_context=self.expand_context, use_cache=self.use_cache, before=self.before,
                            pool=self.pool)


MAX_WORKSPACES = 20  # as services.retrieval.multi.MAX_WORKSPACES


@dataclass(frozen=True)
class MultiQueryRequest(QueryRequest):
    """POST /v1/query: a query's fields plus the registered workspaces (ids or folders) to ask."""

    workspaces: Annotated[tuple[str, ...], Field(max_length=MAX_WORKSPACES)] = ()


MAX_FILES = 100


@dataclass(frozen=True)
class FilesRequest(QueryRequest):
    """POST …/files: a query's fields plus how many files."""

    max_files: Annotated[int, Field(ge=1, le=MAX_FILES)] = 10


@dataclass(frozen=True)
class RerankingConfig:
    """PUT …/reranking/config (cross-encoder-reranking.md "Configure Re-ranker"), plus the default strategy."""
    __pydantic_config__ = STRICT

    strategy: str = "cross-encoder"
    model_name: str | None = None
    batch_size: Annotated[int, Field(ge=1, le=512)] = 32
    max_input_length: Annotated[int, Field(ge=16, le=4096)] = 512
    score_threshold: Fraction = 0.0  # the cross-encoder's, on its 0-1 scale
    normalize_scores: Annotated[bool, AfterValidator(_normalized)] = True  # its scores are always 0-1


@dataclass(frozen=True)
class SearchRerankRequest:
    """POST …/search/rerank (the spec's "Re-rank Search Results")."""
    __pydantic_config__ = STRICT

    query_text: Question
    initial_top_k: TopK = 50  # the candidates the strategy sees (final_top_k at least)
    final_top_k: TopK = 5
    enable_reranking: bool = True
    strategy: str | None = None  # default: the workspace's reranking config
    min_relevance: Fraction = 0.2


@dataclass(frozen=True)
class SearchRerankHit:
    vector_id: str
    original_score: float | None
    rerank_score: float
    final_score: float
    metadata: dict  # path, start_line, end_line, symbol, kind, language, text, stale


@dataclass(frozen=True)
class SearchRerankResponse:
    results: list[SearchRerankHit]
    total_candidates: int
    total_returned: int
    search_time_ms: float
    reranking_time_ms: float
    total_time_ms: float
    model: str
    strategy: str
    reranked: bool
    fallback_reason: str | None


@dataclass(frozen=True)
class DocumentRerankRequest:
    """POST /v1/rerank (the spec's "Standalone Re-ranking")."""
    __pydantic_config__ = STRICT

    query: Question
    documents: Annotated[list[Annotated[str, Field(max_length=MAX_DOCUMENT_CHARS)]],
                         Field(min_length=1, max_length=MAX_DOCUMENTS)]
    top_k: TopK | None = None
    strategy: str = "cross-encoder"


@dataclass(frozen=True)
class DocumentScore:
    index: int  # position in the request's documents
    score: float  # the strategy's score (the cosine similarity when it fell back)
    text: str
    original_score: float  # cosine similarity of the query and the document
    original_rank: int


@dataclass(frozen=True)
class DocumentRerankResponse:
    results: list[DocumentScore]
    strategy: str
    model: str
    reranked: bool
    fallback_reason: str | None
    embedding_time_ms: float
    reranking_time_ms: float
    total_time_ms: float


@dataclass(frozen=True)
class IndexStatus:
    """An index run on the server: GET …/index, and each server-sent event of …/index/events."""

    workspace: str
    state: str  # "idle", "running", "done", "cancelled", "failed"
    progress: ProgressEvent | None = None
    report: IndexReport | None = None
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None


@dataclass(frozen=True)
class IndexRequest:
    __pydantic_config__ = STRICT

    full: bool = False


@dataclass(frozen=True)
class WatchRequest:
    __pydantic_config__ = STRICT

    auto_reindex: bool = True  # index changes as they happen, else only report stale files


@dataclass(frozen=True)
class LabelRequest:
    """PUT …/labels: label one result of a question relevant or not (Engine.record_label)."""
    __pydantic_config__ = STRICT

    question: Question
    path: str
    symbol: str = ""  # "" labels the whole file
    relevant: bool = True


@dataclass(frozen=True)
class Label:
    path: str
    symbol: str
    grade: int  # 1 relevant, 0 judged not relevant


@dataclass(frozen=True)
class Labels:
    """GET …/labels?question=…: the labels recorded for a question (Engine.labels_for)."""

    question: str
    labels: list[Label]
