"""Measure reranking strategies on labelled queries, through the same pipeline the app uses.

Formats (see docs/evaluation.md):
- labelled query set, JSONL: {"id", "text", "relevant": [{"path", "symbol"?, "grade"?}]}
- qrels, TSV with a header: query_id <TAB> doc_id <TAB> relevance
- corpus of code items, JSONL: {"id", "code", "language", "func_name"?}

Metrics come from the `ranx` library. Pure Python, no Qt.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from services.core.errors import KnowledgeError
from services.core.models import Chunk, QueryOptions, QueryResult
from services.core.settings import DEFAULT_STRATEGY
from services.core.labelled import LabelledQuery, RelevantItem, load_queries, parse_query, read_jsonl  # noqa: F401 (re-exported for eval)

# Our short names -> ranx metric names.
METRICS: dict[str, str] = {
    "mrr@10": "mrr@10",
    "ndcg@10": "ndcg@10",
    "p@5": "precision@5",
    "r@10": "recall@10",
    "r@100": "recall@100",
}
log = logging.getLogger(__name__)
BASELINE = "none"
PRIMARY = "mrr@10"  # the metric a recommendation is based on
SIGNIFICANCE = 0.05  # a strategy is recommended over `none` only when its gain has p below this

Qrels = dict[str, dict[str, int]]  # query id -> doc id -> grade (> 0 relevant)


# --------------------------------------------------------------------------- formats

@dataclass(frozen=True)
class CorpusItem:
    id: str
    code: str
    language: str = "python"
    func_name: str = ""


def load_qrels(path: str | Path) -> Qrels:
    """Read a TSV of `query_id  doc_id  relevance` with a header line."""
    qrels: Qrels = {}
    with Path(path).open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows, None)
        if header is None:
            return qrels
        if len(header) < 3 or header[2].strip().lstrip("-").isdigit():
            raise ValueError(f"{path}: the first line must be a header: query_id, doc_id, relevance")
        for number, row in enumerate(rows, 2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected 3 tab-separated columns")
            try:
                grade = int(float(row[2]))
            except ValueError:
                raise ValueError(f"{path}:{number}: relevance must be a number") from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = grade
    return qrels


def qrels_from_queries(queries: Iterable[LabelledQuery]) -> Qrels:
    """Judgements from the `relevant` field: doc id is `path` or `path::symbol`."""
    qrels: Qrels = {}
    for query in queries:
        for item in query.relevant:
            qrels.setdefault(query.id, {})[item.doc_id] = item.grade
    return qrels


def load_corpus(path: str | Path) -> list[CorpusItem]:
    items = []
    for number, record in read_jsonl(Path(path)):
        if "id" not in record or "code" not in record:
            raise ValueError(f"{path}:{number}: a corpus item needs 'id' and 'code'")
        items.append(CorpusItem(str(record["id"]), str(record["code"]),
                                str(record.get("language") or "text"), str(record.get("func_name") or "")))
    return items


# --------------------------------------------------------------------------- corpus -> workspace

EXTENSIONS = {
    "python": ".py", "javascript": ".js", "typescript": ".ts", "java": ".java", "go": ".go",
    "ruby": ".rb", "php": ".php", "rust": ".rs", "c": ".c", "cpp": ".cpp", "c++": ".cpp",
    "csharp": ".cs", "c#": ".cs", "kotlin": ".kt", "swift": ".swift", "scala": ".scala",
    "markdown": ".md", "shell": ".sh", "bash": ".sh",
}


def file_hash(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _file_name(item_id: str, language: str, taken: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", item_id).strip(".") or "item"
    ext = EXTENSIONS.get(language.lower(), ".txt")
    name, n = stem + ext, 1
    while name.lower() in taken:
        n += 1
        name = f"{stem}_{n}{ext}"
    taken.add(name.lower())
    return name


def materialise_corpus(items: Sequence[CorpusItem], folder: str | Path) -> dict[str, str]:
    """Write each item as one source file in `folder`; return {relative path: doc id}.

    Files whose content is already right are left alone, so re-indexing stays incremental.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    path_to_id = {}
    for item in items:
        name = _file_name(item.id, item.language, taken)
        target = folder / name
        text = item.code if item.code.endswith("\n") else item.code + "\n"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        path_to_id[name] = item.id
    return path_to_id


