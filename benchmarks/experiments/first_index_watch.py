"""A first index watched as a user would, through REST (issue 51's look at a real repository): a fresh data dir, a
real `knowledge-explorer serve`, the repository cloned from its history bundle; every few seconds the run's
percentage, step and ETA are read and go to symbol, go to file, references and a bug report are asked. Once, in
step 2, the server is killed with SIGKILL, started again, and the run asked again: it must resume.

    python benchmarks/experiments/first_index_watch.py [--repo pylint] [--every 3] [--kill-at 40]

Prints one line per look (seconds since the start, what the run said, what answered) and when each first answered.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.helpers.engine_server import register, start_server, stop_server  # noqa: E402

SWE = ROOT.parent / "shared" / "benchmarks" / "swe"
LOOKS = {"pylint": ("PyLinter", "pylinter.py", "register_checker"), "xarray": ("Dataset", "dataset.py", "merge"),
         "pytest": ("LineMatcher", "fixtures.py", "FixtureRequest")}


def clone(repo: str, folder: Path) -> Path:
    target = folder / "projects" / repo
    subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(SWE / repo / "history.bundle"), str(target)], check=True)
    return target


def look(client: httpx.Client, key: str, names: tuple[str, str, str], report: str) -> dict:
    symbol, file, name = names
    answered = {}
    goto = client.get(f"/v1/workspaces/{key}/goto/symbols", params={"q": symbol})
    answered["goto symbol"] = goto.status_code == 200 and bool(goto.json().get("hits"))
    files = client.get(f"/v1/workspaces/{key}/goto/files", params={"q": file})
    answered["goto file"] = files.status_code == 200 and bool(files.json().get("hits"))
    refs = client.get(f"/v1/workspaces/{key}/graph/references", params={"q": name})
    answered["references"] = refs.status_code == 200 and refs.json().get("total", 0) > 0
    query = client.post(f"/v1/workspaces/{key}/files", json={"question": report[:4000], "top_k": 5})
    body = query.json() if query.status_code == 200 else {}
    answered["bug report"] = bool(body.get("files"))
    answered["_note"] = (body.get("warning") or "")[:60]
    return answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="pylint", choices=sorted(LOOKS))
    parser.add_argument("--every", type=float, default=3.0)
    parser.add_argument("--kill-at", type=int, default=40, help="kill the server once the run passes this percent")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ke-watch-"))
    workspace = clone(args.repo, scratch)
    report = json.loads((SWE / args.repo / "queries.jsonl").read_text().splitlines()[0])["text"]
    start = lambda: start_server(scratch / "data", scratch / "server.log", "--allow-root",  # noqa: E731
                                 str(scratch / "projects"))
    process, url = start()
    client = httpx.Client(base_url=url, timeout=120)
    key = register(client, workspace)
    began = time.monotonic()
    client.post(f"/v1/workspaces/{key}/index", json={})
    first: dict[str, float] = {}
    killed = False
    while True:
        status = client.get(f"/v1/workspaces/{key}/index").json()
        progress = status.get("progress") or {}
        answered = look(client, key, LOOKS[args.repo], report)
        now = time.monotonic() - began
        for what, ok in answered.items():
            if ok is True and what not in first:
                first[what] = now
        eta = progress.get("eta_seconds")
        print(f"{now:6.1f} s  {status['state']:<8} step {progress.get('step')} {progress.get('run_percent')} %  "
              f"{progress.get('phase')}  eta {eta if eta is None else round(eta)} s  "
              + "  ".join(f"{k}={'yes' if v is True else v}" for k, v in answered.items()), flush=True)
        if status["state"] != "running":
            break
        if not killed and progress.get("step") == 2 and (progress.get("run_percent") or 0) >= args.kill_at:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            print(f"{now:6.1f} s  server killed with SIGKILL at {progress.get('run_percent')} %", flush=True)
            process, url = start()
            client = httpx.Client(base_url=url, timeout=120)
            key = register(client, workspace)
            print(f"restarted: {client.get(f'/v1/workspaces/{key}/health').json().get('state')}", flush=True)
            client.post(f"/v1/workspaces/{key}/index", json={})
            killed = True
        time.sleep(args.every)
    final = status.get("report") or {}
    print(f"done in {time.monotonic() - began:.0f} s: {final.get('files_indexed')} files indexed, "
          f"{final.get('chunks_embedded')} chunks embedded this run, {final.get('chunks_total')} in the index")
    for what in ("goto symbol", "goto file", "references", "bug report"):
        print(f"first answered: {what:<12} {first.get(what, float('nan')):.1f} s")
    stop_server(process)


if __name__ == "__main__":
    main()
