"""A query-side adapter learned from a workspace's relevance labels (issue #12), kept per workspace.

The adapter is a d x d matrix W (started at the identity) applied to the question's vector,
q' = normalise(W q); chunk vectors are untouched, so nothing is re-indexed. It is trained in
seconds with torch on the labelled questions: a softmax over the index's chunks (temperature
`TEMPERATURE`; every chunk up to MAX_VECTORS, else the labelled ones and a random sample: the vectors read
are bounded whatever the index's size) should put the labelled chunks first, with a penalty on ||W - I||^2 to stay close to
the plain vector search. Its worth is measured by k-fold cross-validation (each fold scored by an
adapter trained without it) and stored beside it; the `tuned` strategy is only used when that
held-out MRR@10 is above the plain vector ranking's on the same questions.

Saved as `<index folder>/adapter.npz`, with the hash of the labels file it was trained on; a change
to the labels retrains it after the next query. Training never runs on a question's critical path: the question
that finds no adapter for its labels (or its history cut-off) starts the training in a background thread and is
answered by the vector ranking, saying so; later questions use the adapter once it is ready (`wait_for_training`).

History as free labels (issue #19): with fewer than MIN_QUERIES labelled questions, a workspace with a git
history trains the adapter on its commits instead: (a commit's message -> the chunks of the files it
touched), for the newest HISTORY_COMMITS usable commits (1 to HISTORY_MAX_FILES indexed files each) made
strictly before the question's cut-off (`before`, as eval passes it; none: every commit). The newest
HISTORY_HELD_OUT of them are held out (a split in time: it learns from older commits, is judged on newer ones)
and the adapter is used only when it ranks their files better than the plain vector search (MRR@10). Such
adapters are kept in memory per (workspace state, cut-off); one trained for an earlier cut-off serves a later
question up to HISTORY_REUSE_DAYS after it (every commit it learnt from is still before the question).
On a big repository the commits' chunks fill at most half of MAX_VECTORS (newest commits first) and random
other chunks the rest, so training reads a bounded number of vectors in bounded time.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from services.core.labelled import LabelledQuery, readable_queries
from services.retrieval.strategies.base import StrategyContext

ADAPTER_FILE = "adapter.npz"
MIN_QUERIES = 10  # labelled questions (with a relevant result) needed before training
FOLDS = 5
TEMPERATURE = 0.05
EPOCHS = 150
LEARNING_RATE = 2e-3
REGULARISATION = 1.0
HISTORY_COMMITS = 400  # newest usable commits an adapter learns from (and is judged on)
HISTORY_MIN_COMMITS = 30
HISTORY_MAX_FILES = 5  # commits touching more indexed files are mass edits, not labels
HISTORY_HELD_OUT = 0.2  # the newest share, held out
HISTORY_NEGATIVES = 3000  # chunks sampled (beside the positives) as the softmax's other candidates
HISTORY_EPOCHS = 100
HISTORY_REUSE_DAYS = 90
MAX_VECTORS = 20_000  # stored vectors read to train and judge an adapter (~30 MB at 384 dimensions), any index size


@dataclass(frozen=True)
class HeldOut:
    queries: int
    folds: int
    mrr_tuned: float  # MRR@10 of the adapted search on questions left out of its training
    mrr_none: float  # the plain vector search on the same questions

    @property
    def useful(self) -> bool:
        return self.mrr_tuned > self.mrr_none


@dataclass(frozen=True)
class Adapter:
    matrix: np.ndarray  # d x d
    held_out: HeldOut
    stamp: str = ""  # hash of the labels file it was trained on
    source: str = "labels"  # or "history": trained on commit messages (held_out counts held-out commits)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        adapted = np.asarray(vectors, dtype=np.float32) @ self.matrix.T
        return adapted / np.maximum(np.linalg.norm(adapted, axis=-1, keepdims=True), 1e-12)

    def save(self, path: Path) -> None:
        h = self.held_out
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, matrix=self.matrix, stamp=self.stamp,
                 held_out=np.array([h.queries, h.folds, h.mrr_tuned, h.mrr_none], dtype=np.float64))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> "Adapter | None":
        try:
            with np.load(path) as data:
                q, f, tuned, none = data["held_out"].tolist()
                return cls(data["matrix"].astype(np.float32), HeldOut(int(q), int(f), tuned, none), str(data["stamp"]))
        except (OSError, KeyError, ValueError):
            return None


# --------------------------------------------------------------------------- training and scoring

def train(queries: np.ndarray, positives: list[np.ndarray], docs: np.ndarray, *, epochs: int = EPOCHS,
          regularisation: float = REGULARISATION, seed: int = 0) -> np.ndarray:
    """W (d x d) such that softmax(normalise(W q) . docs / T) favours each query's positive rows of `docs`."""
    import torch  # late: only training needs it

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: extra threads only contend with the rest of the machine
    try:
        return _train(torch, queries, positives, docs, epochs, regularisation, seed)
    finally:
        torch.set_num_threads(threads)


