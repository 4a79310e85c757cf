"""The app's own evaluation (what `knowledge-explorer eval` prints), recorded for benchmarks/README.md.

    python benchmarks/app_eval.py cosqa   [--data DIR]   # CoSQA dev, chunk level
    python benchmarks/app_eval.py files   [--data DIR]   # pytest and Sphinx, file level
    python benchmarks/app_eval.py names   [--data DIR]   # bare names (nav sets), chunk level
    python benchmarks/app_eval.py chunks  [--data DIR]   # pytest and Sphinx bug reports, chunk level
    python benchmarks/app_eval.py qualified [--data DIR] # `Class.method` names, chunk level

`names`: the 100 bare names of each nav set (../shared/benchmarks/nav), judged by their definition's chunk:
"definition at #1" is the share of names whose definition is ranked first, "in the top 10" within ten.
`qualified`: ~100 `Class.method` names per snapshot whose bare method name is defined 3+ times, made at run time
from the snapshot (benchmarks/qualified_names.py), judged and counted as `names`.
`chunks`: the SWE bug reports answered chunk by chunk, a chunk relevant when its file is.
`cosqa`: the 500 dev questions over the 6,267 functions (each function a file of a corpus workspace), top_k
100, chunk level. `files`: the SWE issues of pytest and Sphinx answered by `find_files` (each query's `before`
cuts the history), over the snapshots at <data>/swe/<repo> (`git clone -b snapshot …/history.bundle`, as
benchmarks/file_level.py clones them), all files the app indexes there. Every question goes through
LocalEngine with the app's defaults: the real model, its default encoder (openvino-int8 since issue 33), the default file-level weights.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import qualified_names  # noqa: E402
from benchmarks.lib import data_root, engine_settings, judged, record, shared, swe_snapshot  # noqa: E402
from services.core.labelled import LabelledQuery, load_queries  # noqa: E402
from services.core.settings import DEFAULT_STRATEGY, Settings  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from services.evaluation.formats import (  # noqa: E402
    CorpusDocIds, WorkspaceDocIds, corpus_workspace, load_corpus, load_qrels, materialise_corpus,
)
from services.evaluation.runner import evaluate  # noqa: E402

REPOS = ["pytest", "sphinx"]
STRATEGIES = "none,keyword-boost,rrf,hybrid,heuristic,metadata,bug-report"


def rows(report, label: str) -> list[dict]:
    out = []
    best = report.recommend()
    for name, strat in report.strategies.items():
        m = strat.metrics
        p = report.p_value(name)
        row = {"set": label, "strategy": name, "MRR@10": f"{m['mrr@10']:.3f}", "R@10": f"{m['r@10']:.3f}",
               "nDCG@10": f"{m['ndcg@10']:.3f}",
               "Δ MRR@10 vs none": "" if name == "none" else f"{report.delta(name, 'mrr@10'):+.3f}",
               "p vs none": "" if p is None else f"{p:.2g}", "W/T/L": "", "recommended": ""}
        if name != "none":
            row["W/T/L"] = "/".join(map(str, report.wins_losses(name)))
        if name == best.strategy:
            row["recommended"] = "yes"
        out.append(row)
    return out


async def cosqa(service: LocalEngine, names: list[str]) -> list[dict]:
    root = shared("cosqa")
    queries, qrels = load_queries(root / "queries_dev.jsonl"), load_qrels(root / "qrels_dev.tsv")
    items = load_corpus(root / "corpus.jsonl")
    workspace = corpus_workspace(service.data_dir, root / "corpus.jsonl")
    mapping = materialise_corpus(items, workspace)
    await service.index(workspace)
    report = await evaluate(service, judged(queries, qrels), qrels, names, workspace, 100,
                            doc_id_for=CorpusDocIds(mapping),
                            documents=len(items))
    return rows(report, "CoSQA dev (500)")


async def files(service: LocalEngine, names: list[str], data: Path) -> list[dict]:
    out = []
    for repo in ("pytest", "sphinx"):
        folder = swe_snapshot(repo, data)
        queries = load_queries(shared("swe", repo, "queries.jsonl"))
        qrels = load_qrels(shared("swe", repo, "qrels.tsv"))
        await service.index(folder)
        health = await service.health(folder)
        report = await evaluate(service, judged(queries, qrels), qrels, names, folder, 100,
                                doc_id_for=WorkspaceDocIds(qrels), documents=health.files, level="file")
        out += rows(report, f"{repo} ({report.queries}), file level")
    return out


def name_rows(report, label: str) -> list[dict]:
    """Per strategy: the share of names with the definition at #1 and within the top 10."""
    out = []
    for name, scores in report.per_query.items():
        values = list(scores.values())
        out.append({"set": label, "strategy": name,
                    "definition at #1": f"{sum(v == 1.0 for v in values) / len(values):.3f}",
                    "in the top 10": f"{sum(v > 0 for v in values) / len(values):.3f}",
                    "MRR@10": f"{report.strategies[name].metrics['mrr@10']:.3f}",
                    "default": "yes" if name == DEFAULT_STRATEGY else ""})
    return out


