"""Plain data types shared by every part of the engine (no Qt, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.core.settings import DEFAULT_STRATEGY

CHUNK_KINDS = (
    "function", "method", "class", "struct", "interface", "protocol",
    "enum", "module", "text",
)


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of code: a function, a class body, a module tail, a text window."""

    path: str  # workspace-relative, POSIX separators
    language: str  # "python", "typescript", ..., "markdown", "text"
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    content: str
    symbol: str = ""  # bare name ("save"); "" for module/text chunks
    qualified_name: str = ""  # "Store.save"
    kind: str = "text"  # one of CHUNK_KINDS
    bases: tuple[str, ...] = ()  # base types / conformances / implemented interfaces
    docstring: str = ""  # docstring or leading comment summary
    content_hash: str = ""
    file_hash: str = ""
    references: int = 0  # how many other chunks mention this symbol (set at index time)
    ordinal: int = 0  # n-th earlier chunk of the file with the same span and content (0 almost always)
    contiguous: bool = True  # content is exactly lines start_line..end_line (False: rows skipped or a line cut)

    @property
    def id(self) -> str:
        """Unique within its file and stable: same file version and span give the same id.
        Chunks with the same span and content (e.g. a one-line minified file) differ by ordinal."""
        return chunk_id(self.path, self.start_line, self.end_line, self.content_hash, self.ordinal)


def chunk_id(path: str, start_line: int, end_line: int, content_hash: str, ordinal: int = 0) -> str:
    base = f"{path}:{start_line}-{end_line}:{content_hash[:16]}"
    return f"{base}~{ordinal}" if ordinal else base


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str  # e.g. "binary", "too large (2.3 MiB > 1 MiB)", "not UTF-8", "unreadable: ..."

    @property
    def category(self) -> str:
        """The reason without its details: "too large (2.3 MiB > 1 MiB)" -> "too large"."""
        return self.reason.split(":")[0].split("(")[0].strip()