def _train(torch, queries, positives, docs, epochs, regularisation, seed) -> np.ndarray:
    torch.manual_seed(seed)
    dim = queries.shape[1]
    q = torch.from_numpy(np.asarray(queries, dtype=np.float32))
    d = torch.from_numpy(np.asarray(docs, dtype=np.float32))
    mask = torch.zeros(len(queries), len(docs), dtype=torch.bool)
    for row, cols in enumerate(positives):
        mask[row, torch.as_tensor(cols, dtype=torch.long)] = True
    eye = torch.eye(dim)
    weight = torch.nn.Parameter(eye.clone())
    optimiser = torch.optim.Adam([weight], lr=LEARNING_RATE)
    for _ in range(epochs):
        optimiser.zero_grad()
        adapted = torch.nn.functional.normalize(q @ weight.T, dim=1)
        logits = adapted @ d.T / TEMPERATURE
        positive = torch.logsumexp(logits.masked_fill(~mask, -1e9), dim=1)
        loss = (torch.logsumexp(logits, dim=1) - positive).mean() + regularisation * ((weight - eye) ** 2).sum()
        loss.backward()
        optimiser.step()
    return weight.detach().numpy().astype(np.float32)


def mrr_at_10(queries: np.ndarray, positives: list[np.ndarray], docs: np.ndarray, groups: np.ndarray) -> float:
    """Mean reciprocal rank of the first relevant group (file) in the top 10 distinct groups."""
    scores = np.asarray(queries, dtype=np.float32) @ np.asarray(docs, dtype=np.float32).T
    total = 0.0
    for row, cols in enumerate(positives):
        relevant = set(groups[cols].tolist())
        seen: list[int] = []
        for index in np.argsort(-scores[row], kind="stable"):
            group = int(groups[index])
            if group in seen:
                continue
            seen.append(group)
            if group in relevant:
                total += 1.0 / len(seen)
                break
            if len(seen) == 10:
                break
    return total / max(len(positives), 1)


def cross_validate(queries: np.ndarray, positives: list[np.ndarray], docs: np.ndarray, groups: np.ndarray,
                   folds: int = FOLDS) -> HeldOut:
    """Each fold is scored by an adapter trained on the other folds only."""
    order = np.random.default_rng(0).permutation(len(queries))
    parts = [p for p in np.array_split(order, min(folds, len(queries))) if len(p)]
    tuned = none = 0.0
    for part in parts:
        rest = np.setdiff1d(order, part)
        matrix = train(queries[rest], [positives[i] for i in rest], docs)
        held = [positives[i] for i in part]
        adapter = Adapter(matrix, HeldOut(0, 0, 0, 0))
        tuned += mrr_at_10(adapter.apply(queries[part]), held, docs, groups) * len(part)
        none += mrr_at_10(queries[part], held, docs, groups) * len(part)
    return HeldOut(len(queries), len(parts), tuned / len(queries), none / len(queries))


def fit(queries: np.ndarray, positives: list[np.ndarray], docs: np.ndarray, groups: np.ndarray,
        stamp: str = "") -> Adapter:
    """Cross-validate, then train on every labelled question."""
    held_out = cross_validate(queries, positives, docs, groups)
    return Adapter(train(queries, positives, docs), held_out, stamp)


# --------------------------------------------------------------------------- one workspace

def label_positives(labelled: list[LabelledQuery], chunks) -> tuple[list[str], list[np.ndarray]]:
    """(question texts, positive chunk rows) for questions with at least one relevant label that
    matches an indexed chunk: a label with a symbol matches that symbol's chunks, else the whole file."""
    texts, positives = [], []
    for query in labelled:
        rows: set = set()
        for item in (i for i in query.relevant if i.grade > 0):
            rows.update(n for n, c in enumerate(chunks) if c.path == item.path and
                        (not item.symbol or item.symbol in (c.qualified_name, c.symbol)))
        if rows:
            texts.append(query.text)
            positives.append(np.array(sorted(rows)))
    return texts, positives


def _stamp(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:16] if path.exists() else ""


_LOCK = threading.Lock()
_TRAINER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="adapter-training")
_TRAINING: dict[tuple, Future] = {}  # what is being trained (index key, source, state) -> its job
log = logging.getLogger(__name__)


