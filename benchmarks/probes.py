"""Issue 20's eighteen failed probes and issue 31's eleven (19-29), repeated end to end with real processes.

    python benchmarks/probes.py [--only 1,5,12] [--scratch DIR]

Everything runs as a user would run it: the `knowledge-explorer` command beside this Python (with
PYTHONPATH set to this checkout), `serve` as a real uvicorn server on 127.0.0.1, httpx with forged
Host/Origin headers, the MCP SDK's client over /mcp and over stdio, a real `chroma run`, real signals
(SIGINT, SIGKILL) at real moments, a real 2 MiB tmpfs as a full disk (needs root), real permissions
(the CLI runs without CAP_DAC_OVERRIDE, so root obeys chmod 000). Workspaces: a copy of
tests/sample_workspace; the pytest snapshot (/work/shared/benchmarks/swe/pytest/snapshot.tar.gz, or
--pytest-tar) for Ctrl-C; a generated 1,200-chunk workspace (Chroma writes its HNSW graph to disk from
about 1,000 vectors) for the HNSW files, the full disk and kill -9 (the issue used pytest for the last
two; a full pytest index took over 25 minutes on the busy machine these were written on).

Prints one line per probe: number, probe, expected, observed, PASS/FAIL; then the figures (Ctrl-C stop
time on pytest, a query's worst delay during a 200-document rerank) and records them as JSON
(benchmarks/record.py). Exit status 1 when a probe fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.record import record  # noqa: E402

PYTEST_TAR = Path("/work/shared/benchmarks/swe/pytest/snapshot.tar.gz")
BIN = Path(sys.executable).parent
EVIL = "attacker.example"
FIGURES: dict = {}


# --- running things ---
def env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **extra}


def command(*args) -> list:
    exe = BIN / "knowledge-explorer"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "app.cli", *args]


def ke(*args, timeout: float = 1800, preexec=None) -> tuple[int, str, str]:
    """Run the CLI; (exit status, stdout, stderr)."""
    done = subprocess.run(command(*[str(a) for a in args]), cwd=ROOT, env=SCRATCH.env, capture_output=True,
                          timeout=timeout, preexec_fn=preexec)
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")


def one_line(err: str) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 1 and "Traceback" not in err


def first(err: str, width: int = 110) -> str:
    text = " ".join(err.strip().splitlines()[:1]) or "(nothing)"
    return text if len(text) <= width else text[:width - 1] + "…"


def health(workspace: Path, data: Path) -> dict:
    code, out, err = ke("health", workspace, "--json", "--data-dir", data)
    if code:
        return {"state": f"exit {code}", "message": first(err)}
    return json.loads(out)


def drop_read_override() -> None:
    """In the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so root obeys file permissions."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def committed_files(data: Path) -> set[str]:
    for manifest in data.glob("workspaces/*/manifest.sqlite"):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{manifest}?mode=ro", uri=True, timeout=0.2)) as db:
                return {row[0] for row in db.execute("SELECT path FROM files")}
        except sqlite3.Error:
            return set()
    return set()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, seconds: float, step: float = 0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return None


