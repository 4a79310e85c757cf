"""A stand-in embedding model for tests where the model is not the point (faults, locks, repairs): the
bundled all-MiniLM-L6-v2 cut to its first transformer layer of six. It loads, exports and quantises through
the same code as the real model, answers in the same 384 dimensions and keeps its word embeddings, so a
question still finds code that uses its words; it embeds about four times faster. Tests about what the model
finds keep the real one."""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from services.core.settings import Settings

LAYERS = 1
FOLDER = Path(tempfile.gettempdir()) / f"ke-test-stand-in-encoder-{os.getuid()}" / f"minilm-{LAYERS}-layer"
TOP_LEVEL = {"model.safetensors", "config.json", "README.md", ".gitattributes"}  # replaced or not needed


@cache
def stand_in_model() -> Path:
    """The stand-in's folder, built once per machine (xdist workers take turns under a file lock)."""
    from filelock import FileLock

    FOLDER.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(FOLDER) + ".lock"):
        if not (FOLDER / "model.safetensors").exists():
            _build(FOLDER)
    return FOLDER


def stand_in_settings(**fields) -> Settings:
    return Settings(embedding_model=str(stand_in_model()), **fields)


def _build(folder: Path) -> None:
    from transformers import BertModel

    from services.encoders.embedder import bundled_model_path

    source = Path(bundled_model_path())
    staging = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=lambda where, names: TOP_LEVEL & set(names) if Path(where) == source else set())
    model = BertModel.from_pretrained(str(source))
    model.encoder.layer = model.encoder.layer[:LAYERS]
    model.config.num_hidden_layers = LAYERS
    model.save_pretrained(str(staging))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
