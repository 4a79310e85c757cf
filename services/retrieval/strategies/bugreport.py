"""`bug-report`: ranking for long questions (issue reports, tracebacks), the vector ranking for short ones.

A long question (services.retrieval.query_signals.is_long) is scored by five signals, each a weight x k/(k+r-1)
for a chunk ranked r-th by it, or a weight x its share of the best match:
- vector:  the pool's cosine ranking of the whole (truncated) question;
- parts:   the best cosine over the question's parts (title, paragraphs, code blocks) embedded one by
           one, on the chunks' stored vectors; each part also searches the index for a few more chunks;
- bm25:    BM25 with weighted, capped terms: identifiers over title words over prose;
- symbol:  chunks defining a name the question uses (`get_records`, `LogCaptureFixture`), by IDF;
- path:    chunks of files the question names (a path, a URL, a traceback frame, a module `a.b.c`).
Chunks the parts, BM25, symbol and path signals find join the pool. Short questions keep the vector
ranking as it is (CoSQA-style questions are where `none` is best).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

import numpy as np

from services.core.files import is_test_file
from services.core.models import Candidate, Signal
from services.retrieval.query_signals import NameTable, QuerySignals, extract, is_long
from services.retrieval.strategies._ranking import best_first, unchanged
from services.retrieval.strategies.base import RELATIVE, BaseStrategy, RerankRequest, StrategyContext, register
from services.core.text import STOP_WORDS, code_tokens

RANKED = ("vector", "parts", "title", "prose", "code", "bm25")  # signals scored by rank
MATCHED = ("symbol", "path")  # signals scored by their share of the best match
SIGNALS = (*RANKED, *MATCHED, "test")
MAX_PATH_CHUNKS = 200  # chunks added from files the question names


@dataclass
class Features:
    """Per chunk id, the raw value of each signal (higher is better), and the chunks themselves."""

    candidates: dict[str, Candidate]
    values: dict[str, dict[str, float]] = field(default_factory=dict)  # signal -> chunk id -> value
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # signal -> chunk id -> what matched


_TABLES: dict[str, tuple[tuple, NameTable]] = {}
_TABLES_LOCK = threading.Lock()


def name_table(context: StrategyContext) -> NameTable:
    """The index's NameTable, rebuilt when the catalogue changed (cached per index)."""
    stamp = context.version()
    with _TABLES_LOCK:
        cached = _TABLES.get(context.key)
        if cached and cached[0] == stamp:
            return cached[1]
    table = NameTable(context.chunks())
    with _TABLES_LOCK:
        _TABLES[context.key] = (stamp, table)
    return table


def bm25_weights(signals: QuerySignals, settings) -> dict[str, float]:
    """Query terms for BM25: identifier tokens weigh most, then title words, then prose; capped."""
    weights: dict[str, float] = {}

    def add(tokens, weight):
        for token in tokens:
            if len(token) > 2 and token not in STOP_WORDS and not token.isdigit():
                weights[token] = max(weights.get(token, 0.0), weight)

    add(signals.words, 1.0)
    add(code_tokens(signals.title), settings.bugreport_title_term_weight)
    add(code_tokens(" ".join([*signals.identifiers, *signals.dotted])), settings.bugreport_code_term_weight)
    ranked = sorted(weights.items(), key=lambda kv: -kv[1])  # stable: first mentioned first among equals
    return dict(ranked[:settings.bugreport_max_terms])


def question_parts(signals: QuerySignals, limit: int) -> list[tuple[str, str]]:
    """(kind, text): the title, then prose paragraphs, then code blocks, at most `limit`."""
    parts = [("title", signals.title), *(("prose", p) for p in signals.paragraphs),
             *(("code", c) for c in signals.code_blocks)]
    return [(kind, text) for kind, text in parts if text.strip()][:limit]


def gather(request: RerankRequest, settings, every_part: bool = False) -> Features:
    """Every signal's raw values for the pool plus the chunks the signals find on their own.

    Only the parts whose signals weigh something are embedded (embedding is the slow step), unless
    `every_part` (for tuning).
    """
    context, signals = request.context, extract(request.query)
    found: dict[str, Candidate] = {c.chunk.id: c for c in request.candidates}
    feats = Features(found, {name: {} for name in SIGNALS}, {name: {} for name in SIGNALS})
    feats.values["vector"] = {c.chunk.id: c.original_score for c in request.candidates}
    extra_ids: list[str] = []

    weights = bm25_weights(signals, settings)
    for chunk_id, score in context.keyword_search(weights, settings.bugreport_pool):
        feats.values["bm25"][chunk_id] = score
        extra_ids.append(chunk_id)

    table = name_table(context)
    for chunk_id, (score, why) in table.symbol_matches(signals).items():
        feats.values["symbol"][chunk_id], feats.notes["symbol"][chunk_id] = score, why
        extra_ids.append(chunk_id)
    path_ids = []
    for path, (score, why) in sorted(table.path_matches(signals).items(), key=lambda kv: -kv[1][0]):
        for chunk_id in table.by_path.get(path, []):
            feats.values["path"][chunk_id], feats.notes["path"][chunk_id] = score, why
            path_ids.append(chunk_id)
    extra_ids.extend(path_ids[:MAX_PATH_CHUNKS])

    parts = question_parts(signals, settings.bugreport_max_parts)
    if not every_part and not settings.bugreport_parts_weight:
        parts = [(kind, text) for kind, text in parts if settings.bugreport_weights()[kind]]
    part_vectors = np.asarray(context.encode([text for _, text in parts])) if parts else np.zeros((0, 0))
    for vector in part_vectors:
        extra_ids.extend(i for i, _ in context.vector_search(vector.tolist(), settings.bugreport_part_hits))

    new_ids = [i for i in dict.fromkeys(extra_ids) if i not in found]
    for chunk in context.chunks(new_ids):
        found[chunk.id] = Candidate(chunk, 0.0, None, None)
    stored = context.embeddings(list(found))
    ids = [i for i in found if i in stored]
    if ids:
        matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
        if request.query_vector is not None:
            full = matrix @ np.asarray(request.query_vector, dtype=np.float32)
            for i, value in zip(ids, full):
                feats.values["vector"].setdefault(i, float(value))
        if len(part_vectors):
            sims = matrix @ part_vectors.T
            kinds = np.array([kind for kind, _ in parts])
            feats.values["parts"] = dict(zip(ids, sims.max(axis=1).tolist()))
            for kind in ("title", "prose", "code"):
                if (kinds == kind).any():
                    feats.values[kind] = dict(zip(ids, sims[:, kinds == kind].max(axis=1).tolist()))
    feats.values["test"] = {i: 1.0 for i, c in found.items() if is_test_file(c.chunk.path)}
    for signal in ("symbol", "path", "bm25"):  # drop matches outside the catalogue's chunks
        feats.values[signal] = {i: v for i, v in feats.values[signal].items() if i in found}
    return feats


