"""The benchmarks' shared helpers: where their data lives, recording figures, the labelled sets, a stand-in encoder.

Data. The labelled sets (SWE issues with their repositories' history bundles and snapshots, CoSQA, the nav sets)
are read from `../shared/benchmarks/` beside the checkout (SHARED). What the scripts make of them (snapshot
checkouts, indexes, big corpora) lives under one folder: `--data DIR`, else $KE_BENCH_DATA, else the user cache
dir's `knowledge-explorer/benchmarks`. When something is missing, a script stops with one line saying what to
fetch or unpack, and where.

Recording. Every benchmark calls `record(...)` once at the end: benchmarks/results/<name>-<YYYY-MM-DD>.json, the
figures and what they depend on (the commit and whether the tree had changes, the machine's load and cores, the
settings used, how percentiles were computed); `benchmarks/report.py` turns the newest file of each benchmark
into the tables of the READMEs.

`build_corpus(folder, chunks)` fills `folder` with the pytest and Sphinx snapshots, then whole packages of this
project's virtual environment (its site-packages, Python and other text files only), in name order, until about
`chunks` chunks; when the packages run out, they are copied again under copy2/, copy3/, ..., one at a time until
there are enough (said in the result). Chunks are counted by the project's own scan and chunker (`count=True`),
or estimated from bytes.

`StandInEmbedder`: unit vectors from a hash of each text, no model. Every figure made with it says so; it
stands in only for the encoder, every other part of indexing runs for real.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import platformdirs

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from services.encoders.embedder import Embedder  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SHARED = next((p for p in (ROOT.parent / "shared" / "benchmarks", ROOT / "shared" / "benchmarks") if p.exists()),
              ROOT.parent / "shared" / "benchmarks")  # beside the checkout, or inside a copy of it
DATA_ENV = "KE_BENCH_DATA"
README_HINT = "(see benchmarks/README.md)"


# --- where the data lives ---
def data_root(flag: Path | str | None = None) -> Path:
    """The benchmarks' working folder: `--data` when given, else $KE_BENCH_DATA, else the user cache dir's."""
    chosen = flag or os.environ.get(DATA_ENV) or platformdirs.user_cache_path("knowledge-explorer") / "benchmarks"
    return Path(chosen).expanduser()


def missing(what: str, fix: str) -> SystemExit:
    """The one-line stop of a script whose data is not there: what is missing, and what to do."""
    return SystemExit(f"{what}: {fix} {README_HINT}")


def shared(*parts: str) -> Path:
    """A file or folder of the labelled sets (../shared/benchmarks/...); stops in one line when absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        raise missing(f"no {'/'.join(parts)} under {SHARED}",
                      "put the project's shared/benchmarks folder beside the checkout")
    return path


def swe_snapshot(repo: str, data: Path | None = None) -> Path:
    """<data>/swe/<repo>: the SWE snapshot of `repo` (its history up to the issues' snapshot, with its work tree),
    cloned from ../shared/benchmarks/swe/<repo>/history.bundle when missing."""
    folder = data_root(data) / "swe" / repo
    if folder.exists():
        return folder
    bundle = SHARED / "swe" / repo / "history.bundle"
    if not bundle.exists():
        raise missing(f"no SWE snapshot under {folder.parent}",
                      f"clone ../shared/benchmarks/swe/{repo}/history.bundle (branch snapshot) to {folder}")
    folder.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "-b", "snapshot", str(bundle), str(folder)], check=True)
    return folder


def judged(queries, qrels):
    """The queries with a relevant document (as `eval` keeps them)."""
    return [q for q in queries if any(g > 0 for g in qrels.get(q.id, {}).values())]


def sample_queries(workspace: Path, data_dir: Path, count: int) -> list[str]:
    """First sentences of docstrings: the kind of question a developer types."""
    from services.storage.workspace_index import WorkspaceIndex, workspace_root  # opens Chroma: only when asked

    index = WorkspaceIndex(workspace_root(workspace), data_dir)
    chunks = index.catalog().chunks()
    index.close()
    sentences = {c.docstring.split(".")[0].strip() for c in chunks if c.kind in ("function", "method", "class")}
    pool = sorted(s for s in sentences if 4 <= len(s.split()) <= 14)
    return random.Random(0).sample(pool, min(count, len(pool)))


# --- recording ---
PERCENTILE = ("pXX = linear interpolation between the two closest ranks of the sorted values "
              "(statistics.quantiles(values, n=100, method='inclusive'), numpy's default)")


