"""One question over several workspaces: merge their rankings by evidence, not by turns.

Each workspace is asked alone (its own index, strategy, threshold). The merged order comes from one score
that means the same in every workspace: the question's cosine with the chunk, in the workspace's own
vector space. Every workspace of a data dir is embedded by the one encoder, so these cosines are
comparable where the strategies' scores are not (`rrf`/`hybrid` scale every question's best to 1.0 in each
workspace, a cross-encoder's are probabilities, a heuristic's are boosted cosines). A keyword-only hit
gets its cosine from its stored vector (the engine passes them in `cosines`).

Each workspace keeps its own order: its n-th result is worth its n-th best cosine, so a strategy's
reranking inside a workspace is never undone, while a workspace whose best evidence is weak (an unrelated
project, where only chance words pass the threshold) falls behind every stronger hit of the others instead
of taking every second place. Equal evidence goes to the workspace named first.
"""

from __future__ import annotations

from pathlib import Path

from services.core.errors import QueryError
from services.core.models import MultiQueryResult, QueryResult, ResultChunk, WorkspaceHit

MAX_WORKSPACES = 20


def check_workspaces(workspaces) -> list[str]:
    """The workspaces of a question over several: 1 to MAX_WORKSPACES folders, else QueryError."""
    if isinstance(workspaces, (str, Path)) or not workspaces:
        raise QueryError("Name at least one workspace to search (a list of folders).")
    if len(workspaces) > MAX_WORKSPACES:
        raise QueryError(f"At most {MAX_WORKSPACES} workspaces can be searched at once (got {len(workspaces)}).")
    return [str(w) for w in workspaces]


def display_names(workspaces: list[str]) -> dict[str, str]:
    """Each workspace's folder name, with its parent's when two share a name ("a/src", "b/src")."""
    names = {w: Path(w).name or w for w in workspaces}
    clashes = {n for n in names.values() if list(names.values()).count(n) > 1}
    return {w: f"{Path(w).parent.name}/{n}" if n in clashes else n for w, n in names.items()}


def missing_cosines(result: QueryResult) -> list[str]:
    """The ids of a workspace's results whose cosine the ranking does not carry (keyword-only hits)."""
    return [r.chunk.id for r in result.results if r.original_score is None]


def evidence(results: list[ResultChunk], cosines: dict[str, float]) -> list[float]:
    """Each result's evidence, in the workspace's order: its n-th result gets its n-th best cosine.
    A hit with no vector yet (a run is embedding) adds no evidence of its own: it gets the next lower."""
    known = [r.original_score if r.original_score is not None else cosines.get(r.chunk.id) for r in results]
    best_first = sorted((c for c in known if c is not None), reverse=True)
    floor = best_first[-1] if best_first else 0.0
    return [best_first[n] if n < len(best_first) else floor for n in range(len(results))]


def merge(question: str, strategy: str, answers: list[tuple[str, QueryResult]], top_k: int,
          total_ms: float = 0.0, cosines: dict[str, dict[str, float]] | None = None) -> MultiQueryResult:
    """Merge each workspace's reranked results into one list of `top_k` by evidence, labelled with the
    workspace; `cosines` (workspace -> chunk id -> cosine) for the hits whose cosine the ranking lacks."""
    names = display_names([w for w, _ in answers])
    hits = []
    for order, (workspace, result) in enumerate(answers):
        worth = evidence(result.results, (cosines or {}).get(workspace, {}))
        hits += [(-value, order, r.rank, workspace, r) for value, r in zip(worth, result.results)]
    hits.sort(key=lambda h: h[:3])
    merged = [WorkspaceHit(workspace, names[workspace], rank, round(-value, 6), r)
              for rank, (value, _, _, workspace, r) in enumerate(hits[:top_k], 1)]
    timings = {"total": round(total_ms, 1)} | {w: r.timings_ms.get("total", 0.0) for w, r in answers}
    return MultiQueryResult(question, strategy, [w for w, _ in answers], merged,
                            {w: len(r.results) for w, r in answers},
                            {w: r.fallback_reason for w, r in answers if r.fallback_reason},
                            warnings={w: r.warning for w, r in answers if r.warning}, timings_ms=timings,
                            question_note=next((r.question_note for _, r in answers if r.question_note), ""))