@contextlib.contextmanager
def chroma_server(path: Path, port: int):
    chroma = BIN / "chroma" if (BIN / "chroma").exists() else shutil.which("chroma")
    process = subprocess.Popen([str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def up():
        try:
            return httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        if not wait_until(up, 60, 0.2):
            raise RuntimeError("chroma run did not start")
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


# --- the scratch folder: workspaces and indexed data dirs, made once ---
class Scratch:
    def __init__(self, folder: Path, pytest_tar: Path) -> None:
        self.folder, self.pytest_tar = folder, pytest_tar
        self.roots = folder / "roots"
        self.roots.mkdir(parents=True, exist_ok=True)
        self.env = env(KE_ENCODER_CACHE_DIR=str(folder / "encoders"))  # one model export for every data dir
        self._made: dict[str, Path] = {}

    def sample(self) -> Path:
        target = self.roots / "sample"
        if not target.exists():
            shutil.copytree(ROOT / "tests" / "sample_workspace", target)
        return target

    def pytest(self) -> Path:
        target = self.roots / "pytest"
        if not target.exists():
            target.mkdir()
            with tarfile.open(self.pytest_tar) as tar:
                tar.extractall(target, filter="data")
        return target

    def generated(self) -> Path:
        """150 files of 8 small functions: 1,200 chunks, so Chroma writes its HNSW graph to disk."""
        target = self.roots / "generated"
        if not target.exists():
            target.mkdir()
            for i in range(150):
                (target / f"m{i}.py").write_text("".join(
                    f"def f{i}_{j}(x):\n    '''Compute thing {i} {j}.'''\n    return x * {j} + {i}\n\n\n"
                    for j in range(8)))
        return target

    def indexed(self, name: str) -> Path:
        """A data dir holding the index of workspace `name` (sample, pytest, generated), made once."""
        if name not in self._made:
            data = self.folder / f"base-{name}"
            workspace = getattr(self, name)()
            if not data.exists():
                code, _, err = ke("index", workspace, "--data-dir", data)
                if code:
                    raise RuntimeError(f"indexing {name} failed: {err}")
            self._made[name] = data
        return self._made[name]

    def copy(self, name: str, label: str) -> tuple[Path, Path]:
        """(workspace, a fresh copy of its indexed data dir) for one probe."""
        base = self.indexed(name)
        data = self.folder / f"data-{label}"
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(base, data, ignore=shutil.ignore_patterns("owner.lock", "owner.json", "logs"))
        return getattr(self, name)(), data


SCRATCH: Scratch


# --- the served engine, shared by the HTTP probes ---
class Served:
    def __init__(self) -> None:
        self.workspace, self.data = SCRATCH.copy("sample", "served")
        self.log = SCRATCH.folder / "serve.log"
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command("serve", "--port", "0", "--data-dir", str(self.data),
                                                    "--allow-root", str(SCRATCH.roots)),
                                            cwd=ROOT, env=SCRATCH.env, stdout=out, stderr=subprocess.STDOUT)
        started = wait_until(lambda: "serving on" in self.log.read_text() or self.process.poll() is not None, 600, 0.2)
        text = self.log.read_text()
        if not started or self.process.poll() is not None:
            raise RuntimeError(f"serve did not start: {text[-1500:]}")
        self.url = text.split("serving on ", 1)[1].split()[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.client = httpx.Client(base_url=self.url, timeout=600)
        self.key = self.client.post("/v1/workspaces", json={"path": str(self.workspace)}).json()["id"]

    def close(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


_SERVED: list[Served] = []


def served() -> Served:
    if not _SERVED:
        _SERVED.append(Served())
    return _SERVED[0]


async def mcp_calls(target, calls: list[tuple[str, dict]]) -> list:
    """Call MCP tools over HTTP (a URL) or stdio (StdioServerParameters); each result (is_error, text)."""
    from mcp import Client

    results = []
    async with Client(target, read_timeout_seconds=300) as mcp:
        for tool, arguments in calls:
            got = await mcp.call_tool(tool, arguments)
            results.append((got.is_error, got.content[0].text if got.content else ""))
    return results


# --- the probes: each returns (expected, observed, passed) ---
def probe_1_any_file_readable():
    s = served()
    codes = {}
    for name, path in [("/", "/"), ("/etc", "/etc"), ("~", str(Path.home())), ("/proc/self", "/proc/self")]:
        codes[name] = s.client.post("/v1/workspaces", json={"path": path}).status_code
    link = s.workspace / "passwd-link"
    link.symlink_to("/etc/passwd")
    reads = {}
    try:
        for path in ("../../../../etc/passwd", "/etc/passwd", "passwd-link", "proc/self/environ",
                     "..%2f..%2f..%2fetc%2fpasswd"):
            response = s.client.get(f"/v1/workspaces/{s.key}/file", params={"path": path})
            reads[path] = response.status_code if "root:x:0" not in response.text else "LEAKED"
    finally:
        link.unlink()
    good_read = s.client.get(f"/v1/workspaces/{s.key}/file", params={"path": "README.md"}).status_code
    passed = all(c == 403 for c in codes.values()) and all(c in (400, 403, 404) for c in reads.values()) \
        and good_read == 200
    observed = ("register " + " ".join(f"{k}:{v}" for k, v in codes.items()) + "; read "
                + " ".join(f"{k.split('/')[-1] or k}:{v}" for k, v in reads.items()) + f"; README.md:{good_read}")
    return "register /,/etc,~ → 403; reads outside the root refused", observed, passed


def probe_2_mcp_reindex_root():
    from mcp import StdioServerParameters

    s = served()
    before = sorted(p.name for p in (s.data / "workspaces").iterdir())
    http = asyncio.run(mcp_calls(s.url + "/mcp", [("reindex", {"workspace": "/"}),
                                                  ("index_status", {"workspace": "/etc"})]))
    stdio_data = SCRATCH.folder / "data-mcp-stdio"
    params = StdioServerParameters(command=command("mcp")[0], args=[*command("mcp")[1:], "--data-dir", str(stdio_data)],
                                   cwd=str(ROOT), env=SCRATCH.env)
    from mcp.client.stdio import stdio_client

    with open(SCRATCH.folder / "mcp-stdio.log", "w") as errlog:
        stdio = asyncio.run(mcp_calls(stdio_client(params, errlog=errlog), [("reindex", {"workspace": "/"})]))
    after = sorted(p.name for p in (s.data / "workspaces").iterdir())
    indexed_nothing = before == after and not (stdio_data / "workspaces").exists()
    passed = all(err for err, _ in http + stdio) and indexed_nothing
    observed = (f"http: {'; '.join(first(t, 60) for _, t in http)} | stdio: {first(stdio[0][1], 60)} | "
                f"nothing indexed: {indexed_nothing}")
    return "MCP reindex '/' refused over HTTP and stdio, nothing indexed", observed, passed


def probe_3_dns_rebinding():
    s = served()
    forged = {"host": f"{EVIL}:{s.port}"}
    routes = [("GET", "/v1/health", None), ("GET", "/v1/workspaces", None),
              ("GET", f"/v1/workspaces/{s.key}/file?path=README.md", None),
              ("POST", f"/v1/workspaces/{s.key}/query", {"question": "add numbers"}),
              ("POST", "/v1/workspaces", {"path": str(s.workspace)}), ("POST", "/mcp", {})]
    codes = [s.client.request(m, p, json=b, headers=forged).status_code for m, p, b in routes]
    ok = s.client.get("/v1/health", headers={"host": f"localhost:{s.port}"}).status_code
    passed = all(c == 400 for c in codes) and ok == 200
    return (f"every route 400 for Host {EVIL}; localhost 200", f"forged Host: {codes}; localhost: {ok}", passed)


def probe_4_cross_site_post():
    s = served()
    path = f"/v1/workspaces/{s.key}/index"
    plain = s.client.post(path, content=b'{"full": true}', headers={"content-type": "text/plain"}).status_code
    form = s.client.post(path, content=b"full=true",
                         headers={"content-type": "application/x-www-form-urlencoded"}).status_code
    origin = s.client.post(path, json={"full": True}, headers={"origin": f"http://{EVIL}"}).status_code
    bodiless = s.client.post(path, headers={"origin": f"http://{EVIL}"}).status_code  # fetch(url, {method: "POST"})
    state = s.client.get(path).json()["state"]
    passed = plain == 415 and form == 415 and origin == 403 and bodiless == 403 and state == "idle"
    return ("text/plain and form POSTs 415, another Origin 403; no run started",
            f"text/plain {plain}, form {form}, Origin {origin}, bodiless with Origin {bodiless}; index state {state}",
            passed)


def probe_5_lost_store():
    workspace, data = SCRATCH.copy("sample", "lost-store")
    before = health(workspace, data)
    for folder in data.glob("workspaces/*/chroma"):
        shutil.rmtree(folder)
    q_code, _, q_err = ke("query", workspace, "add numbers", "--data-dir", data)
    damaged = health(workspace, data)
    i_code, i_out, i_err = ke("index", workspace, "--data-dir", data)
    after = health(workspace, data)
    q2_code, q2_out, _ = ke("query", workspace, "add numbers", "--data-dir", data)
    passed = (q_code == 1 and one_line(q_err) and damaged["state"] == "damaged" and i_code == 0
              and after["state"] == "ready" and after["chunks_embedded"] == after["chunks"] == before["chunks"]
              and q2_code == 0 and " 1. " in q2_out)
    observed = (f"query: exit {q_code} {first(q_err, 70)!r}; health {damaged['state']}: {damaged['message'][:60]!r}; "
                f"index exit {i_code} {first(i_out, 60)!r}; then {after['state']}, "
                f"{after.get('chunks_embedded')}/{after.get('chunks')} embedded (before {before['chunks']})")
    return "query one line, health damaged, index rebuilds, nothing lost", observed, passed


def probe_6_disk_full():
    workspace = SCRATCH.generated()  # 1,200 chunks overfill 2 MiB; resuming pytest took too long on a busy machine
    disk = SCRATCH.folder / "disk"
    disk.mkdir(exist_ok=True)
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True, text=True)
    if made.returncode:
        return "stop at the first ENOSPC", f"cannot mount a tmpfs here: {made.stderr.strip()}", False
    try:
        data = disk / "data"
        start = time.monotonic()
        code, _, err = ke("index", workspace, "--data-dir", data)
        seconds = time.monotonic() - start
        FIGURES["disk_full_run_s"] = round(seconds, 1)
        stopped = health(workspace, data)
        subprocess.run(["mount", "-o", "remount,size=300m", str(disk)], check=True)  # space freed
        r_code, r_out, r_err = ke("index", workspace, "--data-dir", data)
        after = health(workspace, data)
        passed = (code == 1 and one_line(err) and ("disk is full" in err or "No space" in err)
                  and stopped["state"] not in ("ready", "stale", "empty") and bool(stopped.get("last_error"))
                  and r_code == 0 and after["state"] == "ready"
                  and after["chunks_embedded"] == after["chunks"] > 0 and not after.get("last_error"))
        observed = (f"exit {code} after {seconds:.0f} s: {first(err, 80)!r}; next health {stopped['state']}, "
                    f"last_error {bool(stopped.get('last_error'))}; space freed, index exit {r_code}"
                    f"{'' if not r_code else ' ' + first(r_err, 60)}: {after['state']}, "
                    f"{after.get('chunks_embedded')}/{after.get('chunks')} embedded")
        return "one line at the first ENOSPC, health never ready, last_error kept; resume embeds all", observed, passed
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def probe_7_unreadable_root():
    workspace, data = SCRATCH.copy("sample", "unreadable")
    before = committed_files(data)
    workspace.chmod(0)
    try:
        code, out, err = ke("index", workspace, "--data-dir", data, preexec=drop_read_override)
        h_code, h_out, h_err = ke("health", workspace, "--data-dir", data, preexec=drop_read_override)
    finally:
        workspace.chmod(0o755)
    after = committed_files(data)
    passed = code == 1 and one_line(err) and "left as it is" in err and after == before and len(before) > 10
    return ("index exit 1, one line, nothing removed",
            f"exit {code} {first(err, 90)!r}; files {len(before)} → {len(after)}; health exit {h_code}", passed)


def garble(path: Path, offset: int = 0, size: int = 4096) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(os.urandom(min(size, max(0, path.stat().st_size - offset)) or size))


def garbled(targets):
    """A damage function: garble the files `targets(data)` lists (a .bin in its middle); what it damaged."""
    def damage(data: Path) -> list[str]:
        files = targets(data)
        for path in files:
            garble(path, *((0,) if path.suffix != ".bin" else (path.stat().st_size // 3,)))
        return [p.name for p in files]
    return damage


def corrupt_and_repair(name: str, label: str, damage, full_too: bool = True):
    """Damage the index with `damage(data)`; health must say damaged in a few lines, query one line, `index` (and `index
    --full` from a second garbling) repair it without deleting anything by hand."""
    observed, passed = [], True
    for how in (["index"], ["index", "--full"]) if full_too else (["index"],):
        workspace, data = SCRATCH.copy(name, f"{label}-{how[-1].strip('-')}")
        chunks = health(workspace, data)["chunks"]
        files = damage(data)
        h_code, h_out, h_err = ke("health", workspace, "--data-dir", data)
        q_code, _, q_err = ke("query", workspace, "add numbers", "--data-dir", data)
        i_code, i_out, i_err = ke(*how, workspace, "--data-dir", data)
        after = health(workspace, data)
        ok = (bool(files) and h_code in (0, 1) and "damaged" in h_out + h_err and "Traceback" not in h_out + h_err
              and len((h_out + h_err).strip().splitlines()) <= 12 and q_code in (0, 1)
              and (q_code == 0 or one_line(q_err)) and i_code == 0 and after["state"] == "ready"
              and after["chunks_embedded"] == after["chunks"] == chunks)
        passed &= ok
        said = next((line for line in (h_out + h_err).splitlines() if "damaged" in line), "")
        observed.append(f"{' '.join(how)}: health {said.strip()[:70]!r}; query exit {q_code}; "
                        f"{' '.join(how)} exit {i_code}{'' if not i_code else ' ' + first(i_err, 60)} → "
                        f"{after['state']} {after.get('chunks_embedded')}/{after.get('chunks')}")
    return "health damaged (few lines), query one line, index and index --full repair", " | ".join(observed), passed


def probe_8_corrupt_manifest():
    return corrupt_and_repair("sample", "manifest", garbled(lambda d: list(d.glob("workspaces/*/manifest.sqlite"))))


def probe_9_corrupt_chroma_sqlite():
    return corrupt_and_repair("sample", "chroma-sqlite",
                              garbled(lambda d: list(d.glob("workspaces/*/chroma/chroma.sqlite3"))))


def probe_10_corrupt_hnsw():
    def graph(data: Path) -> list[Path]:
        return [*data.glob("workspaces/*/chroma/*/data_level0.bin"), *data.glob("workspaces/*/chroma/*/link_lists.bin")]

    expected, observed, passed = corrupt_and_repair("generated", "hnsw", garbled(graph))
    # upper levels alone (link_lists.bin), the part the level-0 check does not read
    workspace, data = SCRATCH.copy("generated", "hnsw-upper")
    lists = list(data.glob("workspaces/*/chroma/*/link_lists.bin"))
    size = sum(p.stat().st_size for p in lists)  # before the repair replaces the store
    for path in lists:
        with open(path, "r+b") as f:
            f.write(b"\xff" * min(4096, path.stat().st_size))
    h_code, h_out, h_err = ke("health", workspace, "--data-dir", data)
    q_code, q_out, q_err = ke("query", workspace, "compute thing 3 4", "--data-dir", data)
    i_code, _, i_err = ke("index", workspace, "--data-dir", data)
    after = health(workspace, data)
    upper = (bool(lists) and h_code in (0, 1) and "damaged" in h_out + h_err and q_code in (0, 1)
             and (q_code == 0 or one_line(q_err)) and i_code == 0 and after["state"] == "ready")
    observed += (f" | link_lists.bin only ({size} bytes): health exit {h_code} "
                 f"{'damaged' if 'damaged' in h_out + h_err else first(h_out + h_err, 40)!r}; query exit {q_code}"
                 f"{' (signal)' if q_code < 0 else ''}; index exit {i_code} → {after['state']}")
    return expected, observed, passed and upper


def probe_11_corrupt_keywords():
    def keyword_files(data: Path) -> list[Path]:
        folder = next(data.glob("workspaces/*"))
        known = {"manifest.sqlite", "manifest.sqlite-wal", "manifest.sqlite-shm", "history.sqlite"}
        return [p for p in folder.rglob("*") if p.is_file() and "chroma" not in p.parts and p.name not in known
                and ("bm25" in str(p.relative_to(folder)).lower() or "keyword" in str(p.relative_to(folder)).lower())]

    def damage(data: Path) -> list[str]:
        files = keyword_files(data)
        if files:  # the bm25s files
            return garbled(keyword_files)(data)
        manifest = next(data.glob("workspaces/*/manifest.sqlite"))  # an FTS5 table in the catalogue
        with contextlib.closing(sqlite3.connect(manifest)) as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
            tables = [n for n in names if n.endswith("_data") and n[:-5] + "_idx" in names]  # FTS5 shadow tables
            for table in tables:
                db.execute(f"UPDATE {table} SET block = randomblob(length(block)) WHERE id > 10")
            db.commit()
        return tables

    return corrupt_and_repair("sample", "keywords", damage)


def probe_12_ctrl_c():
    workspace = SCRATCH.pytest()
    data = SCRATCH.folder / "data-ctrl-c"
    shutil.rmtree(data, ignore_errors=True)
    process = subprocess.Popen(command("index", str(workspace), "--data-dir", str(data)), cwd=ROOT, env=SCRATCH.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if not wait_until(lambda: committed_files(data) or process.poll() is not None, 900):
            return "stop within 5 s", "no file was committed in 900 s", False
        lines: list[tuple[float, str]] = []
        reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), line) for line in process.stderr))
        reader.start()
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        process.wait(timeout=120)
        stop = time.monotonic() - sent
        reader.join(timeout=10)
        err = "".join(line for _, line in lines)
    finally:
        if process.poll() is None:
            process.kill()
    FIGURES["sigint_stop_s"] = round(stop, 2)
    stopped_at = next((t for t, line in lines if line.startswith("Stopped")), None)
    if stopped_at is not None:  # the run itself, then the process's exit
        FIGURES["sigint_to_stopped_line_s"] = round(stopped_at - sent, 2)
    after = health(workspace, data)
    passed = (process.returncode == 130 and stop < 5 and len(err.strip().splitlines()) <= 2 and "Traceback" not in err
              and after["state"] in ("stale", "interrupted") and after["chunks_embedded"] == after["chunks"] > 0)
    observed = (f"exit {process.returncode} {stop:.2f} s after SIGINT: {' / '.join(err.strip().splitlines())[:90]!r}; "
                f"health {after['state']}: {after['files']} files, {after['chunks_embedded']}/{after['chunks']} "
                "chunks embedded (the rest is new, nothing damaged)")
    return "exit 130 within 5 s, the index consistent (stale or interrupted, not damaged)", observed, passed


def probe_13_big_rerank():
    from benchmarks.rerank_fairness import documents

    s = served()
    questions = ("save a note", "search notes by tag", "export notes as markdown", "remove a note by id")

    def timed(client, question) -> float:
        start = time.perf_counter()
        client.post(f"/v1/workspaces/{s.key}/query", json={"question": question, "use_cache": False}).raise_for_status()
        return time.perf_counter() - start

    alone = [timed(s.client, questions[i % 4]) for i in range(12)]
    body = {"query": "word5 token3", "documents": documents(200), "strategy": "keyword-boost"}
    outcome: dict = {}

    def rerank():
        start = time.perf_counter()
        with httpx.Client(base_url=s.url, timeout=900) as client:
            outcome["status"] = client.post("/v1/rerank", json=body).status_code
        outcome["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=rerank)
    worker.start()
    during = []
    while worker.is_alive():
        during.append(timed(s.client, questions[len(during) % 4]))
    worker.join()
    delay = max(during) - statistics.median(alone)
    FIGURES["rerank_200_s"] = round(outcome["seconds"], 1)
    FIGURES["query_p50_alone_ms"] = round(statistics.median(alone) * 1000, 1)
    FIGURES["query_worst_during_rerank_ms"] = round(max(during) * 1000, 1)
    FIGURES["worst_delay_ms"] = round(delay * 1000, 1)

    # a client that leaves: the server stops its rerank (the next one, which waits for it, answers at once)
    leaving = subprocess.Popen([sys.executable, "-c", (
        "import httpx, json, sys; httpx.post(sys.argv[1] + '/v1/rerank', json=json.loads(sys.stdin.read()), timeout=900)")
        , s.url], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    leaving.stdin.write(json.dumps(body))
    leaving.stdin.close()
    time.sleep(1.0)  # the rerank is under way
    leaving.kill()
    left = time.perf_counter()
    s.client.post("/v1/rerank", json={"query": "x", "documents": ["x"], "strategy": "keyword-boost"}).raise_for_status()
    after_leaving = time.perf_counter() - left
    FIGURES["rerank_after_client_left_s"] = round(after_leaving, 2)
    passed = outcome["status"] == 200 and delay < 1 and after_leaving < 0.5 * outcome["seconds"] + 1
    observed = (f"rerank {outcome['seconds']:.1f} s; {len(during)} queries during it, worst {max(during) * 1000:.0f} ms "
                f"vs p50 alone {statistics.median(alone) * 1000:.0f} ms (delay {delay * 1000:.0f} ms); "
                f"client killed → next rerank answered in {after_leaving:.2f} s")
    return "worst query delay < 1 s; a left client's rerank stops", observed, passed


def probe_14_kill_9_keyword_rebuild():
    workspace, data = SCRATCH.copy("generated", "kill-9")  # (pytest's first index took 25+ min on a busy machine)
    fresh = workspace / "zanzibar_quokka.py"
    fresh.write_text("def zanzibar_quokka_total(items):\n    '''Sum the quokkas of Zanzibar.'''\n    return sum(items)\n")
    try:
        process = subprocess.Popen(command("index", str(workspace), "--data-dir", str(data)), cwd=ROOT,
                                   env=SCRATCH.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen = wait_until(lambda: "zanzibar_quokka.py" in committed_files(data)
                          or process.poll() is not None, 600, 0.005)
        moment = "after the new file's commit (keyword rebuild under way)" if process.poll() is None else "too late"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        killed = health(workspace, data)
        code, out, err = ke("index", workspace, "--data-dir", data)
        after = health(workspace, data)
        q_code, q_out, _ = ke("query", workspace, "zanzibar quokka total", "--strategy", "hybrid", "--data-dir", data)
        top = next((line for line in q_out.splitlines() if line.strip().startswith("1.")), "")
    finally:
        fresh.unlink()
    # health's integrity check compares the keyword index with the catalogue in full: "ready" means the new
    # chunk is in it. (The hybrid query is shown, not judged: on this generated workspace of near-identical
    # functions it misses the odd one out even on a clean index, see the report of this probe.)
    passed = bool(seen) and process.returncode == -9 and code == 0 and after["state"] == "ready"
    observed = (f"killed {moment}; health then {killed['state']}: {killed.get('message', '')[:70]!r}; "
                f"index exit {code} {first(out, 70)!r}; then {after['state']}; hybrid top: "
                f"{next((w for w in top.split() if ':' in w and '.' in w), '(none)')}")
    return "health says the keyword index lacks the chunk; the next index heals it", observed, passed


def probe_15_non_utf8_question():
    workspace, data = SCRATCH.copy("sample", "utf8")
    done = subprocess.run([*command("query"), str(workspace).encode(), b"\xff\xfe add", b"--data-dir",
                           str(data).encode()], cwd=ROOT, env=SCRATCH.env, capture_output=True)
    err = done.stderr.decode(errors="replace")
    passed = done.returncode == 2 and one_line(err)
    return "one line, exit 2", f"exit {done.returncode}: {first(err, 100)!r}", passed


def probe_16_chroma_down():
    workspace = SCRATCH.sample()
    data, store = SCRATCH.folder / "data-chroma-down", SCRATCH.folder / "chroma-server"
    shutil.rmtree(data, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    port = free_port()
    with chroma_server(store, port) as (url, _):
        code, _, err = ke("index", workspace, "--data-dir", data, "--chroma-url", url)
        if code:
            return "one line while down, nothing lost", f"indexing through chroma run failed: {first(err)}", False
        chunks = health_via(workspace, data, url)
    q_code, _, q_err = ke("query", workspace, "add numbers", "--data-dir", data, "--chroma-url", url)
    i_code, _, i_err = ke("index", workspace, "--full", "--data-dir", data, "--chroma-url", url)
    h_code, h_out, h_err = ke("health", workspace, "--data-dir", data, "--chroma-url", url)
    down = next((line.strip() for line in (h_out + h_err).splitlines() if "Chroma" in line or "damaged" in line), "")
    with chroma_server(store, port):
        back_code, back_out, _ = ke("query", workspace, "add numbers", "--data-dir", data, "--chroma-url", url)
        back = health_via(workspace, data, url)
    passed = (q_code == 1 and one_line(q_err) and i_code == 1 and one_line(i_err) and "Traceback" not in h_out + h_err
              and back_code == 0 and " 1. " in back_out and back == chunks)
    observed = (f"query exit {q_code} {first(q_err, 60)!r}; index --full exit {i_code} ({len(i_err.strip().splitlines())} "
                f"line); health exit {h_code} {down[:60]!r}; server back: query exit {back_code}, chunks {chunks} → {back}")
    return "query and index one line each while down; all there once back", observed, passed


def health_via(workspace: Path, data: Path, url: str):
    code, out, _ = ke("health", workspace, "--json", "--data-dir", data, "--chroma-url", url)
    report = json.loads(out) if code == 0 else {}
    return report.get("chunks_embedded"), report.get("chunks")


def probe_17_malformed_paths():
    s = served()
    file = f"/v1/workspaces/{s.key}/file"
    codes = {
        "NUL in file path": s.client.get(file, params={"path": "a\x00b.py"}).status_code,
        "5,000-char path": s.client.get(file, params={"path": "a/" * 2500}).status_code,
        "300-byte name": s.client.get(file, params={"path": "x" * 300}).status_code,
        "NUL in workspace": s.client.post("/v1/workspaces", json={"path": str(s.workspace) + "\x00x"}).status_code,
        "NUL in path_glob": s.client.post(f"/v1/workspaces/{s.key}/query",
                                          json={"question": "add", "path_glob": "a\x00*"}).status_code,
    }
    passed = all(c == 400 for c in codes.values())
    return "400 for each, never 500", ", ".join(f"{k} {v}" for k, v in codes.items()), passed


def probe_18_limits_everywhere():
    s = served()
    big = "x" * 120_000
    rest = s.client.post(f"/v1/workspaces/{s.key}/query", json={"question": big}).status_code
    (mcp_error, mcp_text), = asyncio.run(mcp_calls(s.url + "/mcp", [("search", {"question": big,
                                                                               "workspace": str(s.workspace)})]))
    data = SCRATCH.folder / "data-cli-limits"
    cli = {}
    for label, extra in [("nan", ["--min-relevance", "nan"]), ("5", ["--min-relevance", "5"]),
                         ("-3", ["--min-relevance", "-3"]), ("klingon", ["--language", "klingon"]),
                         ("top-k 1000", ["--top-k", "1000"])]:
        code, _, err = ke("query", s.workspace, "add numbers", *extra, "--data-dir", data)
        cli[label] = (code, one_line(err))
    passed = rest == 422 and mcp_error and "2000" in mcp_text and all(c != 0 and o for c, o in cli.values())
    observed = (f"REST {rest}; MCP error {mcp_error} {first(mcp_text, 50)!r}; CLI "
                + ", ".join(f"{k}: exit {c}{'' if o else ' (not one line)'}" for k, (c, o) in cli.items()))
    return "120 KB question refused by REST and MCP; CLI refuses bad values in one line", observed, passed


# --- issue 31's probes: damage only with proof, nothing shared spreads corruption ---
def fill_disk(disk: Path, leave: int = 32 * 1024) -> Path:
    """Fill a file system with real bytes until `leave` bytes are free; returns the filler."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    size = stat.f_bavail * stat.f_frsize - leave
    with open(filler, "wb") as out:
        while size > 0:
            size -= out.write(b"\0" * min(size, 1 << 20))
    return filler


def whole(workspace: Path, data: Path, before: dict) -> tuple[bool, str]:
    """Nothing lost: health ready with every chunk of `before`, and a query answers."""
    after = health(workspace, data)
    q_code, q_out, _ = ke("query", workspace, "add numbers", "--data-dir", data)
    ok = (after.get("state") == "ready" and after.get("chunks") == before["chunks"]
          and after.get("chunks_embedded") == before["chunks"] and q_code == 0 and " 1. " in q_out)
    return ok, f"{after.get('state')} {after.get('chunks_embedded')}/{after.get('chunks')} (before {before['chunks']})"


def unavailable_not_damaged(h_code: int, h_out: str, i_code: int, i_err: str) -> bool:
    return (h_code == 0 and "unavailable: " in h_out and "damaged" not in h_out
            and i_code == 1 and one_line(i_err) and "damaged" not in i_err)


def state_line(out: str, *words: str) -> str:
    return next((line.strip() for line in out.splitlines() if any(w in line for w in words)), first(out))


def probe_19_disk_nearly_full():
    workspace = SCRATCH.sample()
    disk = SCRATCH.folder / "disk-31"
    disk.mkdir(exist_ok=True)
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], capture_output=True, text=True)
    if made.returncode:
        return "unavailable, nothing lost", f"cannot mount a tmpfs here: {made.stderr.strip()}", False
    try:
        data = disk / "data"
        shutil.copytree(SCRATCH.indexed("sample"), data,
                        ignore=shutil.ignore_patterns("owner.lock", "owner.json", "logs"))
        before = health(workspace, data)
        filler = fill_disk(disk)
        h_code, h_out, _ = ke("health", workspace, "--data-dir", data)
        i_code, _, i_err = ke("index", workspace, "--data-dir", data)
        filler.unlink()
        ok, after = whole(workspace, data, before)
    finally:
        subprocess.run(["umount", "-l", str(disk)])
    passed = unavailable_not_damaged(h_code, h_out, i_code, i_err) and ok
    return ("32 KB free: health unavailable (not damaged), index one line, nothing lost",
            f"health {state_line(h_out, 'unavailable', 'damaged')[:70]!r}; index exit {i_code} {first(i_err, 60)!r}; "
            f"space back: {after}", passed)


def probe_20_too_many_open_files():
    import resource

    workspace, data = SCRATCH.copy("sample", "nofile")
    before = health(workspace, data)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))

    h_code, h_out, _ = ke("health", workspace, "--data-dir", data, preexec=limit)
    i_code, _, i_err = ke("index", workspace, "--data-dir", data, preexec=limit)
    ok, after = whole(workspace, data, before)
    passed = unavailable_not_damaged(h_code, h_out, i_code, i_err) and ok
    return ("ulimit -n 24: health unavailable, index one line, nothing lost",
            f"health {state_line(h_out, 'unavailable', 'damaged')[:70]!r}; index exit {i_code} {first(i_err, 60)!r}; "
            f"limit lifted: {after}", passed)


def rewrite_cache_rows(cache: Path, rows: int) -> int:
    """Give `rows` rows of the shared vector cache another row's vector (SQLite's integrity check stays ok)."""
    db = sqlite3.connect(cache)
    try:
        found = db.execute("SELECT id, vector FROM vectors ORDER BY id LIMIT ?", (rows,)).fetchall()
        for (rowid, _), (_, other) in zip(found, found[1:] + found[:1]):
            db.execute("UPDATE vectors SET vector = ? WHERE id = ?", (other, rowid))
        db.commit()
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        db.close()
    return len(found)


def probe_21_cache_rows_rewritten():
    workspace, data = SCRATCH.copy("sample", "cache-rows")
    clone = SCRATCH.folder / "roots-31" / "clone"
    shutil.rmtree(clone, ignore_errors=True)
    shutil.copytree(workspace, clone)
    rewritten = rewrite_cache_rows(data / "vector-cache.sqlite", 32)
    code, out, _ = ke("index", clone, "--data-dir", data)
    after = health(clone, data)
    q_code, q_out, _ = ke("query", clone, "add numbers", "--strategy", "none", "--data-dir", data)
    f_code, _, _ = ke("index", workspace, "--full", "--data-dir", data)
    q2_code, q2_out, _ = ke("query", workspace, "add numbers", "--strategy", "none", "--data-dir", data)
    passed = (rewritten == 32 and code == 0 and "repaired" in out.lower() and after.get("state") == "ready" and q_code == 0
              and " 1. " in q_out and f_code == 0 and q2_code == 0 and " 1. " in q2_out)
    return ("rewritten rows dropped and embedded again; the clone and index --full answer",
            f"{rewritten} rows rewritten; clone index exit {code} {state_line(out, 'Repaired', 'repaired')[:100]!r}; clone "
            f"{after.get('state')}, query {'answers' if ' 1. ' in q_out else 'EMPTY'}; index --full exit {f_code}, "
            f"query {'answers' if ' 1. ' in q2_out else 'EMPTY'}", passed)


def probe_22_empty_store_folder():
    workspace, data = SCRATCH.copy("sample", "empty-store")
    other = SCRATCH.folder / "roots-31" / "other"
    shutil.rmtree(other, ignore_errors=True)
    shutil.copytree(workspace, other)
    ke("index", other, "--data-dir", data)
    for folder in data.glob("workspaces/sample-*/chroma"):
        shutil.rmtree(folder)
        folder.mkdir()  # present but empty
    code, out, err = ke("query", workspace, "add numbers", "--data-dir", data)
    noted = (code == 1 and one_line(err)) or (code == 0 and "warning:" in out)
    m_code, m_out, m_err = ke("query", workspace, "add numbers", "--workspace", other, "--data-dir", data)
    m_noted = (m_code == 0 and "warning, " in m_out) or (m_code == 1 and one_line(m_err))
    passed = noted and m_noted and "Traceback" not in out + err + m_err
    return ("not a silent empty answer: a warning (or one-line error), per workspace in a multi answer",
            f"query exit {code} {state_line(out + err, 'warning', 'error')[:70]!r}; multi exit {m_code} "
            f"{state_line(m_out + m_err, 'warning', 'error')[:70]!r}", passed)


def probe_23_bad_reranker_config():
    s = served()
    config = f"/v1/workspaces/{s.key}/reranking/config"
    bad = {name: s.client.put(config, json={"strategy": "cross-encoder", "model_name": value}).status_code
           for name, value in [("NUL", "/tmp/m\x00x"), ("300-byte name", "/tmp/" + "m" * 300),
                               ("no such model", "/nowhere/model")]}
    strategies = s.client.get("/v1/strategies").status_code
    (mcp_error, _), = asyncio.run(mcp_calls(s.url + "/mcp", [("list_strategies", {})]))
    query = s.client.post(f"/v1/workspaces/{s.key}/query",
                          json={"question": "add numbers", "strategy": "cross-encoder"}).status_code
    undo = s.client.put(config, json={"strategy": "cross-encoder"}).status_code
    passed = (all(c == 400 for c in bad.values()) and strategies == 200 and not mcp_error and query == 200
              and undo == 200)
    return ("a model the server cannot read refused (400); strategies, MCP, queries answer; undo works",
            f"PUT {', '.join(f'{k} {v}' for k, v in bad.items())}; /v1/strategies {strategies}; MCP list_strategies "
            f"{'error' if mcp_error else 'ok'}; query {query}; undo PUT {undo}", passed)


def probe_24_reads_widen_allow_list():
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    s = served()
    outside = SCRATCH.folder / "roots-31"
    looked, asked = outside / "srv", outside / "home"
    for folder in (looked, asked):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "secret.py").write_text("TOKEN = 'do not serve'\n")
    h_code, h_out, h_err = ke("health", looked, "--data-dir", s.data)  # warm: through the server owning s.data
    params = StdioServerParameters(command=command("mcp")[0], args=[*command("mcp")[1:], "--data-dir", str(s.data)],
                                   cwd=str(ROOT), env=SCRATCH.env)
    with open(SCRATCH.folder / "mcp-stdio-31.log", "w") as errlog:
        (_, status), = asyncio.run(mcp_calls(stdio_client(params, errlog=errlog),
                                             [("index_status", {"workspace": str(asked)})]))
    codes = {folder.name: s.client.post("/v1/workspaces", json={"path": str(folder)}).status_code
             for folder in (looked, asked)}
    passed = all(c == 403 for c in codes.values()) and h_code == 0 and "Traceback" not in h_err
    return ("health (warm CLI) and MCP stdio index_status add nothing: REST registration 403",
            f"health exit {h_code} {state_line(h_out, 'not open')[:60]!r}; index_status {first(status, 50)!r}; "
            "then POST /v1/workspaces " + ", ".join(f"{k} {v}" for k, v in codes.items()), passed)


LOCK_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


def probe_25_locked_chroma_sqlite():
    workspace, data = SCRATCH.copy("sample", "locked")
    before = health(workspace, data)
    target = next(data.glob("workspaces/*/chroma/chroma.sqlite3"))
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(target)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        holder.stdout.readline()
        start = time.monotonic()
        h_code, h_out, _ = ke("health", workspace, "--data-dir", data, timeout=140)
        h_s = time.monotonic() - start
        start = time.monotonic()
        i_code, _, i_err = ke("index", workspace, "--data-dir", data, timeout=140)
        i_s = time.monotonic() - start
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    FIGURES["busy_health_s"], FIGURES["busy_index_s"] = round(h_s, 1), round(i_s, 1)
    held = f"held by pid {holder.pid}"
    ok, after = whole(workspace, data, before)
    passed = (h_code == 0 and "busy: " in h_out and held in h_out and i_code == 1 and one_line(i_err)
              and "busy: " in i_err and held in i_err and h_s < 30 and i_s < 30 and ok)
    return ("busy: … (held by pid N) within seconds, nothing lost",
            f"health {h_s:.1f} s {state_line(h_out, 'busy')[:60]!r}; index {i_s:.1f} s exit {i_code} "
            f"{first(i_err, 60)!r}; released: {after}", passed)


def probe_26_symlink_to_passwd():
    results, before = [], None
    for how in ([], ["--full"]):
        workspace, data = SCRATCH.copy("sample", f"passwd-link{'-full' if how else ''}")
        before = health(workspace, data)
        victim = workspace / "notes" / "store.py"
        saved = victim.read_bytes()
        victim.unlink()
        victim.symlink_to("/etc/passwd")
        try:
            code, _, _ = ke("index", workspace, *how, "--data-dir", data)
            after = health(workspace, data)
        finally:
            victim.unlink()
            victim.write_bytes(saved)
        gone = "notes/store.py" not in committed_files(data)
        results.append((" ".join(["index", *how]), code, after.get("state"), after.get("chunks"), gone))
    passed = all(code == 0 and state == "ready" and chunks < before["chunks"] and gone
                 for _, code, state, chunks, gone in results)
    return ("its old chunks leave the index (index and index --full); health not stale",
            "; ".join(f"{how}: exit {code}, health {state}, {chunks} chunks (before {before['chunks']}), "
                      f"old chunks {'gone' if gone else 'KEPT'}" for how, code, state, chunks, gone in results), passed)


TITLE_NAME = "title\x1b]0;pwned\x07.py"  # an OSC sequence: sets the terminal's title
FAKE_NAME = "fake\n  1.   0.999 (orig 0.999, was      1)  passwords.py:1-9  function steal.py"


def probe_27_escape_sequences_in_names():
    workspace = SCRATCH.folder / "roots-31" / "names"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    for name in (TITLE_NAME, FAKE_NAME):
        (workspace / name).write_text("def zanzibar_quokka(items):\n    return len(items)  # count the quokkas\n")
    data = SCRATCH.folder / "data-names"
    shutil.rmtree(data, ignore_errors=True)
    ke("index", workspace, "--data-dir", data)
    outputs = {name: ke(*args, "--data-dir", data) for name, args in [
        ("query", ("query", workspace, "count the quokkas")), ("goto", ("goto", workspace, "zanzibar_quokka")),
        ("files", ("query", workspace, "count the quokkas", "--files")), ("health", ("health", workspace))]}
    raw = {name: "\x1b" in out or "\x07" in out or any(line.startswith("  1.   0.999") for line in out.splitlines())
           for name, (_, out, _) in outputs.items()}
    escaped = "title\\x1b]0;pwned\\x07.py" in outputs["query"][1]
    passed = not any(raw.values()) and escaped and all(code == 0 for code, _, _ in outputs.values())
    return ("control characters escaped: no terminal title set, no fake result line",
            ", ".join(f"{k}: exit {outputs[k][0]}, {'RAW' if v else 'escaped'}" for k, v in raw.items())
            + ("; shown as title\\x1b]0;pwned\\x07.py" if escaped else ""), passed)


def probe_28_same_validation_everywhere():
    s = served()
    files = s.client.post(f"/v1/workspaces/{s.key}/files", json={"question": "add", "languages": ["klingon"]})
    query = s.client.post(f"/v1/workspaces/{s.key}/query", json={"question": "add", "languages": ["klingon"]})
    labels = {name: s.client.put(f"/v1/workspaces/{s.key}/labels", json={"question": "add", "path": path}).status_code
              for name, path in [("NUL", "a\x00b.py"), ("..", "../../etc/passwd"), ("900 KB", "a/" * 450_000)]}
    reads = {name: s.client.get(f"/v1/workspaces/{s.key}/file", params={"path": path}).status_code
             for name, path in [("NUL", "a\x00b.py"), ("..", "../../etc/passwd")]}
    stored = s.client.get(f"/v1/workspaces/{s.key}/labels", params={"question": "add"}).json().get("labels")
    passed = (files.status_code == query.status_code == 400 and all(c == 400 for c in labels.values())
              and all(c == 400 for c in reads.values()) and stored == [])
    return ("REST files and labels refuse what /query, MCP and file?path= refuse (400), nothing stored",
            f"files klingon {files.status_code} (query {query.status_code}); labels "
            + ", ".join(f"{k} {v}" for k, v in labels.items()) + "; file?path= "
            + ", ".join(f"{k} {v}" for k, v in reads.items()) + f"; labels stored: {len(stored or [])}", passed)


def probe_29_exit_codes_as_documented():
    readme = (ROOT / "README.md").read_text()
    documented = next((int(line.split("|")[1]) for line in readme.splitlines()
                       if line.startswith("| 2 |") and "command line is wrong" in line), None)
    data = SCRATCH.folder / "data-argv"
    runs = {" ".join(a): ke(*a, "--data-dir", data)
            for a in (["query"], ["query", ".", "q", "--top-k", "many"], ["index", "--bogus", "."],
                      ["query", ".", "q", "--top-k", "0"])}
    passed = documented == 2 and all(code == 2 and one_line(err) and err.startswith("error: ")
                                     for code, _, err in runs.values())
    return ("argument errors exit as README's table says (2), one line",
            f"README: {documented}; " + ", ".join(f"{k!r}: exit {c}{'' if one_line(e) else ' (not one line)'}"
                                                   for k, (c, _, e) in runs.items()), passed)


PROBES = [probe_1_any_file_readable, probe_2_mcp_reindex_root, probe_3_dns_rebinding, probe_4_cross_site_post,
          probe_5_lost_store, probe_6_disk_full, probe_7_unreadable_root, probe_8_corrupt_manifest,
          probe_9_corrupt_chroma_sqlite, probe_10_corrupt_hnsw, probe_11_corrupt_keywords, probe_12_ctrl_c,
          probe_13_big_rerank, probe_14_kill_9_keyword_rebuild, probe_15_non_utf8_question, probe_16_chroma_down,
          probe_17_malformed_paths, probe_18_limits_everywhere,
          probe_19_disk_nearly_full, probe_20_too_many_open_files, probe_21_cache_rows_rewritten,
          probe_22_empty_store_folder, probe_23_bad_reranker_config, probe_24_reads_widen_allow_list,
          probe_25_locked_chroma_sqlite, probe_26_symlink_to_passwd, probe_27_escape_sequences_in_names,
          probe_28_same_validation_everywhere, probe_29_exit_codes_as_documented]


def title(probe) -> str:
    number, _, name = probe.__name__.removeprefix("probe_").partition("_")
    return f"{number:>2} {name.replace('_', ' ')}"


def merged(rows: list[dict]) -> tuple[list[dict], dict]:
    """This run's rows over the newest recorded run's, in probe order; figures likewise."""
    from benchmarks.record import RESULTS

    newest = sorted(RESULTS.glob("probes-*.json"))
    old = json.loads(newest[-1].read_text())["figures"] if newest else {}
    by_probe = {r["probe"].strip(): r for r in old.get("rows", [])} | {r["probe"].strip(): r for r in rows}
    order = [title(p).strip() for p in PROBES]
    figures = {k: v for k, v in old.items() if k != "rows"} | FIGURES
    return sorted(by_probe.values(), key=lambda r: order.index(r["probe"].strip())), figures


def main() -> int:
    global SCRATCH
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="probe numbers, e.g. 1,5,12 (default: all)")
    parser.add_argument("--scratch", default="", help="work folder (kept; reused indexes make a rerun faster)")
    parser.add_argument("--pytest-tar", default=str(PYTEST_TAR))
    args = parser.parse_args()
    wanted = {int(n) for n in args.only.split(",") if n.strip()}
    folder = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="ke-probes-"))
    SCRATCH = Scratch(folder, Path(args.pytest_tar))
    rows = []
    try:
        for number, probe in enumerate(PROBES, 1):
            if wanted and number not in wanted:
                continue
            start = time.monotonic()
            try:
                expected, observed, passed = probe()
            except Exception as error:  # a probe that cannot run is a failure, said in one line
                expected, observed, passed = "(the probe ran)", f"{type(error).__name__}: {error}"[:200], False
            verdict = "PASS" if passed else "FAIL"
            rows.append({"probe": title(probe), "expected": expected, "observed": observed, "result": verdict,
                         "seconds": round(time.monotonic() - start, 1)})
            print(f"{title(probe)} | expected: {expected} | observed: {observed} | {verdict}", flush=True)
    finally:
        for s in _SERVED:
            s.close()
        if not args.scratch:
            shutil.rmtree(folder, ignore_errors=True)
    for name, value in FIGURES.items():
        print(f"{name}: {value}")
    if wanted:  # a partial run: keep the newest record's other probes and figures
        rows, figures = merged(rows)
    else:
        figures = FIGURES
    record("probes", [{k: r[k] for k in ("probe", "expected", "observed", "result")} for r in rows],
           figures={"rows": rows, **figures},
           settings={"probes": sorted(wanted) or "all"}, uses_percentiles=False,
           note="issue 20's probes (1-18) and issue 31's (19-29), end to end with real processes")
    return 0 if all(r["result"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
