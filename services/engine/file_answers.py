"""A question answered as files (services/retrieval/file_answer.py), over one index's state: the file
ranker made once per state, the filters, `auto`'s report blend."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace
from pathlib import Path

from services.core.models import FileAnswer, QueryOptions, QueryResult
from services.core.settings import Settings
from services.retrieval import search_steps
from services.retrieval.file_answer import PROSE, FileRanker
from services.retrieval.file_ranking import FileIndex
from services.retrieval.strategies import auto
from services.storage.file_words import CatalogFileWords
from services.storage.history_store import CommitIndex
from services.storage.workspace_index import WorkspaceIndex


def history(index: WorkspaceIndex) -> tuple[CommitIndex | None, str]:
    """The workspace's commit index (None without history) and what it holds ("2 commits") or why it
    holds nothing ("not a git repository")."""
    try:
        commits = index.history()
    except (sqlite3.Error, OSError) as error:  # a lock, a full disk (proven damage is repaired as it opens)
        return None, f"the history cannot be read now ({' '.join(str(error).split())})"
    if commits is None or not commits.commits:
        return None, index.history_state().reason or "no commits"
    count = len(commits.commits)
    return commits, f"{count:,} commit{'' if count == 1 else 's'}"


def allowed_files(index: WorkspaceIndex, options: QueryOptions) -> set[str] | None:
    """The indexed files the query's path glob and languages allow (None: no filter)."""
    if not options.path_glob.strip() and not options.languages:
        return None
    files = index.catalog().files()
    matching = search_steps.allowed_paths(sorted(files), options.path_glob)
    paths = list(files) if matching is None else matching
    return {p for p in paths if not options.languages or files[p].language in options.languages}


class FileAnswers:
    """Each workspace's file ranker, made on first use after each change of its index."""

    def __init__(self, settings: Settings, lock: threading.RLock) -> None:
        self.settings = settings
        self._lock = lock
        self._rankers: dict[Path, tuple[tuple, FileRanker]] = {}  # root -> (index state, ranker)

    def answer(self, index: WorkspaceIndex, result: QueryResult, options: QueryOptions, max_files: int,
               before: int | None, words: QueryResult | None = None) -> FileAnswer:
        """`result` as files; with `words` (auto on a report), both strategies' file rankings fused."""
        ranker = self.ranker(index)
        allowed = allowed_files(index, options)
        allowed = allowed if options.languages else ranker.source_files(allowed)
        if words is None:
            return ranker.answer(result, max_files, before, allowed)
        answer = ranker.blended(result, words, max_files, before, allowed, auto.FILES)
        return replace(answer, strategy_note=auto.files_note(answer.strategy_note))

    def ranker(self, index: WorkspaceIndex) -> FileRanker:
        """The file-level ranker of the index's current state: the file list and the names files define;
        whole-file keywords are the catalogue's file_words table."""
        catalog = index.catalog()
        state = (catalog.counts(), catalog.get_meta("updated_at"))
        with self._lock:
            cached = self._rankers.get(index.root)
        if cached is not None and cached[0] == state:
            return cached[1]
        commits, note = history(index)
        prose = {path for path, record in catalog.files().items() if record.language in PROSE}
        ranker = FileRanker(FileIndex(CatalogFileWords(catalog)), commits, note, prose, catalog,
                            self.settings.files_graph_weight, self.settings.files_graph_chunks,
                            self.settings.files_graph_names, self.settings.files_graph_callers)
        with self._lock:
            self._rankers[index.root] = (state, ranker)
        return ranker