def for_workspace(context: StrategyContext) -> tuple[Adapter | None, int, bool]:
    """(the workspace's adapter, labelled questions, whether one is being trained in the background): the
    labels' adapter when trained for the labels as they are; with fewer than MIN_QUERIES labelled questions,
    the one trained on the history before the question's cut-off (source "history"), if any. Never trains here."""
    adapter, labelled, training = _from_labels(context)
    if adapter is None and not training:
        adapter, training = from_history(context)
    return adapter, labelled, training


def wait_for_training(timeout: float | None = None) -> bool:
    """Wait until the adapters being trained are ready; False if `timeout` passed first."""
    with _LOCK:
        jobs = list(_TRAINING.values())
    return not wait(jobs, timeout).not_done


def _train_later(key: tuple, job, *args) -> None:
    """Run `job(*args)` in the training thread, unless the same training is already under way."""
    with _LOCK:
        if key in _TRAINING:
            return
        future = _TRAINING[key] = _TRAINER.submit(job, *args)
    future.add_done_callback(lambda done: _finished(key, done))


def _finished(key: tuple, done: Future) -> None:
    with _LOCK:
        _TRAINING.pop(key, None)
    if done.exception() is not None:
        log.warning("training the query adapter failed: %s", done.exception())


def _from_labels(context: StrategyContext) -> tuple[Adapter | None, int, bool]:
    labels = context.labels_file
    stamp = _stamp(labels)
    path = context.adapter_file
    saved = Adapter.load(path) if path.exists() else None
    if saved is not None and saved.stamp == stamp:
        return saved, saved.held_out.queries, False
    if not stamp:
        return None, 0, False
    chunks = context.chunks()
    texts, positives = label_positives(readable_queries(labels), chunks)
    if len(texts) < MIN_QUERIES:
        return None, len(texts), False
    _train_later((context.key, "labels", stamp), _fit_labels, context, chunks, texts, positives, stamp, path)
    return None, len(texts), True


def _fit_labels(context: StrategyContext, chunks, texts: list[str], positives: list[np.ndarray], stamp: str,
                path: Path) -> None:
    """Train the labels' adapter and save it beside the index (the training thread)."""
    docs, groups, positives = read_vectors(context, chunks, positives)
    texts, positives = [t for t, p in zip(texts, positives) if len(p)], [p for p in positives if len(p)]
    if len(texts) < MIN_QUERIES:
        return
    fit(np.asarray(context.encode(texts), dtype=np.float32), positives, docs, groups, stamp).save(path)


# --------------------------------------------------------------------------- history as free labels

def history_pairs(commits, chunks, before: int | None) -> list[tuple[str, np.ndarray]]:
    """(message, rows of `chunks` in the files it touched), newest first: the newest HISTORY_COMMITS commits
    strictly before `before` that touched 1 to HISTORY_MAX_FILES indexed files."""
    rows_of: dict[str, list[int]] = {}
    for n, chunk in enumerate(chunks):
        rows_of.setdefault(chunk.path, []).append(n)
    pairs = []
    for commit in sorted(commits, key=lambda c: -c.time):
        if before is not None and commit.time >= before:
            continue
        touched = [p for p in commit.files if p in rows_of]
        if not commit.message.strip() or not touched or len(touched) > HISTORY_MAX_FILES:
            continue
        pairs.append((commit.message.strip()[:1000], np.array(sorted(r for p in touched for r in rows_of[p]))))
        if len(pairs) == HISTORY_COMMITS:
            break
    return pairs


def fit_history(pairs: list[tuple[str, np.ndarray]], queries: np.ndarray, docs: np.ndarray, groups: np.ndarray,
                stamp: str = "", seed: int = 0) -> Adapter:
    """Train on the older pairs, judge on the newest HISTORY_HELD_OUT (pairs newest first, `queries` their
    messages' vectors) over the chunks read (read_vectors); the softmax sees the positives and HISTORY_NEGATIVES other chunks."""
    held = max(1, int(len(pairs) * HISTORY_HELD_OUT))
    positives = [rows for _, rows in pairs]
    train_rows = np.unique(np.concatenate(positives[held:]))
    rng = np.random.default_rng(seed)
    others = np.setdiff1d(np.arange(len(docs)), train_rows)
    sample = np.concatenate([train_rows, rng.choice(others, min(HISTORY_NEGATIVES, len(others)), replace=False)])
    renumber = {int(old): new for new, old in enumerate(sample)}
    matrix = train(queries[held:], [np.array([renumber[int(r)] for r in p]) for p in positives[held:]],
                   docs[sample], epochs=HISTORY_EPOCHS, seed=seed)
    adapter = Adapter(matrix, HeldOut(0, 0, 0, 0), stamp, "history")
    tuned = mrr_at_10(adapter.apply(queries[:held]), positives[:held], docs, groups)
    none = mrr_at_10(queries[:held], positives[:held], docs, groups)
    return replace(adapter, held_out=HeldOut(held, 1, tuned, none))


