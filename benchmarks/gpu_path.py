"""The encoder's fast path against the bare model, on whatever device runs it (a GPU when torch sees one).

Chunks of real code (this repository's Python and Markdown, chunked as the indexer chunks them; or
WORKSPACE) are embedded three ways, each after a warm-up batch:
  bare model   plain sentence-transformers `encode` (fp32, its default batch of 32) on the device
  project      services.encoders.Embedder with --backend torch --device auto: on CUDA fp16 (probe-checked),
               batches sized to free memory, tokenization overlapped; elsewhere sentence-transformers' encode
  pipelined    the CUDA path's encode (producer thread tokenizing ahead) at the project's batch, on this
               device: on a CPU it shows what the overlap alone is worth
It prints chunks/s, the ratio to the bare model, and the smallest cosine between the project's vectors and
the bare model's. Records JSON with benchmarks/lib.py.

    python benchmarks/gpu_path.py [WORKSPACE] [--limit N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.lib import record  # noqa: E402
from services.encoders.device import choose_device  # noqa: E402
from services.encoders.embedder import Embedder, bundled_model_path, chunk_text  # noqa: E402
from services.encoders.torch_backend import encode_pipelined  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WARM_UP = 64


def code_texts(workspace: Path, limit: int) -> list[str]:
    """What the model sees for the workspace's chunks (Python, Markdown), up to `limit`."""
    from services.core.settings import Settings
    from services.indexing.chunking import chunk_file

    settings, texts = Settings(), []
    for path in sorted(workspace.rglob("*")):
        if path.suffix not in (".py", ".md") or ".venv" in path.parts or not path.is_file():
            continue
        language = "python" if path.suffix == ".py" else "markdown"
        text = path.read_text(errors="replace")
        relative = str(path.relative_to(workspace))
        texts += [chunk_text(c) for c in chunk_file(relative, text, language, "", settings)]
        if len(texts) >= limit:
            break
    return texts[:limit]


def rate(encode, texts: list[str], warm_up: int = WARM_UP) -> tuple[float, np.ndarray]:
    encode(texts[:warm_up])
    started = time.perf_counter()
    vectors = encode(texts)
    return len(texts) / (time.perf_counter() - started), np.asarray(vectors, dtype=np.float32)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", nargs="?", default=str(REPO))
    parser.add_argument("--limit", type=int, default=None, help="chunks to embed (default 1,000 on a CPU, 20,000 on a GPU)")
    parser.add_argument("--texts", type=Path, help="the chunks' texts, a gzipped JSON list written by --save-texts "
                                                   "(for a GPU machine without the chunker's packages)")
    parser.add_argument("--save-texts", type=Path, help="write the workspace's chunk texts there and stop")
    args = parser.parse_args()
    if args.save_texts:
        args.save_texts.write_bytes(gzip.compress(json.dumps(code_texts(Path(args.workspace), args.limit or 20_000)).encode()))
        return 0
    from sentence_transformers import SentenceTransformer

    device, _ = choose_device("auto")
    limit = args.limit or (1_000 if device == "cpu" else 20_000)
    texts = json.loads(gzip.decompress(args.texts.read_bytes()))[:limit] if args.texts else code_texts(Path(args.workspace), limit)
    model = SentenceTransformer(str(bundled_model_path()), device=device, local_files_only=True)
    model.max_seq_length = 256
    # On a GPU every batch shape runs slowly once (kernels picked and compiled): the warm-up is a whole
    # pass, or the path timed first pays it (measured on an H100: 1,726 chunks/s first, 2,966-3,350 after)
    warm_up = WARM_UP if device == "cpu" else len(texts)
    bare, reference = rate(lambda t: model.encode(t, normalize_embeddings=True, show_progress_bar=False), texts, warm_up)
    embedder = Embedder("all-MiniLM-L6-v2", 256, 32, role="benchmark", backend="torch", device="auto")
    encoder = embedder.load()
    project, vectors = rate(embedder.encode, texts, warm_up)
    pipelined, _ = rate(lambda t: encode_pipelined(encoder.model, t, encoder.batch_size), texts, warm_up)
    cosine = float(np.min(np.sum(vectors * reference, axis=1)))
    rows = [{"path": "bare model (sentence-transformers encode, fp32, batch 32)", "device": device,
             "chunks/s": round(bare, 1), "× bare": 1.0},
            {"path": f"project ({embedder.describe()})", "device": encoder.device,
             "chunks/s": round(project, 1), "× bare": round(project / bare, 2)},
            {"path": f"pipelined encode (tokenizing ahead, batch {encoder.batch_size})", "device": encoder.device,
             "chunks/s": round(pipelined, 1), "× bare": round(pipelined / bare, 2)}]
    print(f"{len(texts):,} chunks of {args.workspace} on {device}")
    for row in rows:
        print(f"  {row['path']:<72} {row['chunks/s']:>8.1f} chunks/s  {row['× bare']:.2f}× bare")
    print(f"  smallest cosine, project vs bare: {cosine:.5f}" + (f"; note: {embedder.note}" if embedder.note else ""))
    shown = "." if Path(args.workspace).resolve() == REPO else args.workspace  # this repository: portable
    record("gpu_path", rows, settings={"workspace": shown, "chunks": len(texts), "max_seq_length": 256},
           figures={"min_cosine_project_vs_bare": round(cosine, 6), "note": embedder.note,
                    "precision": getattr(encoder, "precision", "")},
           uses_percentiles=False,
           note=f"{len(texts):,} chunks, one timed pass each after a warm-up "
                f"({'a whole untimed pass' if warm_up == len(texts) else f'{warm_up} chunks'}); device: {device}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