def corpus_workspace(data_dir: str | Path, corpus_path: str | Path) -> Path:
    """Where a corpus is materialised: `<data_dir>/corpora/<hash of the corpus file>`."""
    return Path(data_dir) / "corpora" / file_hash(corpus_path)


# --------------------------------------------------------------------------- results -> doc ids

class CorpusDocIds:
    """Corpus mode: a result's file is one corpus item."""

    def __init__(self, path_to_id: dict[str, str]) -> None:
        self.path_to_id = path_to_id

    def __call__(self, query_id: str, chunk: Chunk) -> str:
        return self.path_to_id.get(chunk.path, chunk.path)


class WorkspaceDocIds:
    """Workspace mode: doc ids are workspace-relative paths, or `path::symbol` for symbol-level judgements.

    A chunk counts as `path::qualified_name` or `path::symbol` when that id is judged for the query,
    else as `path` when the file is judged; otherwise it takes the granularity the query's judgements use.
    """

    def __init__(self, qrels: Qrels) -> None:
        self.qrels = qrels

    def __call__(self, query_id: str, chunk: Chunk) -> str:
        judged = self.qrels.get(query_id, {})
        for name in (chunk.qualified_name, chunk.symbol):
            if name and f"{chunk.path}::{name}" in judged:
                return f"{chunk.path}::{name}"
        if chunk.path in judged:
            return chunk.path
        symbol_level = any("::" in doc for doc in judged)
        if symbol_level and chunk.symbol:
            return f"{chunk.path}::{chunk.qualified_name or chunk.symbol}"
        return chunk.path


DocIdFor = Callable[[str, Chunk], str]


def ranked_doc_ids(query_id: str, result: QueryResult, doc_id_for: DocIdFor) -> list[str]:
    """Doc ids best first; a document found by several chunks keeps its best rank."""
    seen: dict[str, None] = {}
    for item in sorted(result.results, key=lambda r: r.rank):
        seen.setdefault(doc_id_for(query_id, item.chunk), None)
    return list(seen)


# --------------------------------------------------------------------------- metrics