def count_by_reason(skipped) -> dict[str, int]:
    """How many files per skip category, most frequent first."""
    counts: dict[str, int] = {}
    for item in skipped:
        counts[item.category] = counts.get(item.category, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def nothing_to_index(skipped_count: int) -> str:
    return f"nothing to index ({skipped_count} files skipped)"


def vectors_reused_text(reused: int, total: int) -> str:
    """"vectors reused: 6,900 of 7,206" (from the data dir's shared vector cache); "" when none were needed."""
    return f"vectors reused: {reused:,} of {total:,}" if total else ""


@dataclass(frozen=True)
class Signal:
    """One reason behind a reranked score, e.g. ("cosine", 0.62, 0.62, "add") or
    ("implements NoteStore", 1.5, 1.5, "mul"). Applying every signal of a candidate in order
    (add: score += contribution; mul: score *= contribution; set: score = contribution)
    reproduces its reranked score."""

    name: str
    value: float  # the raw measurement (a cosine, a BM25 rank, a count)
    contribution: float  # what it does to the score, as `op` says
    op: str = "add"  # "add", "mul" or "set"
    note: str = ""


@dataclass(frozen=True)
class Candidate:
    """A chunk in a ranking. `score` is the current (possibly reranked) score."""

    chunk: Chunk
    score: float
    original_score: float | None  # cosine similarity from the vector search; None if only BM25 found it
    original_rank: int | None  # 1-based rank in the vector ranking; None if only BM25 found it
    keyword_score: float | None = None  # BM25 score, when the keyword index was consulted
    keyword_rank: int | None = None
    signals: tuple[Signal, ...] = ()  # why the strategy gave `score` (empty when not reranked)


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""  # why not, or a short note when available


@dataclass(frozen=True)
class ProgressEvent:
    # "preparing" (the embedding model: loaded, or exported and quantised on first use), "scanning",
    # "chunking", "embedding", "writing", "finalizing", "done", "cancelled"
    phase: str
    files_done: int
    files_total: int
    chunks_done: int
    chunks_total: int
    rate: float  # chunks per second
    eta_seconds: float | None
    message: str = ""
    # the whole job, of the index and not of this run's remainder: chunks with their vectors committed
    # (kept from before, or by this run) and the chunks the index holds once the run is done (0: unknown)
    index_done: int = 0
    index_total: int = 0
    # the whole run's share done (0-100), its two steps weighed by their measured cost: step 1 reads,
    # chunks and commits the files (names, keywords, code graph, history), step 2 makes the vectors;
    # None before anything is counted. `step`: 1 or 2 (0 before the scan)
    run_percent: int | None = None
    step: int = 0


@dataclass(frozen=True)
class IndexReport:
    files_indexed: int
    files_unchanged: int
    files_removed: int
    chunks_embedded: int
    chunks_total: int
    seconds: float
    cancelled: bool = False
    rebuilt_reason: str = ""  # why a full rebuild happened ("" if incremental)
    skipped: tuple[SkippedFile, ...] = ()  # every file not indexed, with its reason (failures included)
    failed: dict[str, int] = field(default_factory=dict)  # files that failed by reason ("could not be read": 1)
    message: str = ""  # e.g. "nothing to index (3 files skipped)"
    # of chunks_embedded, vectors taken from the data dir's shared vector cache (another checkout, an
    # earlier version) instead of the encoder
    vectors_reused: int = 0
    files_added: int = 0  # of files_indexed, files the index did not hold before (the others were updated)


@dataclass(frozen=True)
class StaleFile:
    path: str
    change: str  # "new", "modified", "deleted"


@dataclass(frozen=True)
class IndexHealth:
    workspace: str
    indexed: bool
    files: int = 0
    chunks: int = 0
    languages: dict[str, int] = field(default_factory=dict)  # language -> chunk count
    stale_files: tuple[StaleFile, ...] = ()
    needs_reindex: bool = False
    skipped: tuple[SkippedFile, ...] = ()
    model: str = ""
    dimension: int = 0  # of the stored vectors
    vectors: str = ""  # e.g. "256 of 384 dimensions (projection fitted on 1,000 chunks)"; "": the encoder's own
    created_at: str = ""  # ISO 8601 UTC
    updated_at: str = ""
    size_bytes: int = 0
    last_error: str = ""
    chunks_embedded: int | None = None  # chunks with a vector, fewer than `chunks` while a run embeds; None: all
    backend: str = ""  # the encoder that runs (torch, onnx, onnx-int8)
    device: str = ""  # cpu, cuda, mps
    encoder_note: str = ""  # why this backend and device: auto's choice, or why the configured one does not run
    skipped_by_reason: dict[str, int] = field(default_factory=dict)  # category -> files
    # The index's one state (STATES; every face shows it with state_label and `message`):
    # "missing" (no index), "folder-missing" (the workspace folder is gone: nothing runs, nothing is deleted),
    # "empty" (nothing to index), "indexing", "resuming" (a run continuing an interrupted one), "cancelling",
    # "interrupted" (a run stopped before the end: the next run resumes it), "stale", "ready",
    # "damaged" (a part is proven corrupt, or parts disagree: `index` repairs it), "unavailable" (a part
    # cannot be read now: a full disk, no file handle left, a lock; nothing is repaired or deleted, it is whole
    # once that passes; "busy: ..." for a lock), "failed" (the last run stopped:
    # `last_error`), "error" (the workspace cannot be used: `last_error`)
    state: str = "missing"
    message: str = ""  # one line a UI can show, e.g. "nothing to index (12 files skipped)"
    history: str = ""  # the git history, one line: "11,111 commits up to 2023-03-11", "none (not a git repository)"
    history_state: str = ""  # "full", "shallow", "empty", "none" (not a repository), "no-git", "error"; "": never read
    history_commits: int = 0  # non-merge commits indexed
    history_until: str = ""  # the newest indexed commit's date, YYYY-MM-DD (UTC)
    run_chunks_done: int = 0  # while a run is under way or was interrupted: chunks committed so far
    run_chunks_total: int = 0  # ... and the chunks the index holds once it is done (0: unknown)
    run_cancelled: str = ""  # the last run was cancelled: how far it got ("full rebuild cancelled after 12 of 40 files …")
    # The last run that gave chunks vectors: how many it gave, and how many of them came from the data
    # dir's shared vector cache instead of the encoder ("vectors reused: 6,900 of 7,206")
    last_run_vectors: int = 0
    last_run_reused: int = 0
    # The data dir's shared vector cache: "off (share_vectors)", "on", or what the last run that embedded found
    # and repaired in it ("on; the last run dropped 32 vectors that failed their check and embedded them again")
    vector_cache: str = ""
    # What was found damaged and repaired in the workspace's other stores, one line each: "labels: 2 damaged
    # lines set aside in …/x.jsonl.rejected", "history: …"
    repaired: tuple[str, ...] = ()


STATES = ("missing", "folder-missing", "empty", "indexing", "resuming", "cancelling", "interrupted", "stale",
          "ready", "damaged", "unavailable", "failed", "error")
RUNNING_STATES = ("indexing", "resuming", "cancelling")


def state_label(health: IndexHealth) -> str:
    """The state in a few words, the same in the window's badge and `health`'s first line."""
    if health.state == "stale":
        return f"{len(health.stale_files)} stale" if health.stale_files else "stale"
    return {"missing": "not indexed", "folder-missing": "folder missing", "ready": "up to date"}.get(
        health.state, health.state)


def run_progress_text(done: int, total: int) -> str:
    """"1,200 of 7,206 chunks done" (or "1,200 chunks done" when the total is unknown)."""
    return f"{done:,} of {total:,} chunks done" if total else f"{done:,} chunks done"


@dataclass(frozen=True)
class QueryOptions:
    workspace: str
    top_k: int = 10
    strategy: str = DEFAULT_STRATEGY  # the one default of every face (QueryRequest's too)
    min_relevance: float = 0.2
    languages: tuple[str, ...] = ()
    path_glob: str = ""
    context_lines: int = 5
    expand_context: bool = True
    use_cache: bool = True
    before: int | None = None  # history cut-off (unix time): strategies ignore commits at or after it
    pool: int | None = None  # vector candidates the strategy sees (the spec's initial_top_k); None: its own


@dataclass(frozen=True)
class ResultChunk:
    chunk: Chunk
    rank: int  # 1-based, in the reranked list
    score: float  # reranked score (equals original_score when not reranked)
    original_rank: int | None  # None: not in the original vector ranking (e.g. found by BM25 only)
    original_score: float | None
    context: str = ""  # chunk plus surrounding lines
    context_start_line: int = 0  # first line number of `context`
    signals: tuple[Signal, ...] = ()  # why it has `score` (see Signal)
    stale: str = ""  # "" fresh; "modified" or "deleted" when the file changed since it was indexed


@dataclass(frozen=True)
class QueryResult:
    question: str
    strategy: str
    results: list[ResultChunk]  # reranked ranking, cut to top_k
    original: list[ResultChunk]  # the vector ranking as is, cut to top_k (for side-by-side)
    relevant_files: list[str]
    total_chunks_searched: int
    chunks_above_threshold: int
    reranked: bool
    fallback_reason: str | None
    cache_hit: bool
    timings_ms: dict[str, float]  # "embed", "search", "rerank", "expand", "total"
    pool_size: int = 0  # candidates the strategy saw
    # only when `results` is empty: what removed candidates ("threshold", "languages", "path" ->
    # how many of the nearest chunks each removed) and the nearest chunk below the threshold
    removed: dict[str, int] = field(default_factory=dict)
    below_threshold: ResultChunk | None = None
    chunks_with_vectors: int | None = None  # of total_chunks_searched, those with a vector (None: all)
    reading: str = "question"  # how the question was read: "name", "dotted", "path" (navigation) or "question"
    reading_note: str = ""  # e.g. "read as name `Store`: 2 definitions first", "no definition named `x` …"
    warning: str = ""  # what makes this answer untrustworthy, e.g. a vector store that lost its vectors
    question_note: str = ""  # a long question: its length against the limit, and how it was reduced
    strategy_note: str = ""  # `auto`: what it read and which strategy answered, e.g. "a traceback of 12 frames: …"
    original_ranking: str = "vector"  # what `original` ranks by: "vector", or "keyword" (a name `auto` answered by keyword)


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    label: str
    description: str
    available: bool
    reason: str  # why it is unavailable (or a note)
    scale: str = ""  # "similarity", "relative" or "probability" (services.retrieval.strategies.base)
    legend: str = ""  # what its scores mean, shown next to the reranked ranking


@dataclass(frozen=True)
class FileChunk:
    """One of a ranked file's best chunks (by the strategy's chunk ranking)."""

    id: str
    start_line: int
    end_line: int
    symbol: str
    rank: int  # 1-based, in the strategy's chunk ranking
    score: float


@dataclass(frozen=True)
class RankedFile:
    """A file in a file-level answer. `score` is the sum of its signals' contributions (op "add")."""

    path: str
    rank: int  # 1-based
    score: float
    original_rank: int | None  # its rank with the `none` strategy's chunk evidence (None: not in that list)
    chunks: tuple[FileChunk, ...] = ()  # its best chunks, best first
    signals: tuple[Signal, ...] = ()  # why: name, value (raw), contribution, note ("named in the report")


@dataclass(frozen=True)
class FileAnswer:
    """A question answered as a ranked list of files (issue #19): `files` best first, `original` the
    paths in the order the `none` strategy's chunk evidence gives (for showing movement)."""

    question: str
    strategy: str
    files: list[RankedFile]
    original: list[str]
    history: str = ""  # "12 commits" used, or why none ("not a git repository")
    before: int | None = None  # commits at or after this unix time were ignored
    timings_ms: dict[str, float] = field(default_factory=dict)
    question_note: str = ""  # as QueryResult's
    strategy_note: str = ""  # as QueryResult's
    warning: str = ""  # as QueryResult's: e.g. what the chunk ranking stood on while vectors were missing


@dataclass(frozen=True)
class WorkspaceHit:
    """One result of a question asked over several workspaces: the workspace's own result, labelled."""

    workspace: str  # the workspace folder
    name: str  # its folder name, for display ("backend", "frontend")
    rank: int  # 1-based, in the merged list
    evidence: float  # the merged order's score: the workspace's n-th best cosine for its n-th result
    result: ResultChunk  # as its workspace ranked it (rank, scores, signals, context)


@dataclass(frozen=True)
class MultiQueryResult:
    """A question over several workspaces: each asked alone, their rankings merged by evidence (the
    question's cosine, comparable across workspaces: services.retrieval.multi); `searched` says how many results each workspace gave (before the cut)."""

    question: str
    strategy: str
    workspaces: list[str]
    results: list[WorkspaceHit]  # merged, cut to top_k
    searched: dict[str, int]  # workspace -> results it returned (above its threshold)
    fallback_reasons: dict[str, str] = field(default_factory=dict)  # workspace -> why not reranked, when so
    warnings: dict[str, str] = field(default_factory=dict)  # workspace -> its answer's warning, when it has one
    timings_ms: dict[str, float] = field(default_factory=dict)  # "total", and each workspace's total
    question_note: str = ""  # as QueryResult's
    unanswered: dict[str, str] = field(default_factory=dict)  # workspace -> why it could not answer (not indexed)


# --- go to file / go to symbol (services/retrieval/goto.py) ---
@dataclass(frozen=True)
class GotoHit:
    """A symbol's definition or a file matched by name. `label` is the text matched (the symbol's name,
    its qualified name for a dotted question, or the file's path) and `positions` the indexes of its
    matched characters, for highlighting."""

    path: str
    start_line: int  # where to open (a file: 1, or the line asked for with `path:120`)
    end_line: int
    symbol: str
    qualified_name: str
    kind: str  # a chunk kind, or "file"
    language: str
    score: float  # higher is better; only the order within one answer means anything
    label: str
    positions: tuple[int, ...] = ()
    stale: str = ""  # "" fresh; "modified" (its lines found again where they are now) or "deleted" since indexed


@dataclass(frozen=True)
class GotoAnswer:
    """Go to symbol or go to file: the best matches first, and `message` when there is none
    ("No symbol named 'Frobnicate'.")."""

    query: str
    target: str  # "symbols" or "files"
    hits: list[GotoHit]
    matched: int  # how many names or paths matched, before the cut to `limit`
    line: int | None = None  # the line asked for (`latex.py:120`), if any
    message: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)


