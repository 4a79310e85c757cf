"""A query-side adapter learned from a workspace's relevance labels (issue #12), kept per workspace.

The adapter is a d x d matrix W (started at the identity) applied to the question's vector,
q' = normalise(W q); chunk vectors are untouched, so nothing is re-indexed. It is trained in
seconds with torch on the labelled questions: a softmax over every chunk of the index (temperature
`TEMPERATURE`) should put the labelled chunks first, with a penalty on ||W - I||^2 to stay close to
the plain vector search. Its worth is measured by k-fold cross-validation (each fold scored by an
adapter trained without it) and stored beside it; the `tuned` strategy is only used when that
held-out MRR@10 is above the plain vector ranking's on the same questions.

Saved as `<index folder>/adapter.npz`, with the hash of the labels file it was trained on; a change
to the labels retrains it on the next query.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from services.evaluation.metrics import LabelledQuery, load_queries
from services.retrieval.strategies.base import StrategyContext

ADAPTER_FILE = "adapter.npz"
MIN_QUERIES = 10  # labelled questions (with a relevant result) needed before training
FOLDS = 5
TEMPERATURE = 0.05
EPOCHS = 150
LEARNING_RATE = 2e-3
REGULARISATION = 1.0


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
        rows = set()
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


def for_workspace(context: StrategyContext) -> tuple[Adapter | None, int]:
    """(the workspace's adapter, labelled questions): loaded, or trained when its labels changed.

    None when there are fewer than MIN_QUERIES labelled questions.
    """
    labels = context.labels_file
    stamp = _stamp(labels)
    path = context.adapter_file
    with _LOCK:
        saved = Adapter.load(path) if path.exists() else None
        if saved is not None and saved.stamp == stamp:
            return saved, saved.held_out.queries
        if not stamp:
            return None, 0
        chunks = context.chunks()
        texts, positives = label_positives(load_queries(labels), chunks)
        if len(texts) < MIN_QUERIES:
            return None, len(texts)
        stored = context.embeddings([c.id for c in chunks])
        keep = [n for n, c in enumerate(chunks) if c.id in stored]
        docs = np.asarray([stored[chunks[n].id] for n in keep], dtype=np.float32)
        renumber = {old: new for new, old in enumerate(keep)}
        pairs = [(t, np.array([renumber[r] for r in rows if r in renumber])) for t, rows in zip(texts, positives)]
        texts, positives = [t for t, p in pairs if len(p)], [p for _, p in pairs if len(p)]
        if len(texts) < MIN_QUERIES:
            return None, len(texts)
        paths = {p: n for n, p in enumerate(dict.fromkeys(chunks[n].path for n in keep))}
        groups = np.array([paths[chunks[n].path] for n in keep])
        adapter = fit(np.asarray(context.encode(texts), dtype=np.float32), positives, docs, groups, stamp)
        adapter.save(path)
        return adapter, len(texts)