def run_from_rankings(rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Rankings (best first) -> a ranx run whose scores keep that exact order."""
    return {qid: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for qid, docs in rankings.items()}


class FixedIds:
    """ranx compiles its numba kernels once per width of the id strings it is given (numpy's '<Un'); ids
    are handed to it as numbers of one width instead, so one compiled kernel serves every evaluation
    (numba caches it in the environment; warm_up compiles it at setup)."""

    WIDTH = 12

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        return self.ids.setdefault(name, f"{len(self.ids):0{self.WIDTH}d}")

    def qrels(self, qrels: Qrels) -> Qrels:
        return {self(q): {self(d): g for d, g in docs.items()} for q, docs in qrels.items()}

    def run(self, rankings: dict[str, list[str]]) -> dict[str, dict[str, float]]:
        return run_from_rankings({self(q): [self(d) for d in docs] for q, docs in rankings.items()})

    def original(self) -> dict[str, str]:
        return {fixed: name for name, fixed in self.ids.items()}


def warm_up() -> None:
    """Compile ranx's kernels for the metrics, the per-query scores and the paired test once (cached by
    numba in the environment), so the first evaluation after an install does not wait on it."""
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}}
    rankings = {"one": {"q1": ["a", "x"], "q2": ["x", "b"]}, "two": {"q1": ["x", "a"], "q2": ["c", "b"]}}
    compute_metrics(qrels, rankings["one"])
    per_query(qrels, rankings["two"])
    paired_p_values(qrels, rankings)


def compute_metrics(qrels: Qrels, rankings: dict[str, list[str]]) -> dict[str, float]:
    """Mean of each metric in METRICS over the judged queries (a query with no ranking scores 0)."""
    from ranx import Qrels as RanxQrels, Run, evaluate  # imported late: numba makes it slow to load

    positive = _positive(qrels)
    if not positive:
        raise ValueError("no query has a relevant document")
    ids = FixedIds()
    runs = {q: rankings.get(q, []) for q in positive}
    scores = evaluate(RanxQrels(ids.qrels(positive)), Run(ids.run(runs)), list(METRICS.values()),
                      make_comparable=True)
    if not isinstance(scores, dict):  # ranx returns a bare number for one metric
        scores = {list(METRICS.values())[0]: scores}
    return {short: float(scores[name]) for short, name in METRICS.items()}


def _positive(qrels: Qrels) -> Qrels:
    positive = {q: {d: g for d, g in docs.items() if g > 0} for q, docs in qrels.items()}
    return {q: docs for q, docs in positive.items() if docs}


def per_query(qrels: Qrels, rankings: dict[str, list[str]], metric: str = PRIMARY) -> dict[str, float]:
    """`metric` for each judged query (0 when its ranking misses every relevant document)."""
    from ranx import Qrels as RanxQrels, Run, evaluate

    positive = _positive(qrels)
    ids = FixedIds()
    run = Run(ids.run({q: rankings.get(q, []) for q in positive}))
    evaluate(RanxQrels(ids.qrels(positive)), run, [METRICS[metric]], make_comparable=True)
    names = ids.original()
    return {names[q]: float(v) for q, v in run.scores[METRICS[metric]].items()}


def paired_p_values(qrels: Qrels, rankings: dict[str, dict[str, list[str]]],
                    metric: str = PRIMARY) -> dict[frozenset, float]:
    """p-value of a paired Student's t-test (ranx `compare`) on `metric` for every pair of strategies."""
    from ranx import Qrels as RanxQrels, Run, compare

    positive = _positive(qrels)
    if len(rankings) < 2:
        return {}
    ids = FixedIds()
    runs = [Run(ids.run({q: ranked.get(q, []) for q in positive}), name=name) for name, ranked in rankings.items()]
    report = compare(RanxQrels(ids.qrels(positive)), runs, [METRICS[metric]], stat_test="student",
                     make_comparable=True)
    p_values = {pair: float(values[METRICS[metric]]["p_value"]) for pair, values in report.comparisons.items()}
    return {pair: 1.0 if math.isnan(p) else p for pair, p in p_values.items()}  # nan: identical per-query scores


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


# --------------------------------------------------------------------------- the evaluation loop

@dataclass
class StrategyReport:
    name: str
    metrics: dict[str, float]
    latencies_ms: list[float] = field(default_factory=list)
    fallbacks: int = 0  # queries where the pipeline fell back to the vector ranking
    fallback_reason: str = ""

    @property
    def latency_ms_p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def latency_ms_p95(self) -> float:
        return percentile(self.latencies_ms, 95)

    def to_json(self) -> dict:
        data = {name: round(value, 4) for name, value in self.metrics.items()}
        data["latency_ms_p50"] = round(self.latency_ms_p50, 1)
        data["latency_ms_p95"] = round(self.latency_ms_p95, 1)
        if self.fallbacks:
            data["fallbacks"] = self.fallbacks
        return data


@dataclass
class EvalReport:
    strategies: dict[str, StrategyReport]
    queries: int
    documents: int
    top_k: int = 100
    level: str = "chunk"  # "chunk": chunks ranked (doc ids from chunks); "file": files ranked (find_files)
    skipped: dict[str, str] = field(default_factory=dict)  # strategy -> why it was not run
    failed: dict[str, str] = field(default_factory=dict)  # strategy -> the error that stopped it (others went on)
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # strategy -> query -> doc ids
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)  # strategy -> query id -> MRR@10
    query_texts: dict[str, str] = field(default_factory=dict)  # query id -> question
    p_values: dict[frozenset, float] = field(default_factory=dict)  # {a, b} -> paired t-test p on MRR@10

    def p_value(self, a: str, b: str = BASELINE) -> float | None:
        return self.p_values.get(frozenset((a, b)))

    def wins_losses(self, strategy: str) -> tuple[int, int, int]:
        """(queries where `strategy` beat none on MRR@10, ties, losses)."""
        mine, base = self.per_query.get(strategy, {}), self.per_query.get(BASELINE, {})
        deltas = [mine[q] - base.get(q, 0.0) for q in mine]
        return (sum(d > 1e-9 for d in deltas), sum(abs(d) <= 1e-9 for d in deltas),
                sum(d < -1e-9 for d in deltas))

    def recommend(self) -> "Recommendation":
        return recommend(self)

    def delta(self, strategy: str, metric: str) -> float | None:
        """Change of `metric` against the `none` baseline (None when there is no baseline)."""
        base = self.strategies.get(BASELINE)
        if base is None or strategy not in self.strategies:
            return None
        return self.strategies[strategy].metrics[metric] - base.metrics[metric]

    def to_json(self) -> dict:
        data = {"strategies": {name: report.to_json() for name, report in self.strategies.items()},
                "queries": self.queries, "documents": self.documents, "level": self.level}
        for name, strat in data["strategies"].items():
            p = self.p_value(name)
            if name != BASELINE and p is not None:
                strat["p_vs_none"] = round(p, 4)
                strat["wins"], strat["ties"], strat["losses"] = self.wins_losses(name)
        if self.skipped:
            data["skipped"] = dict(self.skipped)
        if self.failed:
            data["failed"] = dict(self.failed)
        if self.strategies:
            best = self.recommend()
            data["recommended"] = {"strategy": best.strategy, "significant": best.significant,
                                   "reason": best.reason}
        if self.per_query:
            data["per_query"] = {q: {name: round(scores.get(q, 0.0), 4) for name, scores in self.per_query.items()}
                                 for q in next(iter(self.per_query.values()))}
        return data


