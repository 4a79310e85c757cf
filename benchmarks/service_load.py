"""The engine as a service under load: `knowledge-explorer serve` on 127.0.0.1, N concurrent HTTP
clients × M queries each, then one client alone (warm latency), then the CLI's warm path.

    python benchmarks/service_load.py [--workspace PATH] [--clients 8] [--queries 200] [--top-k 10] [--data DIR]

Starts its own server on a free port with a data dir under <data>/service-load (<data>: --data, else
$KE_BENCH_DATA; the index is kept, so a second run skips indexing). The query cache is off, so every request runs the whole pipeline.
Prints errors, throughput and p50/p95 wall latency per strategy, as seen by the clients.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.lib import data_root, percentile, record  # noqa: E402
from tests.helpers.engine_server import cli, env, start_server, stop_server  # noqa: E402

STRATEGIES = ("none", "keyword-boost", "rrf", "hybrid", "heuristic", "metadata")
QUESTIONS = (
    "save a note to disk", "what implements ChunkStore", "tokenize a string into words", "search notes by tag",
    "export notes as markdown", "repository interface for notes", "load the index from a file",
    "parse the command line", "remove a note by id", "count words in a document", "note service in C#",
    "how are chunks stored", "render a list of notes", "find notes matching a query", "in-memory store",
)


class Client:
    """One keep-alive HTTP connection, as a real client would hold."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        self.connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())


def setup(url: str, workspace: Path) -> str:
    client = Client(url)
    status, body = client.post("/v1/workspaces", {"path": str(workspace)})
    assert status == 201, body
    key = body["id"]
    started = time.perf_counter()
    client.post(f"/v1/workspaces/{key}/index", {})
    while True:
        client.connection.request("GET", f"/v1/workspaces/{key}/index")
        state = json.loads(client.connection.getresponse().read())
        if state["state"] != "running":
            break
        time.sleep(0.5)
    report = state["report"] or {}
    print(f"index: {state['state']}, {report.get('chunks_total')} chunks, {report.get('files_indexed')} files "
          f"indexed, {report.get('files_unchanged')} unchanged ({time.perf_counter() - started:.1f} s)")
    return key


def run_client(url: str, key: str, count: int, offset: int, top_k: int, out: list, errors: list) -> None:
    client = Client(url)
    for i in range(count):
        strategy = STRATEGIES[(i + offset) % len(STRATEGIES)]
        question = QUESTIONS[(i * 7 + offset) % len(QUESTIONS)]
        body = {"question": question, "strategy": strategy, "top_k": top_k, "use_cache": False}
        started = time.perf_counter()
        try:
            status, answer = client.post(f"/v1/workspaces/{key}/query", body)
        except Exception as error:  # counted, the run goes on
            errors.append(repr(error))
            client = Client(url)
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200 or not answer.get("results"):
            errors.append(f"{status}: {str(answer)[:200]}")
        out.append((strategy, elapsed))


def percentiles(values: list[float]) -> tuple[float, float]:
    return percentile(values, 50), percentile(values, 95)


def table(title: str, run: str, samples: list[tuple[str, float]], seconds: float | None = None) -> list[dict]:
    """Prints p50/p95 per strategy and returns them as rows for the record."""
    print(f"\n{title}")
    print(f"{'strategy':<14} {'n':>5} {'p50 ms':>8} {'p95 ms':>8}")
    rows = []
    for name in (*STRATEGIES, "all"):
        values = [ms for s, ms in samples if s == name or name == "all"]
        if values:
            p50, p95 = percentiles(values)
            rate = len(values) / seconds if seconds and name == "all" else None
            print(f"{name:<14} {len(values):>5} {p50:>8.1f} {p95:>8.1f}"
                  + (f", {rate:.1f} queries/s" if rate else ""))
            rows.append({"run": run, "strategy": name, "n": len(values), "p50 ms": round(p50, 1),
                         "p95 ms": round(p95, 1), "queries/s": round(rate, 1) if rate else ""})
    return rows


def load(url: str, key: str, clients: int, queries: int, top_k: int) -> tuple[list[dict], int]:
    samples, errors = [], []
    threads = [threading.Thread(target=run_client, args=(url, key, queries, n, top_k, samples, errors))
               for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    rows = table(f"{clients} concurrent clients x {queries} queries, top_k {top_k}: {len(errors)} errors, "
                 f"{seconds:.1f} s", f"{clients} clients", samples, seconds)
    for error in errors[:5]:
        print("  error:", error)
    return rows, len(errors)


def warm(url: str, key: str, per_strategy: int, top_k: int) -> tuple[list[dict], int]:
    samples, errors = [], []
    run_client(url, key, per_strategy * len(STRATEGIES), 0, top_k, samples, errors)
    return table(f"one client alone, {per_strategy} queries per strategy, top_k {top_k}: {len(errors)} errors",
                 "1 client", samples), len(errors)


def cli_wall(workspace: Path, data_dir: Path, runs: int = 5) -> dict:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cli("query", str(workspace), "save a note", "--data-dir", str(data_dir), "--json"),
                       cwd=ROOT, env=env(), check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    print(f"\nCLI `query` through the server, wall: median {statistics.median(times):.2f} s, "
          f"max {max(times):.2f} s over {runs} runs")
    return {"cli_query_wall_s": {"median": round(statistics.median(times), 2), "max": round(max(times), 2),
                                 "runs": runs}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, default=ROOT / "tests" / "sample_workspace")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--warm", type=int, default=100, help="queries per strategy for the lone client")
    parser.add_argument("--data", type=Path, help="the benchmarks' data folder (default: $KE_BENCH_DATA)")
    args = parser.parse_args()
    data_dir = data_root(args.data) / "service-load"
    data_dir.mkdir(parents=True, exist_ok=True)
    process, url = start_server(data_dir, data_dir / "server.log", "--allow-root", str(args.workspace.resolve()))
    try:
        print(f"server {url}, workspace {args.workspace.resolve()}")
        key = setup(url, args.workspace.resolve())
        warm(url, key, 30, args.top_k)  # also warms every strategy before the load
        loaded, load_errors = load(url, key, args.clients, args.queries, args.top_k)
        alone, alone_errors = warm(url, key, args.warm, args.top_k)
        figures = {**cli_wall(args.workspace.resolve(), data_dir), "errors": load_errors + alone_errors}
    finally:
        stop_server(process)
    record("service_load", loaded + alone, figures=figures, settings={
        "workspace": str(args.workspace.resolve()), "clients": args.clients, "queries_per_client": args.queries,
        "lone_queries_per_strategy": args.warm, "top_k": args.top_k, "cache": False},
        note="wall milliseconds per HTTP query as the clients see them")


if __name__ == "__main__":
    main()
