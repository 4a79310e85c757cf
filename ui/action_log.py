"""What the user did, one log record per action ("action: Go to symbol…", "action: question …"): kept in
the log file, and by app/crash_log.py beside a fatal error's traceback."""

from __future__ import annotations

import logging

ACTIONS = "ke.actions"


def record(text: str, *args) -> None:
    logging.getLogger(ACTIONS).info("action: " + text, *args)