@dataclass(frozen=True)
class Recommendation:
    strategy: str
    significant: bool  # its MRR@10 gain over `none` passed the paired test
    reason: str


def recommend(report: EvalReport, default: str = DEFAULT_STRATEGY, alpha: float = SIGNIFICANCE) -> Recommendation:
    """Best MRR@10, but only over `none` when a paired t-test says the gain is real (p < alpha);
    otherwise `default` (the strategy measured best on our benchmarks) if it scored at least `none`
    here, else `none`: never a strategy that scored below `none` on this data. Says why."""
    scores = {name: r.metrics.get(PRIMARY, 0.0) for name, r in report.strategies.items()}
    best = max(scores, key=lambda n: (scores[n], n == BASELINE))
    base = scores.get(BASELINE)
    if best == BASELINE or base is None:
        return Recommendation(BASELINE if base is not None else best, False,
                              f"no strategy beat the vector ranking on MRR@10 ({report.queries} queries)")
    p = report.p_value(best)
    gain = f"MRR@10 {scores[best]:.3f} vs {base:.3f} for none"
    if p is not None and p < alpha:
        return Recommendation(best, True, f"{gain}, p = {p:.3g} over {report.queries} queries")
    fallback = default if scores.get(default, -1.0) >= base else BASELINE
    evidence = f"p = {p:.2g}" if p is not None else "no paired test"
    below = f" ({default} scored {scores[default]:.3f}, below none)" if default in scores and fallback != default else ""
    return Recommendation(fallback, False, f"{best} scored best ({gain}) but the gain is not significant "
                                           f"({evidence}, {report.queries} queries); keeping {fallback}{below}")


