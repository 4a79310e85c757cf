"""One question over several workspaces: merge their rankings fairly.

Each workspace is asked alone (its own index, strategy, threshold), then the rankings are merged by
reciprocal-rank fusion: a result's fused score is 1 / (RRF_K + its rank in its workspace). Scores from
different indexes are not comparable (a projected index's cosines run lower, `rrf`/`hybrid` scores are
normalised per query so every workspace's best is 1.0, a cross-encoder's are probabilities), ranks are.
Each workspace's threshold already removed its weak results, so a workspace with nothing relevant
contributes little or nothing. Equal fused scores (the same rank in two workspaces) go to the higher
original cosine, then to the workspace named first.
"""

from __future__ import annotations

from pathlib import Path

from services.core.errors import QueryError
from services.core.models import MultiQueryResult, QueryResult, WorkspaceHit

RRF_K = 60  # the usual constant (Cormack et al. 2009); with disjoint lists only the order matters
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


def merge(question: str, strategy: str, answers: list[tuple[str, QueryResult]], top_k: int,
          total_ms: float = 0.0) -> MultiQueryResult:
    """Merge each workspace's reranked results into one list of `top_k`, labelled with the workspace."""
    names = display_names([w for w, _ in answers])
    hits = []
    for order, (workspace, result) in enumerate(answers):
        for r in result.results:
            tie = r.original_score if r.original_score is not None else -1.0
            hits.append((-1.0 / (RRF_K + r.rank), -tie, order, workspace, r))
    hits.sort(key=lambda h: h[:3])
    merged = [WorkspaceHit(workspace, names[workspace], rank, round(-fused, 6), r)
              for rank, (fused, _, _, workspace, r) in enumerate(hits[:top_k], 1)]
    timings = {"total": round(total_ms, 1)} | {w: r.timings_ms.get("total", 0.0) for w, r in answers}
    return MultiQueryResult(question, strategy, [w for w, _ in answers], merged,
                            {w: len(r.results) for w, r in answers},
                            {w: r.fallback_reason for w, r in answers if r.fallback_reason},
                            warnings={w: r.warning for w, r in answers if r.warning}, timings_ms=timings,
                            question_note=next((r.question_note for _, r in answers if r.question_note), ""))