def percentile(values: list[float], q: int) -> float:
    """The q-th percentile (1..99) as PERCENTILE defines it; the value itself for one value."""
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def commit() -> str:
    """HEAD's hash, with "+changes" when the work tree differs from it; "unknown" outside git.
    KE_RECORD_COMMIT names it where the tree travelled without its history (a GPU machine's copy)."""
    if os.environ.get("KE_RECORD_COMMIT"):
        return os.environ["KE_RECORD_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


STARTED_AT = commit()  # the code the run starts with (the tree may change while a long run goes on)


def engine_settings(settings=None) -> dict:
    """The engine's settings as plain values (Settings() when none given)."""
    if settings is None:
        from services.core.settings import Settings
        settings = Settings()
    if hasattr(settings, "model_dump"):
        return settings.model_dump(mode="json")
    import dataclasses
    return json.loads(json.dumps(dataclasses.asdict(settings), default=str))


PLATFORM = platform.platform()  # read once: it runs `uname -p`, and recording a run starts no process


def machine() -> dict:
    return {"loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()], "nproc": os.cpu_count(),
            "platform": PLATFORM, "python": platform.python_version()}


def portable(value):
    """Paths inside the repository as relative paths, so that results read the same on any checkout."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith(str(ROOT) + os.sep):
        return os.path.relpath(value, ROOT)
    return value


def record(name: str, table: list[dict], *, settings: dict, figures: dict | None = None,
           uses_percentiles: bool = True, note: str = "", folder: Path = RESULTS) -> Path:
    """Write the results of benchmark `name`: `table` (rows of column -> value, shown in the README),
    `figures` (anything else worth keeping) and the `settings` the run used. Returns the file."""
    now = dt.datetime.now(dt.timezone.utc)
    data = {
        "benchmark": name, "measured_at": now.isoformat(timespec="seconds"), "commit": STARTED_AT,
        "machine": machine(), "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "settings": portable(settings), "percentile": PERCENTILE if uses_percentiles else None,
        "note": note, "table": portable(table), "figures": figures or {},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{now.date().isoformat()}.json"
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"recorded {portable(str(path))}")
    return path


# --- big corpora and a stand-in encoder ---
SNAPSHOTS = ("pytest", "sphinx")
BYTES_PER_CHUNK = 850  # about, for these packages (20,079 estimated at 1,400 gave 33,193 chunks)
SKIPPED_SUFFIXES = {".so", ".pyc", ".pyd", ".dll", ".dylib", ".a", ".o", ".bin", ".pt", ".onnx", ".whl", ".zip",
                    ".gz", ".png", ".jpg", ".npz", ".npy", ".pkl", ".h5", ".ttf", ".woff", ".woff2", ".ico"}
STAND_IN = "stand-in-hash-vectors"


class StandInEmbedder(Embedder):
    """Unit vectors from a hash of the text (no model): for the stages the encoder does not touch."""

    def __init__(self, dimension: int = 384) -> None:
        super().__init__(STAND_IN)
        self._dimension = dimension

    def load(self):
        return self

    name = "stand-in"
    device = "cpu"
    call_size = 32  # texts per call the indexer hands it (it is its own encoder: Embedder.call_size would load one)
    calls_at_once = 1

    @property
    def backend_used(self) -> str:
        return "stand-in"

    @property
    def device_used(self) -> str:
        return "cpu"

    @property
    def note(self) -> str:
        return "stand-in encoder (hash vectors) for a benchmark"

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector_space(self) -> str:  # its own space in the shared vector cache
        return f"stand-in-blake2b-{self._dimension}"

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        seeds = [int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little") for t in texts]
        vectors = np.stack([np.random.default_rng(s).standard_normal(self._dimension) for s in seeds])
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-9)).astype(np.float32)


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def _ignore(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__" or Path(n).suffix.lower() in SKIPPED_SUFFIXES}


def _count_chunks(folder: Path) -> int:
    from services.core.settings import Settings
    from services.indexing.chunking import chunk_file
    from services.indexing.scanning import SkipFileError, read_source, scan_workspace

    settings, total = Settings(), 0
    for source in scan_workspace(folder, settings.max_file_bytes, settings.skip_machine_made).files:
        try:
            text, digest = read_source(source, settings.skip_machine_made)
        except (SkipFileError, OSError):
            continue
        total += len(chunk_file(source.path, text, source.language, digest, settings))
    return total


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _kept_bytes(package: Path) -> int:
    """The bytes of a package's files that a copy keeps (by their names; the scan may skip more)."""
    return sum(p.stat().st_size for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and p.suffix.lower() not in SKIPPED_SUFFIXES)


def build_corpus(folder: Path, chunks: int, count: bool = True) -> dict:
    """Fill an empty `folder` with about `chunks` chunks of real code; returns what went in."""
    folder.mkdir(parents=True, exist_ok=True)
    measure = _count_chunks if count else (lambda path: _bytes(path) // BYTES_PER_CHUNK)
    parts, total, sizes = [], 0, {}
    for name in SNAPSHOTS:
        target = folder / name
        target.mkdir()
        subprocess.run(["tar", "-xzf", str(shared("swe", name, "snapshot.tar.gz")), "-C", str(target)], check=True)
        sizes[target] = measure(target)
        total += sizes[target]
        parts.append(f"{name} snapshot")
    packages = sorted(p for p in site_packages().iterdir() if p.is_dir() and not p.name.endswith(".dist-info")
                      and p.name not in ("__pycache__",))
    for package in packages:
        if total >= chunks:
            break
        if total + _kept_bytes(package) // BYTES_PER_CHUNK > chunks * 1.1:
            continue  # it would overshoot: a smaller package later fits better
        target = folder / "site" / package.name
        shutil.copytree(package, target, ignore=_ignore, symlinks=False, ignore_dangling_symlinks=True)
        sizes[target] = measure(target)
        total += sizes[target]
        parts.append(package.name)
    copies, copied = 1, 0
    while total < chunks and any(sizes.values()):  # copies of the snapshots and packages until there are enough
        copies += 1
        for item, size in sizes.items():
            if total >= chunks:
                break
            shutil.copytree(item, folder / f"copy{copies}" / item.relative_to(folder), symlinks=False)
            total, copied = total + size, copied + 1
    return {"chunks": total, "counted": count, "copies": copies, "parts": len(parts),
            "sources": ", ".join(parts[:2]) + f" and {len(parts) - 2} site-packages packages"
                       + (f", copied again under copyN/ ({copied} copies of them)" if copies > 1 else "")}
