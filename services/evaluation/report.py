"""An evaluation's report: per-strategy figures, the recommendation, the Markdown table and the saved JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from services.core.settings import DEFAULT_STRATEGY
from services.evaluation.metrics import PRIMARY, percentile

BASELINE = "none"
SIGNIFICANCE = 0.05  # a strategy is recommended over `none` only when its gain has p below this


@dataclass
class StrategyReport:
    name: str
    metrics: dict[str, float]
    latencies_ms: list[float] = field(default_factory=list)
    fallbacks: int = 0  # queries where the pipeline fell back to the vector ranking
    fallback_reason: str = ""

    @property
    def latency_ms_p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def latency_ms_p95(self) -> float:
        return percentile(self.latencies_ms, 95)

    def to_json(self) -> dict:
        data = {name: round(value, 4) for name, value in self.metrics.items()}
        data["latency_ms_p50"] = round(self.latency_ms_p50, 1)
        data["latency_ms_p95"] = round(self.latency_ms_p95, 1)
        if self.fallbacks:
            data["fallbacks"] = self.fallbacks
        return data


@dataclass
class EvalReport:
    strategies: dict[str, StrategyReport]
    queries: int
    documents: int
    top_k: int = 100
    level: str = "chunk"  # "chunk": chunks ranked (doc ids from chunks); "file": files ranked (find_files)
    skipped: dict[str, str] = field(default_factory=dict)  # strategy -> why it was not run
    failed: dict[str, str] = field(default_factory=dict)  # strategy -> the error that stopped it (others went on)
    rankings: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # strategy -> query -> doc ids
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)  # strategy -> query id -> MRR@10
    query_texts: dict[str, str] = field(default_factory=dict)  # query id -> question
    p_values: dict[frozenset, float] = field(default_factory=dict)  # {a, b} -> paired t-test p on MRR@10

    def p_value(self, a: str, b: str = BASELINE) -> float | None:
        return self.p_values.get(frozenset((a, b)))

    def wins_losses(self, strategy: str) -> tuple[int, int, int]:
        """(queries where `strategy` beat none on MRR@10, ties, losses)."""
        mine, base = self.per_query.get(strategy, {}), self.per_query.get(BASELINE, {})
        deltas = [mine[q] - base.get(q, 0.0) for q in mine]
        return (sum(d > 1e-9 for d in deltas), sum(abs(d) <= 1e-9 for d in deltas),
                sum(d < -1e-9 for d in deltas))

    def recommend(self) -> "Recommendation":
        return recommend(self)

    def delta(self, strategy: str, metric: str) -> float | None:
        """Change of `metric` against the `none` baseline (None when there is no baseline)."""
        base = self.strategies.get(BASELINE)
        if base is None or strategy not in self.strategies:
            return None
        return self.strategies[strategy].metrics[metric] - base.metrics[metric]

    def to_json(self) -> dict:
        data = {"strategies": {name: report.to_json() for name, report in self.strategies.items()},
                "queries": self.queries, "documents": self.documents, "level": self.level}
        for name, strat in data["strategies"].items():
            p = self.p_value(name)
            if name != BASELINE and p is not None:
                strat["p_vs_none"] = round(p, 4)
                strat["wins"], strat["ties"], strat["losses"] = self.wins_losses(name)
        if self.skipped:
            data["skipped"] = dict(self.skipped)
        if self.failed:
            data["failed"] = dict(self.failed)
        if self.strategies:
            best = self.recommend()
            data["recommended"] = {"strategy": best.strategy, "significant": best.significant,
                                   "reason": best.reason}
        if self.per_query:
            data["per_query"] = {q: {name: round(scores.get(q, 0.0), 4) for name, scores in self.per_query.items()}
                                 for q in next(iter(self.per_query.values()))}
        return data


@dataclass(frozen=True)
class Recommendation:
    strategy: str
    significant: bool  # its MRR@10 gain over `none` passed the paired test
    reason: str


def recommend(report: EvalReport, default: str = DEFAULT_STRATEGY, alpha: float = SIGNIFICANCE) -> Recommendation:
    """Best MRR@10, but only over `none` when a paired t-test says the gain is real (p < alpha);
    otherwise `default` (the strategy measured best on our benchmarks) if it scored at least `none`
    here, else `none`: never a strategy that scored below `none` on this data. Says why."""
    scores = {name: r.metrics.get(PRIMARY, 0.0) for name, r in report.strategies.items()}
    best = max(scores, key=lambda n: (scores[n], n == BASELINE))
    base = scores.get(BASELINE)
    if best == BASELINE or base is None:
        return Recommendation(BASELINE if base is not None else best, False,
                              f"no strategy beat the vector ranking on MRR@10 ({report.queries} queries)")
    p = report.p_value(best)
    gain = f"MRR@10 {scores[best]:.3f} vs {base:.3f} for none"
    if p is not None and p < alpha:
        return Recommendation(best, True, f"{gain}, p = {p:.3g} over {report.queries} queries")
    fallback = default if scores.get(default, -1.0) >= base else BASELINE
    evidence = f"p = {p:.2g}" if p is not None else "no paired test"
    below = f" ({default} scored {scores[default]:.3f}, below none)" if default in scores and fallback != default else ""
    return Recommendation(fallback, False, f"{best} scored best ({gain}) but the gain is not significant "
                                           f"({evidence}, {report.queries} queries); keeping {fallback}{below}")


# --------------------------------------------------------------------------- presentation

COLUMNS = [("mrr@10", "MRR@10"), ("ndcg@10", "nDCG@10"), ("p@5", "P@5"), ("r@10", "R@10"), ("r@100", "R@100")]


def format_table(report: EvalReport) -> str:
    """A Markdown table: metrics per strategy with the change against `none`, then latency."""
    head = ["strategy"] + [label for _, label in COLUMNS] + ["p vs none", "W/T/L", "p50 ms", "p95 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, strat in report.strategies.items():
        cells = [name]
        for key, _ in COLUMNS:
            value = strat.metrics[key]
            change = report.delta(name, key)
            cells.append(f"{value:.3f}" if name == BASELINE or change is None else f"{value:.3f} ({change:+.3f})")
        p = report.p_value(name)
        cells.append("" if p is None or name == BASELINE else f"{p:.3g}")
        cells.append("" if name == BASELINE or not report.per_query else "/".join(map(str, report.wins_losses(name))))
        cells += [f"{strat.latency_ms_p50:.0f}", f"{strat.latency_ms_p95:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    ranked = "files (find_files; history cut at each query's `before`)" if report.level == "file" else "chunks"
    lines.insert(0, f"level: {report.level} ({ranked} ranked)\n")
    lines.append(f"{report.queries} queries, {report.documents or '?'} documents, top_k={report.top_k}; "
                 "in brackets: change against `none`; p: paired t-test on MRR@10; W/T/L: queries won, tied, "
                 "lost against `none` on MRR@10.")
    if report.strategies:
        best = report.recommend()
        lines.append(f"recommended: {best.strategy} ({best.reason})")
    for name, strat in report.strategies.items():
        if strat.fallbacks:
            lines.append(f"{name}: fell back to the vector ranking on {strat.fallbacks} queries "
                         f"({strat.fallback_reason})")
    for name, reason in report.skipped.items():
        lines.append(f"{name}: not run ({reason})")
    for name, error in report.failed.items():
        lines.append(f"{name}: FAILED ({error}); the other strategies were measured")
    return "\n".join(lines)


# --------------------------------------------------------------------------- a workspace's chosen default

def default_strategy_file(labels_file: str | Path) -> Path:
    """Beside the workspace's labels file (services.storage.labels.default_labels_file): `<labels>.strategy.json`."""
    labels_file = Path(labels_file)
    return labels_file.with_name(labels_file.stem + ".strategy.json")


