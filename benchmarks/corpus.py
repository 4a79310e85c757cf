"""Big workspaces of real code for the scale benchmarks, and a labelled stand-in encoder.

`build_corpus(folder, chunks)` fills `folder` with the pytest and Sphinx snapshots
(shared/benchmarks/swe/*/snapshot.tar.gz), then whole packages of this project's virtual environment
(its site-packages, Python and other text files only, no compiled files), in name order, until about
`chunks` chunks; when the packages run out, they are copied again under copy2/, copy3/, ..., one at a time
until there are enough (said in
the result). Chunks are counted by the project's own scan and chunker (`count=True`), or estimated from
bytes (the real count is the index's).

`StandInEmbedder`: unit vectors from a hash of each text, no model. Every figure made with it says so;
it stands in only for the encoder, every other part of indexing runs for real.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.encoders.embedder import Embedder  # noqa: E402

SHARED = Path("/work/shared/benchmarks/swe")
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
        subprocess.run(["tar", "-xzf", str(SHARED / name / "snapshot.tar.gz"), "-C", str(target)], check=True)
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
