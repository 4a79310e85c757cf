"""Logging for the CLI and the app: warnings by default, info with --verbose, on the terminal as one
line each (tracebacks only with --verbose); everything, tracebacks included, in a log file."""

from __future__ import annotations

import logging
import warnings
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_FILE = "knowledge-explorer.log"
NOISY = ("chromadb", "httpx", "sentence_transformers", "transformers", "bm25s")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class LogFile(RotatingFileHandler):
    """The log file, created (with its folder) on the first record, not before: a command that logs
    nothing leaves the data dir as it was."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, maxBytes=2_000_000, backupCount=2, encoding="utf-8", delay=True)

    def _open(self):
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        pass  # a full or read-only disk: the terminal still gets its line


class OneLine(logging.Formatter):
    """The message without its traceback (that goes to the log file)."""

    def format(self, record: logging.LogRecord) -> str:
        record = logging.makeLogRecord(record.__dict__)
        record.exc_info = record.exc_text = record.stack_info = None
        return super().format(record)


def log_file(data_dir: str | Path) -> Path:
    return Path(data_dir) / "logs" / LOG_FILE


def setup_logging(verbose: bool = False, data_dir: str | Path | None = None, quiet: bool = False) -> Path | None:
    """Configure the root logger (again on each call: replaces what an earlier call installed).
    `quiet` (a one-shot command, which prints its own errors) keeps warnings off the terminal.
    Returns the log file (None without a data dir)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "knowledge_explorer", False)]:
        root.removeHandler(handler)
        handler.close()
    console = logging.StreamHandler()
    console.setLevel(logging.INFO if verbose else logging.ERROR if quiet else logging.WARNING)
    console.setFormatter(logging.Formatter(FORMAT) if verbose else OneLine(FORMAT))
    handlers = [console]
    path = log_file(data_dir) if data_dir else None
    if path is not None:
        handlers.append(LogFile(path))
        handlers[-1].setFormatter(logging.Formatter(FORMAT))
        handlers[-1].setLevel(logging.INFO)
    for handler in handlers:
        handler.knowledge_explorer = True
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.ERROR)
    if not verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=UserWarning)
    return path
