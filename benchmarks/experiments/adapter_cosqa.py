"""Informed: `tuned` (the label adapter) is used only when its held-out MRR@10 beats the vector search.

The label adapter (services/retrieval/strategies/query_adapter.py) on CoSQA dev: train on one half, measure on the other.

    python benchmarks/experiments/adapter_cosqa.py [--data DIR]   # the CoSQA corpus index (`eval --corpus`) in <data>/ke-cosqa

The 500 dev questions are split in two halves (fixed seed); an adapter trained on half A is scored
on half B and the other way round, MRR@10 over every indexed chunk (exhaustive, file level), against
the plain vector search on the same questions. `--kfold` also prints the adapter's own k-fold estimate
on half A (what the app would show) to compare with the true held-out gain.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.lib import data_root, engine_settings, record, shared  # noqa: E402
from services.retrieval.strategies import query_adapter as adapter  # noqa: E402
from services.encoders.embedder import Embedder  # noqa: E402
from services.core.labelled import load_queries  # noqa: E402
from services.evaluation.formats import corpus_workspace, load_corpus, load_qrels, materialise_corpus  # noqa: E402
from services.core.settings import Settings  # noqa: E402
from services.storage.workspace_index import WorkspaceIndex  # noqa: E402



def main(args) -> None:
    corpus = shared("cosqa") / "corpus.jsonl"
    folder = corpus_workspace(args.data_dir, corpus)
    path_to_id = materialise_corpus(load_corpus(corpus), folder)
    id_to_path = {v: k for k, v in path_to_id.items()}
    index = WorkspaceIndex(folder.resolve(), Path(args.data_dir))
    chunks = index.catalog().chunks()
    stored = index.store().embeddings([c.id for c in chunks])
    chunks = [c for c in chunks if c.id in stored]
    docs = np.asarray([stored[c.id] for c in chunks], dtype=np.float32)
    paths = {p: n for n, p in enumerate(dict.fromkeys(c.path for c in chunks))}
    groups = np.array([paths[c.path] for c in chunks])
    rows_of_path: dict[str, list[int]] = {}
    for n, c in enumerate(chunks):
        rows_of_path.setdefault(c.path, []).append(n)

    qrels = load_qrels(shared("cosqa") / "qrels_dev.tsv")
    texts, positives = [], []
    for query in load_queries(shared("cosqa") / "queries_dev.jsonl"):
        rows = [r for doc, g in qrels.get(query.id, {}).items() if g > 0
                for r in rows_of_path.get(id_to_path.get(doc, ""), [])]
        if rows:
            texts.append(query.text)
            positives.append(np.array(rows))
    settings = Settings()
    embedder = Embedder(settings.embedding_model, settings.max_seq_length, settings.embed_batch_size, role="query")
    queries = index.project(embedder.encode(texts))  # as the index stores them (services/storage/projection.py)
    order = np.random.default_rng(args.seed).permutation(len(texts))
    halves = np.array_split(order, 2)
    print(f"{len(texts)} questions, {len(chunks)} chunks; halves of {len(halves[0])} and {len(halves[1])}")
    print("| trained on | measured on | none MRR@10 | tuned MRR@10 | change |")
    print("|---|---|---|---|---|")
    rows = []
    for name, (train_rows, test_rows) in (("A", halves), ("B", halves[::-1])):
        matrix = adapter.train(queries[train_rows], [positives[i] for i in train_rows], docs)
        fitted = adapter.Adapter(matrix, adapter.HeldOut(len(train_rows), 0, 0.0, 0.0))
        test = [positives[i] for i in test_rows]
        none = adapter.mrr_at_10(queries[test_rows], test, docs, groups)
        tuned = adapter.mrr_at_10(fitted.apply(queries[test_rows]), test, docs, groups)
        print(f"| {name} | {'B' if name == 'A' else 'A'} | {none:.3f} | {tuned:.3f} | {tuned - none:+.3f} |", flush=True)
        rows.append({"trained on": name, "measured on": "B" if name == "A" else "A", "none MRR@10": round(none, 3),
                     "tuned MRR@10": round(tuned, 3), "change": f"{tuned - none:+.3f}"})
    figures = {"questions": len(texts), "chunks": len(chunks)}
    if args.kfold:  # what the app would show: the k-fold estimate on one half only
        h = adapter.cross_validate(queries[halves[0]], [positives[i] for i in halves[0]], docs, groups)
        print(f"k-fold estimate on half A ({h.folds} folds): none {h.mrr_none:.3f}, tuned {h.mrr_tuned:.3f} "
              f"-> {'used' if h.useful else 'not used'}")
        figures["kfold_half_a"] = {"folds": h.folds, "none": h.mrr_none, "tuned": h.mrr_tuned, "used": h.useful}
    record("adapter_cosqa", rows, figures=figures, uses_percentiles=False,
           settings={"seed": args.seed, "data_dir": args.data_dir, "engine": engine_settings(settings)},
           note=f"{len(texts)} questions whose function is indexed, {len(chunks)} chunks; MRR@10 over every indexed "
                f"chunk, file level; the halves are a fixed-seed split of the dev questions")

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kfold", action="store_true", help="also print the k-fold estimate on half A")
    arguments = parser.parse_args()
    arguments.data_dir = str(data_root(arguments.data) / "ke-cosqa")
    main(arguments)
