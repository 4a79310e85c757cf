"""Time the heuristic reranker on 100 candidates (heuristic-and-llm-reranking.md: < 5 ms).

Usage: python benchmarks/heuristic_latency.py [--runs 500] [--candidates 100]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import engine_settings, percentile, record  # noqa: E402
from services.core.models import Candidate, Chunk  # noqa: E402
from services.retrieval.strategies import RerankRequest  # noqa: E402
from services.retrieval.strategies import create_strategy  # noqa: E402
from services.core.settings import Settings  # noqa: E402

BUDGET_MS = 5.0
WORDS = "entity store search index query chunk session cache token parse save load user file".split()


def make_candidates(count: int) -> list[Candidate]:
    candidates = []
    for i in range(count):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        name = f"{a.title()}{b.title()}{i}"
        body = "\n".join(f"    {a}_{j} = self.{b}.get({j})  # {a} {b}" for j in range(i % 40 + 1))
        content = f"class {name}:\n    \"\"\"Handles {a} and {b}.\"\"\"\n{body}\n"
        chunk = Chunk(path=f"src/{a}/{b}_{i}.py", language="python", start_line=1,
                      end_line=content.count("\n") + 1, content=content, symbol=name,
                      qualified_name=f"{a}.{name}", kind="class", docstring=f"Handles {a} and {b}.",
                      references=i % 9, content_hash=hashlib.sha256(content.encode()).hexdigest())
        score = 0.9 - i * 0.005
        candidates.append(Candidate(chunk=chunk, score=score, original_score=score, original_rank=i + 1))
    return candidates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--candidates", type=int, default=100)
    args = parser.parse_args()
    strategy = create_strategy("heuristic", Settings())
    request = RerankRequest(query="how does the entity store search the index",
                            candidates=make_candidates(args.candidates))
    for _ in range(20):  # warm-up
        strategy.rerank(request)
    times_ms = []
    for _ in range(args.runs):
        started = time.perf_counter()
        strategy.rerank(request)
        times_ms.append((time.perf_counter() - started) * 1000)
    mean, p50, p95 = statistics.fmean(times_ms), percentile(times_ms, 50), percentile(times_ms, 95)
    verdict = "within" if p95 < BUDGET_MS else "OVER"
    print(f"heuristic rerank, {args.candidates} candidates, {args.runs} runs: "
          f"mean {mean:.3f} ms, p50 {p50:.3f} ms, p95 {p95:.3f} ms ({verdict} the {BUDGET_MS:g} ms budget)")
    record("heuristic_latency", [{"candidates": args.candidates, "runs": args.runs, "mean ms": round(mean, 3),
                                  "p50 ms": round(p50, 3), "p95 ms": round(p95, 3), "budget ms": BUDGET_MS}],
           settings={"runs": args.runs, "candidates": args.candidates, "engine": engine_settings()})
    return 0 if p95 < BUDGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