@dataclass(frozen=True)
class EvalProgress:
    done: int
    total: int
    strategy: str
    query: str
    stage: str = "querying"  # then "computing": every query answered, the metrics being worked out


async def choose_strategies(service, wanted: str | Sequence[str] = "all") -> tuple[list[str], dict[str, str]]:
    """Pick strategies to run: 'all' means every available one. Returns (names, {skipped: reason}).

    `none` is always run first: it is the baseline every change is measured against.
    """
    infos = {info.name: info for info in await service.strategies()}
    if isinstance(wanted, str):
        wanted = list(infos) if wanted.strip() in ("", "all") else [w.strip() for w in wanted.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in infos]
    if unknown:
        raise ValueError(f"unknown strategy {', '.join(unknown)}; known: {', '.join(infos)}")
    names = [BASELINE] + [w for w in wanted if w != BASELINE]
    chosen = [n for n in names if infos[n].available]
    skipped = {n: infos[n].reason or "unavailable" for n in names if not infos[n].available}
    return chosen, skipped


ProgressFn = Callable[[EvalProgress], None]


async def _timed_query(service, text: str, options: QueryOptions) -> tuple[QueryResult, float]:
    start = time.perf_counter()
    result = await service.query(text, options)
    return result, (time.perf_counter() - start) * 1000


async def _timed_files(service, query: LabelledQuery, options: QueryOptions) -> tuple[list[str], float]:
    start = time.perf_counter()
    answer = await service.find_files(query.text, options, options.top_k, query.before)
    return [f.path for f in answer.files], (time.perf_counter() - start) * 1000


def file_qrels(qrels: Qrels) -> Qrels:
    """Judgements by file: `path::symbol` ids become their path (the best grade of the file's)."""
    out: Qrels = {}
    for query_id, grades in qrels.items():
        for doc, grade in grades.items():
            path = doc.split("::", 1)[0]
            out.setdefault(query_id, {})[path] = max(grade, out.get(query_id, {}).get(path, grade))
    return out


async def evaluate(service, queries: Sequence[LabelledQuery], qrels: Qrels, strategies: Sequence[str],
                   workspace: str | Path, top_k: int = 100, *, doc_id_for: DocIdFor | None = None,
                   documents: int = 0, progress: ProgressFn | None = None, level: str = "chunk") -> EvalReport:
    """Run every judged query through `service.query` (level "chunk") or `service.find_files` (level
    "file": files ranked, judged by path, each query's `before` cutting the history) for every
    strategy and score the rankings.

    Queries are interleaved across strategies so load changes on the machine hit all of them alike.
    The query cache is bypassed (use_cache=False) so latencies are real. Cancel by cancelling the task.
    A strategy that raises is left out from then on and reported in `failed` with its error; the others go on.
    """
    if level not in ("chunk", "file"):
        raise ValueError(f"level must be 'chunk' or 'file' (got {level!r})")
    if level == "file":
        qrels = file_qrels(qrels)
    doc_id_for = doc_id_for or WorkspaceDocIds(qrels)
    judged = [q for q in queries if any(g > 0 for g in qrels.get(q.id, {}).values())]
    if not judged:
        raise ValueError("none of the queries has a relevant document in the judgements")
    options = {name: QueryOptions(workspace=str(workspace), top_k=top_k, strategy=name, min_relevance=0.0,
                                  expand_context=False, use_cache=False) for name in strategies}
    failed: dict[str, str] = {}
    for name in strategies:  # warm-up (model loading), not timed
        await _attempt(failed, name, service.query(judged[0].text, options[name]))
    rankings: dict[str, dict[str, list[str]]] = {name: {} for name in strategies}
    reports = {name: StrategyReport(name, {}) for name in strategies}
    total, done = len(judged) * len(strategies), 0

    async def ask(query: LabelledQuery, name: str) -> None:
        if level == "file":
            answer = await _attempt(failed, name, _timed_files(service, query, options[name]))
            ranked, ms, result = (*answer, None) if answer else (None, 0.0, None)
        else:
            answer = await _attempt(failed, name, _timed_query(service, query.text,
                                                               replace(options[name], before=query.before)))
            result, ms = answer or (None, 0.0)
            ranked = None if result is None else ranked_doc_ids(query.id, result, doc_id_for)
        if ranked is None:
            return
        rankings[name][query.id] = ranked
        report = reports[name]
        report.latencies_ms.append(ms)
        if result is not None and result.fallback_reason:
            report.fallbacks += 1
            report.fallback_reason = result.fallback_reason

    for query in judged:
        for name in strategies:
            if name not in failed:
                await ask(query, name)
            done += 1
            if progress:
                progress(EvalProgress(done, total, name, query.text))
        await asyncio.sleep(0)
    judged_qrels = {q.id: qrels[q.id] for q in judged}
    if progress:
        progress(EvalProgress(done, total, "", "", "computing"))
    ran = {name: ranked for name, ranked in rankings.items() if name not in failed}
    # in a thread: ranx's first call compiles with numba and takes seconds
    report = (await asyncio.to_thread(score_rankings, judged_qrels, ran, {n: reports[n] for n in ran}) if ran
              else EvalReport({}, len(judged), documents))
    report.documents, report.top_k, report.query_texts = documents, top_k, {q.id: q.text for q in judged}
    report.level, report.failed = level, failed
    return report


