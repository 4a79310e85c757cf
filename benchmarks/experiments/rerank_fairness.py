"""Informed: reranks encode on their own encoder, 8 documents at a time, and stop when the client leaves.

Does a big `/v1/rerank` delay queries? (issue 20, probe 8)

    python benchmarks/experiments/rerank_fairness.py [--documents 200] [--queries 20]

Serves the engine with uvicorn in this process (a temp data dir, the sample's `notes` folder indexed),
measures query latency alone, then while one 200-document rerank runs (queries one after another until
it ends), and how long a rerank keeps working after its client leaves. Prints the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.server import build_app  # noqa: E402
from services.engine.service import LocalEngine  # noqa: E402
from tests.helpers.engine_server import app_in_thread  # noqa: E402

QUESTIONS = ("save a note", "search notes by tag", "export notes as markdown", "remove a note by id")


def documents(n: int) -> list[str]:
    return [f"document {i}: " + " ".join(f"word{(i * j) % 997} token{j}" for j in range(220)) for i in range(n)]


async def timed_query(client: httpx.AsyncClient, key: str, question: str) -> float:
    start = time.perf_counter()
    response = await client.post(f"/v1/workspaces/{key}/query", json={"question": question, "use_cache": False})
    response.raise_for_status()
    return (time.perf_counter() - start) * 1000


def summary(label: str, values: list[float]) -> str:
    return f"{label:<28} n={len(values):>3}  p50 {statistics.median(values):7.1f} ms  max {max(values):7.1f} ms"


async def measure(url: str, key: str, n_documents: int, n_queries: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=900) as client:
        alone = [await timed_query(client, key, QUESTIONS[i % 4]) for i in range(n_queries)]
        print(summary("query alone", alone))
        body = {"query": "word5 token3", "documents": documents(n_documents), "strategy": "keyword-boost"}
        start = time.perf_counter()
        rerank = asyncio.ensure_future(client.post("/v1/rerank", json=body))
        during = []
        while not rerank.done():
            during.append(await timed_query(client, key, QUESTIONS[len(during) % 4]))
        (await rerank).raise_for_status()
        print(f"rerank of {n_documents} documents: {(time.perf_counter() - start):.1f} s")
        print(summary("query during the rerank", during))
        print(f"worst delay over the median alone: {max(during) - statistics.median(alone):.1f} ms")

        gone = asyncio.ensure_future(client.post("/v1/rerank", json=body))
        await asyncio.sleep(0.5)
        gone.cancel()
        left = time.perf_counter()
        await asyncio.gather(gone, return_exceptions=True)
        await client.post("/v1/rerank", json={"query": "x", "documents": ["x"], "strategy": "none"})
        print(f"a rerank whose client left stopped within {(time.perf_counter() - left):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[2])
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "projects" / "notes"
        shutil.copytree(ROOT / "tests" / "sample_workspace" / "notes", workspace)
        service = LocalEngine(data_dir=Path(tmp) / "data", kind="server")
        try:
            asyncio.run(service.index(workspace))
            app = build_app(service, Path(tmp) / "data", mcp=False, allowed_roots=[str(workspace.parent)])
            with app_in_thread(app) as url:
                key = httpx.post(f"{url}/v1/workspaces", json={"path": str(workspace)}).json()["id"]
                asyncio.run(measure(url, key, args.documents, args.queries))
        finally:
            service.close()


if __name__ == "__main__":
    main()