async def chunk_level(service: LocalEngine, names: list[str], data: Path, queries_file: str, qrels_file: str,
                      top_k: int) -> list[tuple[str, object]]:
    """(repo, report) for each snapshot: the queries asked through the app's pipeline, judged chunk by chunk."""
    out = []
    for repo in REPOS:
        folder = swe_snapshot(repo, data)
        queries, qrels = load_queries(shared(*queries_file.format(repo).split("/"))), load_qrels(shared(*qrels_file.format(repo).split("/")))
        await service.index(folder)
        report = await evaluate(service, judged(queries, qrels), qrels, names, folder, top_k,
                                doc_id_for=WorkspaceDocIds(qrels), documents=(await service.health(folder)).chunks)
        out.append((repo, report))
    return out


async def names_set(service: LocalEngine, names: list[str], data: Path) -> list[dict]:
    reports = await chunk_level(service, names, data, "nav/{}/queries.jsonl", "nav/{}/qrels_chunks.tsv", 10)
    return [row for repo, report in reports for row in name_rows(report, f"{repo} names ({report.queries})")]


async def qualified_set(service: LocalEngine, names: list[str], data: Path) -> list[dict]:
    out = []
    for repo in REPOS:
        folder = swe_snapshot(repo, data)
        made = qualified_names.make(folder)
        queries = [LabelledQuery(f"qualified-{n}", question) for n, (question, _) in enumerate(made)]
        qrels = {f"qualified-{n}": {judged: 1} for n, (_, judged) in enumerate(made)}
        await service.index(folder)
        report = await evaluate(service, queries, qrels, names, folder, 10, doc_id_for=WorkspaceDocIds(qrels),
                                documents=(await service.health(folder)).chunks)
        out += name_rows(report, f"{repo} Class.method ({report.queries})")
    return out


async def chunk_reports(service: LocalEngine, names: list[str], data: Path) -> list[dict]:
    reports = await chunk_level(service, names, data, "swe/{}/queries.jsonl", "swe/{}/qrels.tsv", 100)
    return [row for repo, report in reports for row in rows(report, f"{repo} ({report.queries}), chunk level")]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("set", choices=("cosqa", "files", "names", "chunks", "qualified"))
    ap.add_argument("--data", type=Path, help="the benchmarks' data folder (default $KE_BENCH_DATA): SWE snapshots in "
                    "<data>/swe, the indexes in <data>/ke-swe and <data>/ke-cosqa")
    ap.add_argument("--strategies", default=STRATEGIES)
    ap.add_argument("--repos", default=",".join(REPOS), help="names, chunks: which snapshots")
    ap.add_argument("--backend", help="another encoder backend than the default (embedding_backend)")
    args = ap.parse_args()
    data = data_root(args.data)
    data_dir = data / ("ke-cosqa" if args.set == "cosqa" else "ke-swe")
    settings = Settings(embedding_backend=args.backend) if args.backend else Settings()
    service = LocalEngine(settings, data_dir=data_dir)
    names = args.strategies.split(",")
    REPOS[:] = args.repos.split(",")
    try:
        run = {"cosqa": lambda: cosqa(service, names), "files": lambda: files(service, names, data),
               "names": lambda: names_set(service, names, data),
               "qualified": lambda: qualified_set(service, names, data),
               "chunks": lambda: chunk_reports(service, names, data)}[args.set]
        table = await run()
    finally:
        service.close()
    for row in table:
        print(row)
    note = (f"the app's own pipeline and defaults (LocalEngine, real model, {settings.embedding_backend}); p: paired t-test on "
            "per-query MRR@10 against none; W/T/L: queries won, tied, lost against none")
    if args.set == "files":
        note += ("; file answers (find_files) over every file the app indexes in the snapshot (Python there), "
                 "each query's `before` cutting the history; the file-level weights are the mean of both "
                 "repositories' tunings, so these figures are not out of sample (benchmarks/file_level.py's are)")
    if args.set in ("names", "qualified"):
        note = (f"the app's own pipeline and defaults (LocalEngine, real model, {settings.embedding_backend}), top_k 10; each name "
                "judged by its definition's chunk (path::name); cross-encoder has no weights here and falls back")
    record(f"app_eval_{args.set}", table, settings={"strategies": args.strategies,
                                                    "top_k": 10 if args.set in ("names", "qualified") else 100,
                                                    "engine": engine_settings(settings)}, note=note)


if __name__ == "__main__":
    asyncio.run(main())