async def _attempt(failed: dict[str, str], name: str, call):
    """The awaited `call`, or None with its error noted under `name` in `failed`: one strategy's failure
    (a crash in its code, a store refusing its request) stops that strategy only; the evaluation goes on."""
    try:
        return await call
    except Exception as error:  # any failure of one strategy; cancelling (BaseException) still stops it all
        log.warning("eval: strategy %s failed", name, exc_info=True)
        failed[name] = one_line(error)
        return None


def one_line(error: BaseException) -> str:
    """The error in one line: its message (with its type unless it is one of the engine's own errors)."""
    text = " ".join(str(error).split())
    if not isinstance(error, KnowledgeError):
        text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def score_rankings(qrels: Qrels, rankings: dict[str, dict[str, list[str]]],
                   reports: dict[str, StrategyReport] | None = None) -> EvalReport:
    """Metrics, per-query MRR@10 and paired p-values of each strategy's rankings (query id -> doc ids)."""
    reports = reports or {name: StrategyReport(name, {}) for name in rankings}
    for name, ranked in rankings.items():
        reports[name].metrics = compute_metrics(qrels, ranked)
    return EvalReport(reports, len(_positive(qrels)), 0, rankings=rankings,
                      per_query={name: per_query(qrels, ranked) for name, ranked in rankings.items()},
                      p_values=paired_p_values(qrels, rankings))


# --------------------------------------------------------------------------- presentation

COLUMNS = [("mrr@10", "MRR@10"), ("ndcg@10", "nDCG@10"), ("p@5", "P@5"), ("r@10", "R@10"), ("r@100", "R@100")]


