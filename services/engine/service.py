"""LocalEngine: the engine's one public entry point (async, Qt-free).

The UI and the CLI use only this class and the types in services.core.models. Long work runs in
worker threads (one for indexing, two for queries); progress callbacks are delivered on the
caller's event loop, so a Qt slot connected through qasync runs on the GUI thread.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from cachetools import TTLCache

from services.storage import labels
from services.retrieval import goto, graph, on_disk, search_steps
from services.retrieval.file_answer import POOL
from services.retrieval.strategies import auto
from services.retrieval.multi import check_workspaces, merge, missing_cosines
from services.retrieval.plan import FOR_REPORTS, QueryPlan, plan
from services.retrieval.search import Searcher
from services.encoders.embedder import embedder_for, query_embedder
from services.core.errors import IndexMissingError, IndexUnavailable, KnowledgeError, QueryError, WorkspaceError
from services.core.messages import MAX_QUESTION_CHARS, MAX_TOP_K, DocumentRerankResponse, question_too_long
from services.engine.protocol import ProgressCallback, WatchCallback
from services.engine.scheduler import IndexScheduler
from services.engine.file_answers import FileAnswers
from services.engine.reranking import Reranking
from services.engine.watching import Hooks, ReferenceRecounts, Watching
from services.engine.workspaces import Workspaces
from services.indexing.health import committing_note, index_health
from services.indexing.scanning import check_languages
from services.core.paths import check_glob
from services.indexing.indexer import Indexer
from services.core.models import (
    FileAnswer, GotoAnswer, GraphAnswer, IndexHealth, IndexReport, MultiQueryResult, QueryOptions, QueryResult,
    StrategyInfo,
)
from services.storage.ownership import Owner, OwnerLock, read_owner
from services.retrieval.strategies import strategy_info, strategy_names
from services.core.settings import Settings, SettingsError, default_data_dir  # noqa: F401 (re-exported)
from services.indexing.watcher import RESUMED, WatchEvent
from services.storage.error_note import ErrorNote
from services.storage.workspace_index import WorkspaceIndex, expanded, workspace_root
from services.storage.vector_cache import CACHE_FILE, VectorCache

log = logging.getLogger(__name__)


class LocalEngine:
    """The engine. It owns its data dir (services.storage.ownership) from construction to close(): while
    another process owns it, every workspace call raises IndexBusyError naming that owner."""

    def __init__(self, settings: Settings | None = None, *, data_dir: str | Path | None = None,
                 chroma_url: str | None = None, kind: str = "cli") -> None:
        self.settings = settings or Settings()
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        self.owner_lock = OwnerLock(self.data_dir, kind)
        try:
            self.owner_lock.acquire()  # if busy, each call tries again and names the owner
        except KnowledgeError:
            pass  # an unusable data dir: each call reports it
        self.chroma_url = chroma_url
        self.embedder = query_embedder(self.settings)
        self.index_embedder = embedder_for(self.settings, "index", threads=self.settings.encoder_threads)
        self.document_embedder = embedder_for(self.settings, "documents", threads=1)  # rerank_documents: never blocks a query
        self._lock = threading.RLock()
        self.workspaces = Workspaces(self.data_dir, chroma_url, self.owner_lock, self._lock)
        # vectors shared by every workspace of the data dir (a clone or worktree embeds only what differs)
        self.vector_cache = VectorCache(self.data_dir / CACHE_FILE) if self.settings.share_vectors else None
        self.reranking = Reranking(self.settings, self._lock)
        self.file_answers = FileAnswers(self.settings, self._lock)
        self._cache: TTLCache = TTLCache(maxsize=self.settings.cache_size, ttl=self.settings.cache_ttl_seconds)
        self._index_pool = ThreadPoolExecutor(1, thread_name_prefix="ke-index")
        self._query_pool = ThreadPoolExecutor(2, thread_name_prefix="ke-query")
        self._rerank_pool = ThreadPoolExecutor(1, thread_name_prefix="ke-rerank")  # rerank requests queue here
        self.scheduler = IndexScheduler()  # when automatic runs start, what they cover, pauses, recounts
        self.recounts = ReferenceRecounts(self.scheduler, self.workspaces.indexes, self._invalidate,
                                          lambda root, event: self.watches.emit(root, event))
        hooks = Hooks(self._indexer, self._invalidate, self.workspaces.record_error, self.workspaces.clear_error,
                      self.recounts.wake.set)
        self.watches = Watching(self.scheduler, self.settings, hooks, self._index_pool, self._query_pool,
                                exclude=(self.data_dir,))  # watched folders, their changes, automatic runs
        self._finders = goto.Finders()  # each catalogue's names, kept until its next write

    # --- plumbing ---
    async def _run(self, pool: ThreadPoolExecutor, func, *args):
        return await asyncio.get_running_loop().run_in_executor(pool, func, *args)

    def workspace_index(self, workspace: str | Path) -> WorkspaceIndex:
        """The workspace's index (opened once): its catalogue, stores and state. Not part of the Engine protocol:
        what the in-process engine's own tools (benchmarks, tests, eval) read."""
        return self.workspaces.index(workspace)

    def _invalidate(self, root: Path) -> None:
        with self._lock:
            for key in [k for k in self._cache if k[1] == str(root)]:
                self._cache.pop(key, None)

    # --- indexing ---
    async def index(self, workspace: str | Path, *, full: bool = False,
                    progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> IndexReport:
        """Index (incrementally, or fully with full=True). Set `cancel` to stop; the index stays consistent."""
        index = self.workspace_index(workspace)
        loop = asyncio.get_running_loop()
        deliver: ProgressCallback | None = None
        if progress is not None:
            deliver = lambda event: loop.call_soon_threadsafe(progress, event)  # noqa: E731
        if self.scheduler.begin_user(index.root):
            self.watches.stop_run(index.root)  # the automatic run under way stops after its batch: this run does its work
        indexer = self._indexer(index, deliver, cancel)
        note = ErrorNote(index.folder)
        note.reserve()  # room for the error while there is room: a full disk cannot take a new one
        report = None
        paused = self.scheduler.paused(index.root)
        try:
            report = await self._run(self._index_pool, indexer.run, full)
        except IndexUnavailable:  # nothing was changed, and health sees it for itself while it lasts
            index.integrity = None
            raise
        except Exception as error:
            self.workspaces.record_error(index, error, note)
            raise
        finally:
            look_again = self.scheduler.end_user(index.root, complete=report is not None and not report.cancelled)
            self._invalidate(index.root)
        self.workspaces.clear_error(index.root)
        note.clear()
        if paused and not self.scheduler.paused(index.root):
            self.watches.emit(index.root, WatchEvent(RESUMED, str(index.root)))
        if look_again:  # changes an automatic run left to this run, which may have scanned before them
            self.watches.changed(index.root, set())
        return report

    def _indexer(self, index: WorkspaceIndex, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None) -> Indexer:
        return Indexer(index, self.index_embedder, self.settings, progress, cancel, self.vector_cache)

    async def health(self, workspace: str | Path) -> IndexHealth:
        """A missing or unusable workspace folder is reported in `last_error`, not raised."""
        try:
            index = self.workspace_index(workspace)
        except WorkspaceError as error:
            index = self.workspaces.known(workspace)
            if index is None:  # nothing indexed there: an error, with the reason
                return IndexHealth(workspace=str(workspace), indexed=False, last_error=str(error),
                                   state="error", message=str(error))
        return await self._run(self._query_pool, self._health, index)

    def _health(self, index: WorkspaceIndex) -> IndexHealth:
        error = self.workspaces.errors.get(index.root, "") or index.vanished() or ErrorNote(index.folder).read()
        health = index_health(index, self.settings, error)
        faults = [e.fault for e in (self.index_embedder, self.embedder) if e.fault]  # the encoders' state now
        return replace(health, encoder_note="; ".join(dict.fromkeys(filter(None, (health.encoder_note, *faults)))),
                       repaired=self._repairs(index))

    def _repairs(self, index: WorkspaceIndex) -> tuple[str, ...]:
        """What was repaired in the workspace's stores that are not the index proper, one line each (its
        labels file is checked, and repaired, first)."""
        labels_file = labels.default_labels_file(self.data_dir, index.root)
        try:
            labels.read_records(labels_file)
        except (IndexUnavailable, OSError):  # cannot be read now (no file handle left): nothing to say of it
            pass
        try:
            history = index.history_state().repair_note()
        except (sqlite3.Error, OSError):  # cannot be read now: health's history line says so
            history = ""
        return tuple(filter(None, (labels.repair_note(labels_file), history)))

    # --- querying ---
    async def query(self, question: str, options: QueryOptions) -> QueryResult:
        """Raises QueryError (bad input), WorkspaceError, IndexMissingError, ModelLoadError. A workspace
        whose folder is gone (moved, unmounted) is answered from its kept index."""
        self.validate(question, options)
        return await self._query(question, options, names_by_keyword=True)

    async def _query(self, question: str, options: QueryOptions, names_by_keyword: bool,
                     asked: QueryPlan | None = None) -> QueryResult:
        """`query`; `names_by_keyword`: `auto` answers a name without vectors (not for a file answer, whose
        file ranking reads the vector ranking); `asked`: the question's plan when the caller made it. The
        caller validated the question."""
        index = self.workspaces.readable(options.workspace)
        awaiting = index.catalog().awaiting.awaiting_count() if index.exists() else 0  # (never creates a manifest)
        key = (question.strip(), str(index.root), options, names_by_keyword, awaiting)  # an answer of its moment
        if options.use_cache:
            with self._lock:
                cached = self._cache.get(key)
            if cached is not None:
                return await self._run(self._query_pool, self._searcher(index).mark_stale,
                                       search_steps.mark_cached(cached))
        strategy = self.reranking.strategy(options.strategy, index.root)
        result = await self._run(self._query_pool, self._searcher(index).query, question.strip(), options, strategy,
                                 names_by_keyword, asked)
        if awaiting:  # the files it answered with (by keywords, when theirs wait) get their vectors next
            index.ask_first(r.chunk.path for r in result.results)
        note = self.reranking.notes.get(index.root)
        if note:
            result = replace(result, warning="; ".join(filter(None, (result.warning, note))))
        if options.use_cache:
            with self._lock:
                self._cache[key] = result
        return result

    async def query_many(self, question: str, workspaces: list[str], options: QueryOptions) -> MultiQueryResult:
        """Ask each workspace (top_k results each, so one workspace can fill the list when the others have
        nothing), then merge by evidence (services.retrieval.multi). A folder named twice is asked once."""
        self.validate(question, options)
        roots = list(dict.fromkeys(workspace_root(w) for w in check_workspaces(workspaces)))
        started = time.perf_counter()
        asked = await asyncio.gather(*(self._query(question, replace(options, workspace=str(root)), True)
                                       for root in roots), return_exceptions=True)
        missing = {str(root): str(a) for root, a in zip(roots, asked) if isinstance(a, IndexMissingError)}
        failed = [a for a in asked if isinstance(a, BaseException) and not isinstance(a, IndexMissingError)]
        if failed or len(missing) == len(roots):  # a workspace not yet indexed is said; the others answer
            raise (failed or [a for a in asked if isinstance(a, BaseException)])[0]
        answered = [(root, a) for root, a in zip(roots, asked) if isinstance(a, QueryResult)]
        roots, answers = [root for root, _ in answered], [a for _, a in answered]
        cosines = await self._run(self._query_pool, self._missing_cosines, question.strip(), roots, answers)
        merged = merge(question.strip(), options.strategy, [(str(r), a) for r, a in zip(roots, answers)],
                       options.top_k, (time.perf_counter() - started) * 1000, cosines)
        return replace(merged, unanswered=missing)

    def _missing_cosines(self, question: str, roots: list[Path], answers: list[QueryResult]
                         ) -> dict[str, dict[str, float]]:
        """workspace -> chunk id -> the question's cosine, for the keyword-only hits of each answer."""
        wanted = {str(root): ids for root, answer in zip(roots, answers) if (ids := missing_cosines(answer))}
        return {root: self._searcher(self.workspace_index(root)).cosines(question, ids) for root, ids in wanted.items()}

    def _searcher(self, index: WorkspaceIndex) -> Searcher:
        """The query flow (services.retrieval.search) over this index, with the settings of now."""
        return Searcher(index, self.settings, functools.partial(self._encode_question, index))

    def _encode_question(self, index: WorkspaceIndex, texts: list[str]):
        """Questions encoded by the backend the index was built with (with `auto`, which may differ per index)."""
        built_with = index.catalog().backend() if index.exists() else ""
        return self.embedder.for_index(built_with).encode(texts)

    def validate(self, question: str, options: QueryOptions) -> None:
        """A question's rules, checked once per question whichever face asks (REST, MCP and the CLI parse
        its fields' types and ranges first, app.limits; the window asks the engine directly): QueryError (or
        PathEscape) with one line saying what is wrong."""
        if not isinstance(question, str) or not question.strip():
            raise QueryError("Type a question first: the question is empty.")
        if len(question) > MAX_QUESTION_CHARS:
            raise QueryError(question_too_long(len(question)))
        if options.top_k < 1:
            raise QueryError(f"The result count must be at least 1 (got {options.top_k}).")
        if options.pool is not None and not 1 <= options.pool <= MAX_TOP_K:
            raise QueryError(f"The candidate pool must be from 1 to {MAX_TOP_K} (got {options.pool}).")
        self.reranking.strategy(options.strategy)
        check_languages(options.languages)
        check_glob(options.path_glob)

    async def strategies(self) -> list[StrategyInfo]:
        """Every reranking strategy, with whether it can run now (cheap checks, no model loading)."""
        return [strategy_info(self.reranking.strategy(name)) for name in strategy_names()]

    async def find_files(self, question: str, options: QueryOptions, max_files: int = 10,
                         before: int | None = None) -> FileAnswer:
        """The question answered as ranked files: the strategy's chunk ranking folded per file, with
        whole-file keywords, mentions and the history's votes (commits at or after `before` ignored)."""
        self.validate(question, options)
        if max_files < 1:
            raise QueryError(f"The file count must be at least 1 (got {max_files}).")
        started = time.perf_counter()
        before = options.before if before is None else before
        pooled = replace(options, top_k=max(options.top_k, POOL), expand_context=False, before=before)
        asked = plan(question)  # one reading, for the chunks' ranking and the file answer's blend
        result = await self._query(question, pooled, names_by_keyword=False, asked=asked)
        words = None
        if result.strategy == "auto" and asked.route == FOR_REPORTS:  # auto's report blend
            words = await self._query(question, replace(pooled, strategy=auto.FILES.second), True)
        index = self.workspace_index(options.workspace)
        answer = await self._run(self._query_pool, self.file_answers.answer, index, result, options, max_files, before, words)
        total = (time.perf_counter() - started) * 1000
        return replace(answer, timings_ms={"chunks": result.timings_ms.get("total", 0.0),
                                           "files": round(total - result.timings_ms.get("total", 0.0), 1),
                                           "total": round(total, 1)})

    async def symbol_names(self, workspace: str | Path) -> list[str]:
        index = self.workspaces.readable(workspace)  # a folder that is gone: its index still lists them
        return await self._run(self._query_pool, lambda: index.catalog().symbols() if index.exists() else [])

    # --- go to symbol / file (services/retrieval/goto.py) ---
    async def goto_symbols(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        index = self.workspaces.readable(workspace)
        return await self._run(self.workspaces.goto_pool(index), self._goto, goto.goto_symbols, index, query, limit)

    async def goto_files(self, query: str, workspace: str | Path, limit: int = 20) -> GotoAnswer:
        index = self.workspaces.readable(workspace)
        return await self._run(self.workspaces.goto_pool(index), self._goto, goto.goto_files, index, query, limit)

    def _goto(self, find, index: WorkspaceIndex, query: str, limit: int) -> GotoAnswer:
        goto.check_query(query, limit)  # bad input first, then whether there is an index
        index.require()
        answer = find(self._finders, index.catalog(), query, limit)
        index.ask_first(hit.path for hit in answer.hits[:1])  # the file a go-to would open: its vectors next
        return replace(answer, hits=on_disk.located(index.catalog(), index.root, answer.hits,
                                                    self.settings.max_file_bytes),
                       message=_joined(answer.message, committing_note(index)))

    # --- the code graph (services/retrieval/graph.py) ---
    async def references(self, name_or_chunk: str, workspace: str | Path) -> GraphAnswer:
        index = self.workspaces.readable(workspace)
        find = functools.partial(graph.references, root=index.root, limit=self.settings.max_file_bytes)
        return await self._run(self.workspaces.goto_pool(index), self._graph, find, index, name_or_chunk)

    async def uses(self, chunk: str, workspace: str | Path) -> GraphAnswer:
        index = self.workspaces.readable(workspace)
        return await self._run(self.workspaces.goto_pool(index), self._graph, graph.uses, index, chunk)

    def _graph(self, find, index: WorkspaceIndex, query: str) -> GraphAnswer:
        goto.check_query(query, 1)  # bad input first, then whether there is an index
        index.require()
        answer = on_disk.located_answer(index.catalog(), index.root, find(index.catalog(), query),
                                        self.settings.max_file_bytes)
        return replace(answer, message=_joined(answer.message, committing_note(index)))

    # --- standalone reranking and reranker configuration (the service API) ---
    async def rerank_documents(self, query: str, documents: list[str], strategy: str = "cross-encoder",
                               top_k: int | None = None) -> DocumentRerankResponse:
        """Score arbitrary documents for a query with a strategy (returns a DocumentRerankResponse)."""
        from services.retrieval.document_rerank import rerank_documents

        if not query.strip() or not documents:
            raise QueryError("Give a query and at least one document.")
        chosen = self.reranking.strategy(strategy)
        cancel = threading.Event()
        try:
            return await self._run(self._rerank_pool, rerank_documents, chosen, self.document_embedder,
                                   query.strip(), list(documents), top_k, self.model_name(strategy), cancel)
        finally:
            cancel.set()  # a caller that stopped waiting stops the work at its next slice of documents

    def model_name(self, strategy: str, workspace: str | Path | None = None) -> str:
        """The model behind a strategy's scores (the embedding model for the non-neural ones), for `workspace`
        when given (its reranker settings)."""
        return self.reranking.model_name(strategy, workspace_root(workspace) if workspace is not None else None)

    def configure_reranking(self, workspace: str | Path, model_name: str | None = None, batch_size: int | None = None,
                            max_input_length: int | None = None, score_threshold: float | None = None) -> None:
        """Change the cross-encoder's settings for one workspace (cross-encoder-reranking.md "Configure
        Re-ranker"); the other workspaces, the strategy list and the server's defaults are untouched.
        QueryError, changing nothing, when the model cannot be used: a model given is checked first."""
        root = workspace_root(workspace)
        self.reranking.configure(root, model_name, batch_size, max_input_length, score_threshold)
        self._invalidate(root)

    async def warm_up(self) -> None:
        """Load the embedding model (and any model-backed strategy) ahead of the first query."""
        await self._run(self._query_pool, self.embedder.load)
        for name in strategy_names():
            strategy = self.reranking.strategy(name)
            if strategy.loads_model and strategy.availability().available:
                await self._run(self._query_pool, strategy.warm_up)

    # --- watching (services/engine/watching.py) ---
    async def watch(self, workspace: str | Path, *, auto_reindex: bool = True,
                    on_event: WatchCallback | None = None) -> None:
        """Watch the workspace folder until unwatch()/close(). Changes are indexed in the background
        (auto_reindex, unless pause_watch() paused it) or reported as stale files; either way it first
        catches up with what changed while nobody watched. Events (services.indexing.watcher.WatchEvent)
        go to `on_event` on this loop."""
        index = self.workspaces.readable(workspace)  # a folder that is gone but indexed: watched for its return
        await self.unwatch(index.root)
        loop = asyncio.get_running_loop()
        def emit(event: WatchEvent) -> None:
            if on_event is not None:
                loop.call_soon_threadsafe(on_event, event)

        await self._run(self._query_pool, self.watches.add, index, auto_reindex, emit)

    async def pause_watch(self, workspace: str | Path) -> None:
        """Stop the automatic run under way and start no automatic run until a user's index() run
        finishes (F5, "Resume"): changes meanwhile are reported as stale (STALE events), never lost."""
        await self._run(self._query_pool, self.watches.pause, expanded(workspace).resolve())

    async def unwatch(self, workspace: str | Path) -> None:
        await self._run(self._query_pool, self.watches.remove, expanded(workspace).resolve())

    def watching(self) -> list[str]:
        return [str(root) for root in self.watches.roots()]

    # --- ownership ---
    def owner(self) -> Owner | None:
        """Who owns this data dir now (this process, another one, or nobody)."""
        return self.owner_lock.owner if self.owner_lock.held else read_owner(self.data_dir)

    async def set_owner_url(self, url: str | None) -> None:
        """Publish the loopback URL of a server that fronts this engine, in the owner file."""
        self.owner_lock.require()
        self.owner_lock.set_url(url)

    # --- relevance labels (read by evaluation and by the `tuned` strategy, in this data dir) ---
    async def record_label(self, workspace: str | Path, question: str, path: str, symbol: str,
                           relevant: bool) -> None:
        """Label (path, symbol) relevant or not for `question`; labelling again overwrites the grade."""
        if not question.strip():
            raise QueryError("Type a question first: a result of an empty question cannot be labelled.")
        root = self._label_root(workspace)
        await self._run(self._query_pool, labels.record_label, labels.default_labels_file(self.data_dir, root),
                        question, path,
                        symbol, relevant)
        self._invalidate(root)  # `tuned` learns from labels: cached answers may change

    async def labels_for(self, workspace: str | Path, question: str) -> dict[tuple[str, str], int]:
        """{(path, symbol): grade} recorded for `question` (empty when none)."""
        root = self._label_root(workspace)
        return await self._run(self._query_pool, labels.labels_for, labels.default_labels_file(self.data_dir, root),
                               question)

    def _label_root(self, workspace: str | Path) -> Path:
        self.owner_lock.require()  # labels live in the data dir: its owner writes them
        return workspace_root(workspace)

    def close(self) -> None:
        """Stop watching, shut down worker threads, give up the data dir. Safe to call twice."""
        self.watches.close()
        self.recounts.close()
        self._index_pool.shutdown(wait=True, cancel_futures=True)
        self._query_pool.shutdown(wait=True, cancel_futures=True)
        self._rerank_pool.shutdown(wait=True, cancel_futures=True)
        self.workspaces.close()
        if self.vector_cache is not None:
            self.vector_cache.close()
        self.owner_lock.release()


def _joined(*lines: str) -> str:
    return " ".join(line for line in lines if line)