def save_default_strategy(labels_file: str | Path, recommendation: Recommendation) -> Path:
    target = default_strategy_file(labels_file)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"strategy": recommendation.strategy, "significant": recommendation.significant,
                                  "reason": recommendation.reason}), encoding="utf-8")
    return target


def load_default_strategy(labels_file: str | Path) -> str:
    """The strategy chosen for this workspace after an evaluation, or "" (unreadable files count as none)."""
    try:
        return str(json.loads(default_strategy_file(labels_file).read_text(encoding="utf-8"))["strategy"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


# --- the last evaluation of a workspace, kept by the window (its preferences) and shown again when reopened ---
def report_text(report: EvalReport, evaluated_at: str, index_version: str) -> str:
    """`report` as JSON, with when it was made and the index it was made on (e.g. the index's update time)."""
    return json.dumps({"evaluated_at": evaluated_at, "index_version": index_version, "queries": report.queries,
                       "documents": report.documents, "top_k": report.top_k, "level": report.level,
                       "skipped": report.skipped, "rankings": report.rankings, "per_query": report.per_query,
                       "query_texts": report.query_texts,
                       "p_values": [[*sorted(pair), p] for pair, p in report.p_values.items()],
                       "strategies": {name: {"metrics": s.metrics, "latencies_ms": s.latencies_ms,
                                             "fallbacks": s.fallbacks, "fallback_reason": s.fallback_reason}
                                      for name, s in report.strategies.items()}})


def report_from_text(text: str) -> tuple[EvalReport, str, str] | None:
    """(report, evaluated_at, index_version) from report_text's JSON; None when there is none or it cannot be
    read (unreadable counts as none)."""
    try:
        data = json.loads(text)
        strategies = {name: StrategyReport(name, dict(s["metrics"]), list(s["latencies_ms"]), int(s["fallbacks"]),
                                           str(s["fallback_reason"])) for name, s in data["strategies"].items()}
        p_values = {frozenset((a, b)): float(p) for a, b, p in data["p_values"]}
        report = EvalReport(strategies, int(data["queries"]), int(data["documents"]), int(data["top_k"]),
                            level=str(data["level"]), skipped=dict(data["skipped"]), rankings=data["rankings"],
                            per_query=data["per_query"], query_texts=data["query_texts"], p_values=p_values)
        return report, str(data["evaluated_at"]), str(data["index_version"])
    except (ValueError, KeyError, TypeError):
        return None
