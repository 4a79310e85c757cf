"""`knowledge-explorer eval`: measure every reranking strategy on a labelled query set.

app/cli.py calls `add_eval_parser(subparsers)` and, for the `eval` subcommand, `run_eval_command(args, service)`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from services.core.errors import KnowledgeError

# services.evaluation is imported where it runs: every command builds this parser, only `eval` runs it


def add_eval_parser(subparsers, parents: list[argparse.ArgumentParser] | None = None) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "eval", parents=parents or [], help="measure the reranking strategies on labelled queries",
        description="Run labelled queries through the query pipeline for every strategy and report "
                    "MRR@10, nDCG@10, P@5, R@10, R@100 and latency (see docs/evaluation.md).")
    parser.add_argument("--queries", required=True, type=Path,
                        help="JSONL query set: {id, text, relevant?: [{path, symbol?, grade?}]}")
    parser.add_argument("--qrels", type=Path,
                        help="TSV with a header: query_id, doc_id, relevance (default: the queries' 'relevant')")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", type=Path, help="an indexed (or indexable) folder; doc ids are "
                       "workspace-relative paths or path::symbol")
    where.add_argument("--corpus", type=Path, help="JSONL of code items {id, code, language, func_name?}; "
                       "each becomes one file in a workspace under the data dir and is indexed")
    parser.add_argument("--strategies", default="all", help="'all' (every available one) or a,b,c")
    parser.add_argument("--top-k", type=int, default=100, help="ranking depth per query (default 100)")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N judged queries")
    parser.add_argument("--level", choices=("chunk", "file"), default="chunk",
                        help="rank chunks (default) or files (find_files: judged by path; a query's optional "
                             "'before', a unix time, makes history ignore commits at or after it)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table (a strategy that "
                        "fails is reported under 'failed' with its error, the others are measured; exit status 1)")
    return parser


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class _ProgressLine:
    """Progress on stderr: one rewritten line on a terminal, a line every 10% otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last_step = -1

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if total <= 0:
            return
        percent = 100 * done // max(total, 1)
        if self.tty:
            print(f"\r{self.label}: {done}/{total} ({percent}%) {note[:40]:<40}", end="", file=sys.stderr,
                  flush=True)
            if done >= total:
                print(file=sys.stderr)
        elif percent // 10 != self.last_step:
            self.last_step = percent // 10
            _say(f"{self.label}: {done}/{total} ({percent}%)")


def _load_judgements(args) -> tuple[list, dict]:
    from services.core.labelled import load_queries
    from services.evaluation.formats import load_qrels, qrels_from_queries

    queries = load_queries(args.queries)
    qrels = load_qrels(args.qrels) if args.qrels else qrels_from_queries(queries)
    judged = [q for q in queries if any(g > 0 for g in qrels.get(q.id, {}).values())]
    if not judged:
        raise ValueError("no query has a relevant document: give --qrels or 'relevant' entries")
    if args.limit and args.limit > 0:
        judged = judged[:args.limit]
    return judged, qrels


async def _index(service, workspace: Path) -> float:
    show = _ProgressLine("indexing")
    start = time.perf_counter()
    report = await service.index(workspace, progress=lambda e: show(e.chunks_done, e.chunks_total, e.phase))
    seconds = time.perf_counter() - start
    if report.chunks_embedded:
        rate = report.chunks_embedded / max(seconds, 1e-9)
        _say(f"indexed {report.files_indexed} files, {report.chunks_embedded} chunks in {seconds:.1f} s "
             f"({rate:.0f} chunks/s)")
    return seconds


async def _prepare(args, service, qrels) -> tuple[Path, object, int]:
    """(workspace, doc id mapper, document count), indexing the workspace or corpus incrementally."""
    from services.evaluation.formats import (
        CorpusDocIds, WorkspaceDocIds, corpus_workspace, load_corpus, materialise_corpus,
    )

    if args.corpus:
        if args.level == "file":
            raise ValueError("--level file needs --workspace (a corpus's items are judged by id, not by file)")
        items = load_corpus(args.corpus)
        workspace = corpus_workspace(service.data_dir, args.corpus)
        mapping = materialise_corpus(items, workspace)
        await _index(service, workspace)
        return workspace, CorpusDocIds(mapping), len(items)
    workspace = args.workspace.resolve()
    await _index(service, workspace)
    health = await service.health(workspace)
    return workspace, WorkspaceDocIds(qrels), health.files


async def run_eval_command(args, service) -> int:
    from services.evaluation.report import format_table
    from services.evaluation.runner import EvalProgress, choose_strategies, evaluate

    try:
        queries, qrels = _load_judgements(args)
        names, skipped = await choose_strategies(service, args.strategies)
        workspace, doc_ids, documents = await _prepare(args, service, qrels)
        _say(f"evaluating {len(queries)} queries x {len(names)} strategies ({', '.join(names)}) "
             f"at {args.level} level")
        show = _ProgressLine("querying")

        def progress(event: EvalProgress) -> None:
            show(event.done, event.total, event.strategy or "computing metrics")

        report = await evaluate(service, queries, qrels, names, workspace, args.top_k, doc_id_for=doc_ids,
                                documents=documents, progress=progress, level=args.level)
    except (OSError, ValueError, KnowledgeError) as error:
        _say(f"eval: {error}")
        return 2
    report.skipped = skipped
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(format_table(report))
    for name, error in report.failed.items():
        _say(f"eval: strategy {name} failed: {error}")
    return 1 if report.failed else 0  # the report is whole; 1 says a strategy in it failed
