"""Informed: the keyword index moved from bm25s to SQLite FTS5 (the same top-1 for 31/33 to 8/8 questions).

Do keyword results change with the keyword engine? Top-10 keyword hits of a workspace's questions, written
by whichever KeywordIndex the code at hand has (the old bm25s one or the FTS5 table), then compared.

    python benchmarks/experiments/keyword_parity.py hits WORKSPACE QUESTIONS OUT.json   # QUESTIONS: .jsonl ("text") or lines
    python benchmarks/experiments/keyword_parity.py compare BEFORE.json AFTER.json [--qrels QUERIES.jsonl QRELS.tsv]

Run `hits` on a checkout of the old code (PYTHONPATH=that checkout) and on this one, then `compare`: same
top-1, top-10 overlap, and with qrels the keyword-only file-level MRR@10 (the first hit in a relevant file).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path


def hits(root: Path, questions_file: Path, out: Path) -> None:
    from services.core.settings import Settings
    from services.indexing.chunking import chunk_file
    from services.indexing.scanning import read_source, scan_workspace
    from services.storage.keyword_index import KeywordIndex

    settings, files = Settings(), []
    for source in scan_workspace(root, settings.max_file_bytes, settings.skip_machine_made).files:
        try:
            text, digest = read_source(source, settings.skip_machine_made)
        except Exception:
            continue
        files.append((source, digest, chunk_file(source.path, text, source.language, digest, settings)))
    lines = questions_file.read_text().splitlines()
    questions = [json.loads(q)["text"] for q in lines if q] if questions_file.suffix == ".jsonl" else [q for q in lines if q]
    folder = Path(tempfile.mkdtemp())
    if hasattr(KeywordIndex, "build"):  # the old code: bm25s rebuilt from all chunks
        index = KeywordIndex(folder / "bm25")
        index.build([c for _, _, chunks in files for c in chunks])
    else:
        from services.storage.catalog import Catalog, FileRecord
        catalog = Catalog(folder / "manifest.sqlite")
        for source, digest, chunks in files:
            catalog.commit_file(FileRecord(source.path, digest, source.size, source.mtime_ns, source.language), chunks)
        index = KeywordIndex(lambda: catalog)
    out.write_text(json.dumps([[i for i, _ in index.search(q, 10)] for q in questions]))
    print(f"{sum(len(c) for _, _, c in files):,} chunks, {len(questions)} questions -> {out}")


def mrr(runs: list[list[str]], ids: list[str], qrels: dict[str, set[str]]) -> float:
    total = 0.0
    for hit_ids, query in zip(runs, ids):
        ranks = [r for r, i in enumerate(hit_ids, 1) if i.split(":")[0] in qrels.get(query, set())]
        total += 1 / ranks[0] if ranks else 0.0
    return total / max(len(runs), 1)


def compare(before_file: Path, after_file: Path, qrels_files: list[Path] | None) -> None:
    before, after = json.loads(before_file.read_text()), json.loads(after_file.read_text())
    same_top = sum(b[:1] == a[:1] for b, a in zip(before, after))
    overlap = sum(len(set(b) & set(a)) for b, a in zip(before, after)) / max(sum(map(len, before)), 1)
    line = f"{len(before)} questions: same top-1 {same_top}/{len(before)}, top-10 overlap {overlap:.3f}"
    if qrels_files:
        ids = [json.loads(q)["id"] for q in qrels_files[0].read_text().splitlines() if q]
        qrels: dict[str, set[str]] = {}
        with qrels_files[1].open() as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                qrels.setdefault(row["query_id"], set()).add(row["doc_id"])
        line += f"; keyword-only file MRR@10 before {mrr(before, ids, qrels):.3f}, after {mrr(after, ids, qrels):.3f}"
    print(line)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("hits")
    run.add_argument("workspace", type=Path)
    run.add_argument("questions", type=Path)
    run.add_argument("out", type=Path)
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    both.add_argument("--qrels", type=Path, nargs=2, metavar=("QUERIES", "QRELS"))
    args = parser.parse_args()
    if args.command == "hits":
        hits(args.workspace, args.questions, args.out)
    else:
        compare(args.before, args.after, args.qrels)


if __name__ == "__main__":
    main()
