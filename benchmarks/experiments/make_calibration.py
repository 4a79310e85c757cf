"""Informed: openvino-int8 is calibrated on standard-library chunks and docstrings, no evaluation data.

Writes services/encoders/calibration.json: the texts the openvino-int8 encoder's activation ranges are
measured on when it is quantised (static int8, NNCF). What the encoder meets: code chunks as the indexer
gives them to the model (path, kind and name, then the code) and short questions. The chunks come from
Python's standard library (the first modules of a fixed list), cut by the app's own chunker; the questions
are the first lines of those functions' docstrings. No evaluation data is used.

    python benchmarks/experiments/make_calibration.py
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from services.core.settings import Settings  # noqa: E402
from services.encoders.embedder import chunk_text  # noqa: E402
from services.indexing.chunking import chunk_file  # noqa: E402

MODULES = ["argparse", "json/decoder", "csv", "difflib", "shutil", "textwrap", "configparser", "logging/__init__",
           "email/message", "http/client", "pathlib", "tarfile", "zipfile", "heapq", "fractions", "calendar",
           "statistics", "gettext", "ftplib", "smtplib"]
CHUNKS_PER_MODULE = 6
QUESTIONS = 40
TARGET = Path(__file__).resolve().parents[2] / "services" / "encoders" / "calibration.json"


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[1]).parse_args()  # --help
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chunks, questions = [], []
    for name in MODULES:
        path = stdlib / f"{name}.py"
        text = path.read_text(encoding="utf-8")
        cut = [c for c in chunk_file(f"Lib/{name}.py", text, "python", "", Settings()) if c.kind != "module"]
        step = max(1, len(cut) // CHUNKS_PER_MODULE)
        chunks += [chunk_text(c) for c in cut[::step][:CHUNKS_PER_MODULE]]
        questions += docstring_questions(text)
    texts = chunks + questions[::max(1, len(questions) // QUESTIONS)][:QUESTIONS]
    TARGET.write_text(json.dumps(texts, indent=0) + "\n", encoding="utf-8")
    print(f"{TARGET}: {len(chunks)} chunks, {len(texts) - len(chunks)} questions")


def docstring_questions(text: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and (doc := ast.get_docstring(node)):
            first = doc.strip().splitlines()[0].strip()
            if 20 <= len(first) <= 120:
                found.append(first)
    return found


if __name__ == "__main__":
    main()