def format_table(report: EvalReport) -> str:
    """A Markdown table: metrics per strategy with the change against `none`, then latency."""
    head = ["strategy"] + [label for _, label in COLUMNS] + ["p vs none", "W/T/L", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, strat in report.strategies.items():
        cells = [name]
        for key, _ in COLUMNS:
            value = strat.metrics[key]
            change = report.delta(name, key)
            cells.append(f"{value:.3f}" if name == BASELINE or change is None else f"{value:.3f} ({change:+.3f})")
        p = report.p_value(name)
        cells.append("" if p is None or name == BASELINE else f"{p:.3g}")
        cells.append("" if name == BASELINE or not report.per_query else "/".join(map(str, report.wins_losses(name))))
        cells += [f"{strat.latency_ms_p50:.0f}", f"{strat.latency_ms_p95:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    ranked = "files (find_files; history cut at each query's `before`)" if report.level == "file" else "chunks"
    lines.insert(0, f"level: {report.level} ({ranked} ranked)\n")
    lines.append(f"{report.queries} queries, {report.documents or '?'} documents, top_k={report.top_k}; "
                 "in brackets: change against `none`; p: paired t-test on MRR@10; W/T/L: queries won, tied, "
                 "lost against `none` on MRR@10.")
    if report.strategies:
        best = report.recommend()
        lines.append(f"recommended: {best.strategy} ({best.reason})")
    for name, strat in report.strategies.items():
        if strat.fallbacks:
            lines.append(f"{name}: fell back to the vector ranking on {strat.fallbacks} queries "
                         f"({strat.fallback_reason})")
    for name, reason in report.skipped.items():
        lines.append(f"{name}: not run ({reason})")
    for name, error in report.failed.items():
        lines.append(f"{name}: FAILED ({error}); the other strategies were measured")
    return "\n".join(lines)


# --------------------------------------------------------------------------- a workspace's chosen default

def default_strategy_file(labels_file: str | Path) -> Path:
    """Beside the workspace's labels file (services.storage.labels.default_labels_file): `<labels>.strategy.json`."""
    labels_file = Path(labels_file)
    return labels_file.with_name(labels_file.stem + ".strategy.json")


def save_default_strategy(labels_file: str | Path, recommendation: Recommendation) -> Path:
    target = default_strategy_file(labels_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"strategy": recommendation.strategy, "significant": recommendation.significant,
                                  "reason": recommendation.reason}), encoding="utf-8")
    return target


def load_default_strategy(labels_file: str | Path) -> str:
    """The strategy chosen for this workspace after an evaluation, or "" (unreadable files count as none)."""
    try:
        return str(json.loads(default_strategy_file(labels_file).read_text(encoding="utf-8"))["strategy"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


# --- the last evaluation of a workspace, kept by the window (its preferences) and shown again when reopened ---
def report_text(report: EvalReport, evaluated_at: str, index_version: str) -> str:
    """`report` as JSON, with when it was made and the index it was made on (e.g. the index's update time)."""
    return json.dumps({"evaluated_at": evaluated_at, "index_version": index_version, "queries": report.queries,
                       "documents": report.documents, "top_k": report.top_k, "level": report.level,
                       "skipped": report.skipped, "rankings": report.rankings, "per_query": report.per_query,
                       "query_texts": report.query_texts,
                       "p_values": [[*sorted(pair), p] for pair, p in report.p_values.items()],
                       "strategies": {name: {"metrics": s.metrics, "latencies_ms": s.latencies_ms,
                                             "fallbacks": s.fallbacks, "fallback_reason": s.fallback_reason}
                                      for name, s in report.strategies.items()}})


def report_from_text(text: str) -> tuple[EvalReport, str, str] | None:
    """(report, evaluated_at, index_version) from report_text's JSON; None when there is none or it cannot be
    read (unreadable counts as none)."""
    try:
        data = json.loads(text)
        strategies = {name: StrategyReport(name, dict(s["metrics"]), list(s["latencies_ms"]), int(s["fallbacks"]),
                                           str(s["fallback_reason"])) for name, s in data["strategies"].items()}
        p_values = {frozenset((a, b)): float(p) for a, b, p in data["p_values"]}
        report = EvalReport(strategies, int(data["queries"]), int(data["documents"]), int(data["top_k"]),
                            level=str(data["level"]), skipped=dict(data["skipped"]), rankings=data["rankings"],
                            per_query=data["per_query"], query_texts=data["query_texts"], p_values=p_values)
        return report, str(data["evaluated_at"]), str(data["index_version"])
    except (ValueError, KeyError, TypeError):
        return None
