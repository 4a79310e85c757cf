"""Evaluation's file formats and doc ids: qrels, corpora, a corpus as a workspace, results as ranked doc ids.

Formats (see docs/evaluation.md):
- labelled query set, JSONL: {"id", "text", "relevant": [{"path", "symbol"?, "grade"?}]} (services.core.labelled)
- qrels, TSV with a header: query_id <TAB> doc_id <TAB> relevance
- corpus of code items, JSONL: {"id", "code", "language", "func_name"?}
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from services.core.labelled import LabelledQuery, read_jsonl
from services.core.models import Chunk, QueryResult

Qrels = dict[str, dict[str, int]]  # query id -> doc id -> grade (> 0 relevant)


# --------------------------------------------------------------------------- judgements and corpora

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


def file_qrels(qrels: Qrels) -> Qrels:
    """Judgements by file: `path::symbol` ids become their path (the best grade of the file's)."""
    out: Qrels = {}
    for query_id, grades in qrels.items():
        for doc, grade in grades.items():
            path = doc.split("::", 1)[0]
            out.setdefault(query_id, {})[path] = max(grade, out.get(query_id, {}).get(path, grade))
    return out


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
