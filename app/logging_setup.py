"""Logging for the CLI and the app: warnings by default, info with --verbose."""

from __future__ import annotations

import logging
import warnings


def setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("chromadb", "httpx", "sentence_transformers", "transformers", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.ERROR)
    if not verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=UserWarning)