# --- the code graph: who uses this, what it uses (services/retrieval/graph.py) ---
@dataclass(frozen=True)
class GraphLink:
    """One row of a "Used by" or "Uses" list: where to open (path, line) and what is there.
    references: a use of the name, in the chunk `qualified_name` (the user); uses: a definition the asked
    chunk uses, `lines` where it does."""

    path: str
    line: int
    name: str  # the name used
    how: str  # call, attribute, import, base, type or name
    qualified_name: str  # the enclosing chunk (references) or the definition (uses)
    kind: str  # that chunk's kind: function, method, class, module...
    chunk_id: str
    lines: tuple[int, ...] = ()  # uses: the lines of the asked chunk that use it
    stale: str = ""  # uses: "" fresh; "modified" (found again where it is now) or "deleted" since indexed


@dataclass(frozen=True)
class GraphFile:
    path: str
    links: list[GraphLink]


@dataclass(frozen=True)
class GraphAnswer:
    """Find references ("references": who uses the target) or what a chunk uses ("uses"), grouped by
    file; `targets` are the definitions the query resolved to, and `message` says why a list is empty
    ("No definition named 'Frobnicate' in the index.")."""

    query: str
    direction: str  # "references" or "uses"
    targets: list[GotoHit]
    files: list[GraphFile]
    total: int  # links in all files
    message: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)


# WatchEvent kinds
WATCHING, STALE, REINDEX_STARTED, REINDEX_FINISHED, WATCH_ERROR = (
    "watching", "stale", "reindex_started", "reindex_finished", "error")
PROGRESS, FOLDER_MISSING = "progress", "folder_missing"  # an automatic run's progress; the folder went away
# automatic indexing paused (an automatic run was cancelled: changes are reported as stale until a user's
# run finishes), and resumed by that run
PAUSED, RESUMED = "paused", "resumed"
# the references of a watched workspace were recounted after its automatic runs ("much referenced" is true
# again for the files they changed): a ranking shown since those runs is out of date
REFERENCES = "references"


@dataclass(frozen=True)
class WatchEvent:
    """What a watched workspace reports: stale files (auto-reindex off) or an automatic run (the remote engine
    gets them from the server's `GET …/watch/events` stream)."""

    kind: str  # one of the kinds above
    workspace: str
    stale_files: tuple[StaleFile, ...] = ()  # with STALE
    report: IndexReport | None = None  # with REINDEX_FINISHED
    message: str = ""  # with WATCH_ERROR and FOLDER_MISSING
    progress: ProgressEvent | None = None  # with PROGRESS
