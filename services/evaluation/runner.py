"""The evaluation loop: every labelled query through the engine for every strategy, scored into a report."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from services.core.errors import KnowledgeError
from services.core.labelled import LabelledQuery
from services.core.models import QueryOptions, QueryResult
from services.evaluation.formats import DocIdFor, Qrels, WorkspaceDocIds, file_qrels, ranked_doc_ids
from services.evaluation.metrics import compute_metrics, paired_p_values, per_query, positive_judgements
from services.evaluation.report import BASELINE, EvalReport, StrategyReport

log = logging.getLogger(__name__)


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
    return EvalReport(reports, len(positive_judgements(qrels)), 0, rankings=rankings,
                      per_query={name: per_query(qrels, ranked) for name, ranked in rankings.items()},
                      p_values=paired_p_values(qrels, rankings))