# What each signal means, in words a reader of the why panel knows.
PLAIN = {"vector": "similar to the whole question", "parts": "similar to one part of the question",
         "title": "similar to the title", "prose": "similar to a paragraph", "code": "similar to a code block",
         "bm25": "keyword search (BM25)", "symbol": "defines a name the question uses",
         "path": "in a file the question names"}
SHORT = {"vector": "whole-question similarity", "parts": "part similarity", "title": "title similarity",
         "prose": "paragraph similarity", "code": "code-block similarity", "bm25": "keywords",
         "symbol": "names", "path": "file named"}  # for the legend


def combine(feats: Features, settings) -> list[Candidate]:
    """Score every chunk: ranked signals add weight x k/(k+r-1), matches add weight x value/best.
    Signals weighing 0 are left out of the explanation (they change nothing)."""
    k = settings.bugreport_k
    weights = settings.bugreport_weights()
    totals: dict[str, list[Signal]] = {i: [] for i in feats.candidates}
    for name in RANKED:
        if not weights[name]:
            continue
        ranked = sorted(feats.values[name].items(), key=lambda kv: -kv[1])
        measure = "BM25 score" if name == "bm25" else "cosine"
        for rank, (chunk_id, value) in enumerate(ranked, 1):
            contribution = weights[name] * k / (k + rank - 1)
            totals[chunk_id].append(Signal(f"{PLAIN[name]}: #{rank}", rank, contribution, "add",
                                           f"{measure} {value:.3f}; {weights[name]:g} points at #1, "
                                           f"{weights[name]:g}×{k:g}/({k:g}+{rank - 1}) at #{rank}"))
    if weights["test"]:
        for chunk_id in feats.values["test"]:
            totals[chunk_id].append(Signal("test file", 1.0, -weights["test"], "add",
                                           "a test, not the code under test"))
    for name in MATCHED:
        values = feats.values[name]
        best = max(values.values(), default=0.0)
        if best <= 0 or not weights[name]:
            continue
        for chunk_id, value in values.items():
            note = f"matches {feats.notes[name].get(chunk_id, '')}; {weights[name]:g} points for the best match"
            totals[chunk_id].append(Signal(PLAIN[name], value, weights[name] * value / best, "add", note))
    for signals in totals.values():
        if not signals:
            signals.append(Signal("no signal found it", 0.0, 0.0, "add", "kept from the vector pool, 0 points"))
    scored = [replace(c, score=sum(s.contribution for s in totals[i]), signals=tuple(totals[i]))
              for i, c in feats.candidates.items()]
    return best_first(scored)


@register
class BugReportStrategy(BaseStrategy):
    name = "bug-report"
    label = "Bug report: names, paths, parts"
    description = ("For long questions (issue reports, tracebacks): matches the file paths, traceback frames and "
                   "code names they mention, embeds title, paragraphs and code blocks separately, and weighs "
                   "identifiers in a BM25 search. Short questions keep the vector ranking.")
    scale = RELATIVE
    uses_keyword_index = False  # it runs its own weighted BM25 search
    order = 70

    @property
    def legend(self) -> str:  # type: ignore[override]  # depends on the weights in settings
        weights = self.settings.bugreport_weights()
        parts = [f"{SHORT[n]} {w:g}" for n, w in weights.items() if w and n in SHORT]
        top = sum(w for n, w in weights.items() if n in SHORT)
        test = f", a test file −{weights['test']:g}" if weights["test"] else ""
        return (f"long questions: points from its signals, about 0 to {top:g}; at most "
                f"{', '.join(parts)}{test}; higher is better, not comparable across questions. "
                "Short questions: cosine similarity 0–1.")

    def pool_size(self, top_k: int) -> int:
        return max(self.settings.narrow_pool_factor * top_k, self.settings.bugreport_pool)  # as tuned

    def rerank(self, request: RerankRequest) -> list[Candidate]:
        if not is_long(request.query) or request.context is None:
            return unchanged(request.candidates, "a short question keeps the vector ranking")
        return combine(gather(request, self.settings), self.settings)
