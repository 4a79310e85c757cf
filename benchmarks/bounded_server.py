"""Is the server bounded? `knowledge-explorer serve` on 127.0.0.1 with an indexed file grown to 3 GB (sparse, as
`truncate -s 3G`), while 50 clients at once ask questions, go to symbol, find references and read the file; then
40 clients label at once and every label is counted.

    python benchmarks/bounded_server.py [--workspace PATH] [--grow-gb 3] [--clients 50] [--rounds 4] [--labellers 40]

Prints the server's peak resident memory (VmHWM) before and after, the largest answer per route, the errors,
and the labels kept of those written. The workspace (default: the sample workspace) is copied to a scratch
folder; the server's data dir is fresh.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.lib import record  # noqa: E402
from tests.helpers.engine_server import index_and_wait, register, start_server, stop_server  # noqa: E402

GROWN = "notes/search.py"  # an indexed file of the sample workspace, grown under the server
NAME = "tokenize_query"  # defined and used in it
QUESTIONS = ("search notes by tag", "tokenize a string into words", "find notes matching a query")


def peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def client_rounds(url: str, key: str, rounds: int, offset: int, sizes: dict, errors: list) -> None:
    calls = [
        ("query", lambda c, i: c.post(f"/v1/workspaces/{key}/query",
                                       json={"question": QUESTIONS[i % 3], "top_k": 10, "use_cache": False})),
        ("goto", lambda c, i: c.get(f"/v1/workspaces/{key}/goto/symbols", params={"q": NAME})),
        ("references", lambda c, i: c.get(f"/v1/workspaces/{key}/graph/references", params={"q": NAME})),
        ("file", lambda c, i: c.get(f"/v1/workspaces/{key}/file", params={"path": GROWN})),
    ]
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        for i in range(rounds):
            route, call = calls[(i + offset) % len(calls)]
            response = await call(client, i + offset)
            sizes[route] = max(sizes.get(route, 0), len(response.content))
            if response.status_code >= 500:
                errors.append(f"{route} {response.status_code}: {response.text[:120]}")


async def labellers(url: str, key: str, count: int) -> int:
    async def label(client: httpx.AsyncClient, i: int) -> int:
        response = await client.put(f"/v1/workspaces/{key}/labels",
                                    json={"question": f"labeller {i} question", "path": GROWN, "relevant": True})
        return response.status_code

    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        statuses = await asyncio.gather(*(label(client, i) for i in range(count)))
        kept = 0
        for i in range(count):
            found = await client.get(f"/v1/workspaces/{key}/labels", params={"question": f"labeller {i} question"})
            kept += len(found.json().get("labels", [])) if found.status_code == 200 else 0
    print(f"labels: {count} written at once ({statuses.count(200)} answered 200), {kept} kept")
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", type=Path, default=ROOT / "tests" / "sample_workspace")
    parser.add_argument("--grow-gb", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--labellers", type=int, default=40)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ke-bounded-"))
    workspace = scratch / "projects" / "workspace"
    shutil.copytree(args.workspace, workspace)
    process, url = start_server(scratch / "data", scratch / "server.log", "--allow-root", str(scratch / "projects"))
    try:
        with httpx.Client(base_url=url, timeout=600) as client:
            key = register(client, workspace)
            assert index_and_wait(client, key)["state"] == "done"
            client.post(f"/v1/workspaces/{key}/query", json={"question": QUESTIONS[0]})  # the model loaded
        before = peak_mib(process.pid)
        os.truncate(workspace / GROWN, int(args.grow_gb * 1024**3))
        sizes: dict[str, int] = {}
        errors: list[str] = []
        started = time.perf_counter()
        asyncio.run(_all(url, key, args, sizes, errors))
        seconds = time.perf_counter() - started
        after = peak_mib(process.pid)
        kept = asyncio.run(labellers(url, key, args.labellers))
    finally:
        stop_server(process)
        with contextlib.suppress(OSError):
            shutil.rmtree(scratch)
    print(f"{GROWN} grown to {args.grow_gb:g} GB; {args.clients} clients x {args.rounds} requests in {seconds:.1f} s")
    print(f"server peak RSS: {before:.0f} MiB before, {after:.0f} MiB after ({after - before:+.0f} MiB)")
    for route, size in sorted(sizes.items()):
        print(f"  largest {route} answer: {size:,} bytes")
    print(f"server errors (5xx): {len(errors)}" + (f" e.g. {errors[0]}" if errors else ""))
    table = [{"what": f"peak RSS before the growth (MiB)", "value": round(before)},
             {"what": f"peak RSS after {args.clients} clients on a {args.grow_gb:g} GB file (MiB)", "value": round(after)},
             *({"what": f"largest {route} answer (bytes)", "value": size} for route, size in sorted(sizes.items())),
             {"what": "5xx answers", "value": len(errors)},
             {"what": f"labels kept of {args.labellers} written at once", "value": kept}]
    record("bounded_server", table, settings=vars(args), uses_percentiles=False,
           note=f"sample workspace, real model; {GROWN} grown (sparse) after indexing; one server process")


async def _all(url: str, key: str, args, sizes: dict, errors: list) -> None:
    await asyncio.gather(*(client_rounds(url, key, args.rounds, i, sizes, errors) for i in range(args.clients)))


if __name__ == "__main__":
    main()