_HISTORY: dict[str, list[tuple[tuple, int | None, Adapter | None]]] = {}  # index key -> (state, cut-off, adapter)
_MESSAGES: dict[tuple[str, str], np.ndarray] = {}  # message vectors by (index key, message), encoded once


def from_history(context: StrategyContext) -> tuple[Adapter | None, bool]:
    """(the adapter trained on the workspace's commits before the question's cut-off, whether it is being
    trained now): None when there is no history or too few usable commits, or while it trains. Reuses one
    trained for the same state and an earlier cut-off within HISTORY_REUSE_DAYS (only commits before that
    cut-off taught it)."""
    try:
        history = context.history()
    except (sqlite3.Error, OSError) as error:  # cannot be read now (a lock): `tuned` goes on without it
        log.warning("the history cannot be read now: %s", error)
        return None, False
    if history is None or not history.commits:
        return None, False
    before = context.before
    state = (context.version(), len(history.commits), history.commits[0].sha)
    with _LOCK:
        for seen, cut, adapter in _HISTORY.get(context.key, []):
            if seen == state and (cut == before or (cut is not None and before is not None
                                                    and 0 <= before - cut <= HISTORY_REUSE_DAYS * 86400)):
                return adapter, False
    _train_later((context.key, "history", state, before), _remember_history, context, history.commits, before, state)
    return None, True


def _remember_history(context: StrategyContext, commits, before: int | None, state: tuple) -> None:
    """Train the history's adapter for this cut-off and keep it (or None: too few commits) in memory."""
    adapter = _train_history(context, commits, before)
    with _LOCK:
        kept = [e for e in _HISTORY.get(context.key, []) if e[0] == state][-20:]
        _HISTORY[context.key] = kept + [(state, before, adapter)]


def _train_history(context: StrategyContext, commits, before: int | None) -> Adapter | None:
    chunks = context.chunks()
    pairs = within_budget(history_pairs(commits, chunks, before))
    if len(pairs) < HISTORY_MIN_COMMITS:
        return None
    docs, groups, positives = read_vectors(context, chunks, [rows for _, rows in pairs])
    pairs = [(m, rows) for (m, _), rows in zip(pairs, positives) if len(rows)]  # chunks with a stored vector
    if len(pairs) < HISTORY_MIN_COMMITS:
        return None
    new = [m for m, _ in pairs if (context.key, m) not in _MESSAGES]
    if new:
        for message, vector in zip(new, np.asarray(context.encode(new), dtype=np.float32)):
            _MESSAGES[(context.key, message)] = vector
    queries = np.stack([_MESSAGES[(context.key, m)] for m, _ in pairs])
    return fit_history(pairs, queries, docs, groups, stamp=f"history<{before}")


# --------------------------------------------------------------------------- a memory and time budget

def within_budget(pairs: list[tuple[str, np.ndarray]], budget: int = MAX_VECTORS) -> list[tuple[str, np.ndarray]]:
    """The newest pairs whose positive chunks fill at most half the budget (the rest is for other chunks)."""
    kept: list = []
    positive: set = set()
    for message, rows in pairs:
        grown = positive | set(rows.tolist())
        if kept and len(grown) > budget // 2:
            break
        kept.append((message, rows))
        positive = grown
    return kept


def read_vectors(context: StrategyContext, chunks, positives: list[np.ndarray], budget: int = MAX_VECTORS,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(docs, groups, positives renumbered into docs): the stored vectors of every positive chunk and of
    other chunks drawn at random, `budget` in all (every chunk when the index holds no more), each chunk's
    file number, and each positive set cut to the chunks that have a vector. Reads at most `budget`
    vectors (or the positives alone, when they are more), whatever the size of the index."""
    wanted = set(np.concatenate(positives).tolist()) if positives else set()
    room = max(0, budget - len(wanted))
    if len(chunks) - len(wanted) <= room:
        rows = list(range(len(chunks)))
    else:
        draw = np.random.default_rng(seed).permutation(len(chunks)).tolist()
        rows = sorted(wanted | set([r for r in draw if r not in wanted][:room]))
    stored = context.embeddings([chunks[r].id for r in rows])
    rows = [r for r in rows if chunks[r].id in stored]
    renumber = {r: n for n, r in enumerate(rows)}
    docs = np.asarray([stored[chunks[r].id] for r in rows], dtype=np.float32).reshape(len(rows), -1)
    paths = {p: n for n, p in enumerate(dict.fromkeys(chunks[r].path for r in rows))}
    groups = np.array([paths[chunks[r].path] for r in rows], dtype=np.int64)
    return docs, groups, [np.array([renumber[int(r)] for r in p if int(r) in renumber], dtype=np.int64)
                          for p in positives]
