"""The query flow: from a question to a QueryResult over one workspace index (synchronous; the
engine's facade, LocalEngine, validates, caches and runs it in a worker thread).

embed -> search (vectors, plus BM25 for strategies that ask) -> rerank -> threshold -> expand ->
assemble; an empty answer says what removed the candidates; every answer marks files changed on disk
since they were indexed. `auto` on a name the index defines skips the vectors (name_answer.py): the
encoder and the vector store are opened only when a question needs them. The steps themselves are in
search_steps.py; strategies see the index only through IndexContext (a StrategyContext).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
from cachetools import LRUCache

from services.core import files
from services.core.errors import InvalidVectors
from services.core.models import Candidate, Chunk, QueryOptions, QueryResult
from services.core.settings import Settings
from services.storage.labels import default_labels_file
from services.retrieval import name_answer, names
from services.retrieval import search_steps as steps
from services.retrieval.strategies.query_adapter import ADAPTER_FILE
from services.retrieval.plan import QueryPlan, plan
from services.retrieval.strategies.auto import AutoStrategy
from services.retrieval.strategies.base import SIMILARITY, RerankRequest, RerankStrategy
from services.storage.workspace_index import WorkspaceIndex

Encode = Callable[[list[str]], np.ndarray]  # texts -> encoder vectors (before the index's projection)

KEYWORD_POOL = 200  # BM25 candidates at most: deep keyword hits rarely reach a fused top (each costs a chunk read)


class IndexContext:
    """The StrategyContext of one workspace index: read-only access for strategies."""

    def __init__(self, index: WorkspaceIndex, encode: Encode, before: int | None = None) -> None:
        self._index = index
        self._encode = encode
        self.before = before
        self.key = str(index.folder)
        self.labels_file = default_labels_file(Path(index.folder).parent.parent, index.root)
        self.adapter_file = Path(index.folder) / ADAPTER_FILE

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._index.project(self._encode(texts))

    def history(self):
        return self._index.history()

    def version(self) -> tuple:
        catalog = self._index.catalog()
        return catalog.counts(), catalog.get_meta("updated_at")

    def chunks(self, ids: list[str] | None = None) -> list[Chunk]:
        return self._index.catalog().chunks(ids)

    def embeddings(self, ids: list[str]) -> dict[str, list[float]]:
        return self._index.store().embeddings(ids)

    def vector_search(self, vector: list[float], limit: int) -> list[tuple[str, float]]:
        return self._index.store().search(vector, limit)

    def keyword_search(self, weights: dict[str, float], limit: int) -> list[tuple[str, float]]:
        return self._index.keywords.search_weighted(weights, limit)


class Searcher:
    """Questions over one workspace index, with the engine's settings and query encoder."""

    def __init__(self, index: WorkspaceIndex, settings: Settings, encode: Encode) -> None:
        self.index = index
        self.settings = settings
        self.encode = encode

    def query(self, question: str, options: QueryOptions, strategy: RerankStrategy,
              names_by_keyword: bool = True, asked: QueryPlan | None = None) -> QueryResult:
        """The whole flow; raises IndexMissingError when there is no usable index. `names_by_keyword`: `auto`
        answers a name the index defines without vectors. `asked`: the question's plan, when the caller made
        it (else made here): the one reading every stage uses."""
        self.index.require()
        asked = asked or plan(question)
        if names_by_keyword and isinstance(strategy, AutoStrategy) and asked.by_name:
            named = self.name_query(question, options, asked.reading)
            if named is not None:
                return named
        strategy, strategy_note = strategy.route(asked)
        stages = steps.Stages()
        pool = max(options.pool or strategy.pool_size(options.top_k), options.top_k)
        try:
            vector = self.index.project(self.encode([question]))[0]
        except InvalidVectors as error:  # never searched with: an answer that says why it has no results
            return replace(steps.assemble(question, options, [], [], 0, 0, False, None, stages),
                           warning=f"no answer: {error}")
        stages.mark("embed")
        allowed = self.filtered_ids(options)
        semantic, keyword, total = self.candidates(question, vector, options, pool, strategy.uses_keyword_index,
                                                   allowed)
        reading, definitions, unseen = self.name_channel(asked.reading, question, vector, semantic, allowed)
        cosines = self.keyword_cosines(vector, keyword)
        stages.mark("search")
        pooled = semantic + unseen if strategy.reranks else semantic
        request = RerankRequest(question, pooled, keyword, options.top_k,
                                IndexContext(self.index, self.encode, options.before), vector)
        ranked, was_reranked, fallback = steps.rerank(strategy, request)
        kept = steps.above_threshold(ranked, strategy.scale if was_reranked else SIMILARITY,
                                     options.min_relevance, strategy.score_threshold, cosines)
        chunks, missing = self.index.catalog().awaiting.vector_counts()  # chunks a run has not made vectors for yet
        if missing:
            by_keywords = self.by_keywords(question, pool, allowed, definitions)
            covered = self.covered(by_keywords)
            if covered < 1.0:  # else the question's own chunks all have their vectors: the strategy's answer
                kept = steps.fuse(kept, by_keywords, covered)
        if strategy.reranks and reading.navigation:
            kept = steps.names_first(kept, definitions, ranked + pooled, reading)
        original = [c for c in semantic if c.original_score >= options.min_relevance][:options.top_k]
        stages.mark("rerank")
        top = kept[:options.top_k]
        contexts = self.contexts(top + original, options)
        stages.mark("expand")
        result = steps.assemble(question, options, steps.to_results(top, contexts),
                                steps.to_results(original, contexts), total, len(kept),
                                was_reranked, fallback, stages, steps.pool_seen(request))
        result = replace(result, reading=reading.kind, reading_note=steps.reading_note(reading, definitions),
                         question_note=steps.reduction_note(question, strategy.name, self.settings),
                         strategy_note=strategy_note)
        if missing:
            result = replace(result, chunks_with_vectors=chunks - missing,
                             warning=steps.vectors_note(chunks - missing, chunks))
        elif not semantic and not self.index.running:
            result = self.check_vectors(result)
        return self.mark_stale(result if top else self.explain_empty(result, vector, options, pool))

    def filtered_ids(self, options: QueryOptions) -> set[str] | None:
        """The chunk ids the language and path filters allow; None when there is no filter."""
        paths = steps.allowed_paths(self.index.paths(), options.path_glob) if options.path_glob.strip() else None
        return None if paths is None and not options.languages else self.allowed_ids(paths, options)

    def candidates(self, question: str, vector, options: QueryOptions, pool: int, with_keywords: bool,
                   allowed: set[str] | None) -> tuple[list[Candidate], list[Candidate], int]:
        """(vector candidates, BM25 candidates, chunks searched), filters (`allowed`) applied inside the searches."""
        index = self.index
        hits = index.store().search(vector.tolist(), pool, allowed)
        keyword_hits = index.keywords.search(question, min(pool, KEYWORD_POOL), allowed) if with_keywords else []
        chunks = index.chunks([i for i, _ in hits] + [i for i, _ in keyword_hits])
        floor = options.min_relevance * self.settings.prefetch_threshold_factor
        semantic = steps.semantic_candidates(hits, chunks, floor)
        keyword = steps.keyword_candidates(keyword_hits, chunks, semantic)
        return semantic, keyword, self.searched()

    def searched(self) -> int:
        """The chunks a question searches: every committed one (by vector only those with theirs)."""
        return self.index.catalog().counts()[1]

    def by_keywords(self, question: str, pool: int, allowed: set[str] | None,
                    definitions: list[names.Definition]) -> list[Candidate]:
        """While a run makes vectors: the chunks the question's names define, then those its keywords find
        (BM25) over every committed chunk, with a vector or not: the complete channel step 1 made, for
        steps.fuse to rank beside the vector-ranked ones (weighed by `covered`)."""
        named = [d.chunk for d in definitions if allowed is None or d.chunk.id in allowed]
        hits = self.index.keywords.search(question, min(pool, KEYWORD_POOL), allowed)
        chunks = self.index.chunks([i for i, _ in hits])
        found = list({c.id: c for c in named + [chunks[i] for i, _ in hits if i in chunks]}.values())
        return [Candidate(c, 0.0, None, None) for c in found]

    def covered(self, by_keywords: list[Candidate]) -> float:
        """The vector ranking's weight while vectors are missing: the share of the chunks the question's names
        and keywords find that have their vectors (what the vector ranking could rank of them), not of the
        whole repository's: the files made first (source) are those questions point at."""
        return self.index.catalog().awaiting.share_with_vectors([c.chunk.id for c in by_keywords])

    def name_query(self, question: str, options: QueryOptions, reading: names.Reading) -> QueryResult | None:
        """`auto` on a name: its definitions, then the chunks that use it by keyword, no vectors
        (name_answer.py); None when the index does not define it (within the filters)."""
        stages = steps.Stages()
        found = name_answer.answer(self.index, reading, options, self.filtered_ids(options))
        if found is None:
            return None
        stages.mark("search")
        top = found.ranked[:options.top_k]
        contexts = self.contexts(top + found.original, options)
        stages.mark("expand")
        result = steps.assemble(question, options, steps.to_results(top, contexts),
                                steps.to_results(found.original, contexts), self.searched(), len(found.ranked),
                                True, None, stages, found.pool)
        note = found.note(top)
        return self.mark_stale(replace(result, reading=reading.kind, reading_note=note, strategy_note=note,
                                       original_ranking="keyword"))

    def name_channel(self, reading: names.Reading, question: str, vector, semantic: list[Candidate],
                     allowed: set[str] | None) -> tuple[names.Reading, list[names.Definition], list[Candidate]]:
        """How the question reads, the chunks defining what it names (for a sentence or a report: the names
        it mentions that look like code), within the filters, and those of them the vector search did not
        find, as candidates with their cosine: every reranking strategy sees them."""
        catalog = self.index.catalog()
        found = names.find(catalog, reading) if reading.navigation else names.mentioned(catalog, question)
        if not found and reading.kind == names.NAME and not names.is_code_name(reading.name):
            return names.Reading(names.QUESTION), [], []  # a plain word ("logging") naming nothing: a search
        if allowed is not None:
            found = [d for d in found if d.chunk.id in allowed]
        seen = {c.chunk.id for c in semantic}
        missing = [d.chunk for d in found if d.chunk.id not in seen]
        cosines = steps.keyword_cosines(vector, self.index.store().embeddings([c.id for c in missing])) \
            if missing else {}
        unseen = [Candidate(c, cosines.get(c.id, 0.0), cosines.get(c.id, 0.0), None) for c in missing]
        return reading, found, unseen

    def check_vectors(self, result: QueryResult) -> QueryResult:
        """No vector candidate at all: when the store holds fewer vectors than the catalogue has chunks
        (a store emptied or lost), the answer says so instead of passing for an empty one."""
        catalogued = len(self.index.catalog().vector_ids())
        stored = self.index.store().count()
        if stored >= catalogued:
            return result
        return replace(result, chunks_with_vectors=stored,
                       warning=f"the vector store holds {stored:,} vectors for {catalogued:,} indexed chunks: "
                               "its vectors are missing, so only keyword and name matches can answer; "
                               "a full rebuild (`index --full`) restores them")

    def cosines(self, question: str, ids: list[str]) -> dict[str, float]:
        """The question's cosine with each of these chunks, from their stored vectors (none: no vector)."""
        vector = self.index.project(self.encode([question]))[0]
        return steps.keyword_cosines(vector, self.index.store().embeddings(ids))

    def keyword_cosines(self, vector, keyword: list[Candidate]) -> dict[str, float]:
        """Cosines of keyword-only hits, from their stored vectors (the threshold rule needs them)."""
        ids = [c.chunk.id for c in keyword if c.original_score is None]
        return steps.keyword_cosines(vector, self.index.store().embeddings(ids)) if ids else {}

    def allowed_ids(self, paths: list[str] | None, options: QueryOptions) -> set[str]:
        """Chunk ids in the allowed paths (None: any) and languages (none given: any)."""
        wanted_paths = set(paths) if paths is not None else None
        languages = set(options.languages)
        return {chunk_id for chunk_id, path, language in self.index.id_paths_languages()
                if (wanted_paths is None or path in wanted_paths) and (not languages or language in languages)}

    def explain_empty(self, result: QueryResult, vector, options: QueryOptions, pool: int) -> QueryResult:
        """For an empty answer: how many of the nearest chunks the threshold and each filter
        removed, and the nearest chunk that the filters allow (below the threshold)."""
        catalog = self.index.catalog()
        paths = steps.allowed_paths(sorted(catalog.files()), options.path_glob) if options.path_glob.strip() else None
        store = self.index.store()
        filters = paths is not None or bool(options.languages)
        filtered = store.search(vector.tolist(), pool, self.allowed_ids(paths, options) if filters else None)
        removed = {"threshold": sum(score < options.min_relevance for _, score in filtered)}
        unfiltered = store.search(vector.tolist(), pool) if filters else []
        chunks = {c.id: c for c in catalog.chunks([i for i, _ in filtered[:1] + unfiltered])}
        removed.update(steps.removed_by_filters(unfiltered, chunks, options, paths))
        closest = steps.semantic_candidates(filtered[:1], chunks, -1.0)
        contexts = self.contexts(closest, options)
        return replace(result, removed=removed,
                       below_threshold=steps.to_results(closest, contexts)[0] if closest else None)

    def contexts(self, items: list[Candidate], options: QueryOptions) -> dict[str, tuple[str, int]]:
        """Per chunk id: (the text shown, its first line), with context lines from the file on disk."""
        if not options.expand_context:
            return {c.chunk.id: (c.chunk.content, c.chunk.start_line) for c in items}
        files: dict[str, list[str] | None] = {}
        out = {}
        for c in items:
            if c.chunk.path not in files:
                files[c.chunk.path] = read_lines(self.index.root / c.chunk.path, self.settings.max_file_bytes)
            out[c.chunk.id] = steps.expand(c.chunk, files[c.chunk.path], options.context_lines)
        return out

    def mark_stale(self, result: QueryResult) -> QueryResult:
        """The result with each chunk flagged when its file changed on disk since it was indexed (none while
        the workspace folder is gone: that is no evidence about any file)."""
        if not self.index.root.is_dir():
            return result
        paths = [r.chunk.path for r in result.results + result.original]
        states = steps.file_states(self.index.root, paths, self.index.catalog().files(paths))
        result = steps.mark_stale(result, states)
        grown = steps.over_limit(self.index.root, [p for p, s in sorted(states.items()) if s == "modified"],
                                 self.settings.max_file_bytes)
        return replace(result, warning="; ".join(filter(None, [result.warning, *grown]))) if grown else result


_LINES: LRUCache = LRUCache(maxsize=256)  # (path, mtime, size) -> lines: results keep hitting the same files
_LINES_LOCK = threading.Lock()


def read_lines(path: Path, limit: int = files.MAX_FILE_BYTES) -> list[str] | None:
    """The file's lines as shown (each cut at files.MAX_LINE_CHARS); None when it cannot be read, or is over
    `limit` now (grown since it was indexed: the chunk's own text is shown, and the answer says why)."""
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with _LINES_LOCK:
            if key in _LINES:
                return _LINES[key]
        text = files.read_text(path, encoding="utf-8-sig", limit=limit)
        lines = [files.cut_line(line) for line in text.splitlines(keepends=True)]
    except (OSError, UnicodeDecodeError):
        return None
    with _LINES_LOCK:
        _LINES[key] = lines
    return lines
