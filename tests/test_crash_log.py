"""A fatal error never goes unseen: a real process arms the crash log, records actions, and dies in native
code; the next start reports it and the log file holds the traceback and the last actions."""

from __future__ import annotations

import pytest

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

from app.crash_log import LAST_CRASH, CrashLog
from app.logging_setup import setup_logging

ROOT = Path(__file__).resolve().parents[1]

CRASHING = textwrap.dedent("""
    import faulthandler, sys
    from pathlib import Path
    from app.crash_log import CrashLog
    from app.logging_setup import setup_logging
    from ui.action_log import record
    setup_logging(data_dir=sys.argv[1])
    CrashLog(Path(sys.argv[1]) / "logs").start()
    record("Go to symbol…")
    record("question (auto): %s", "why does saferepr fail")
    def open_the_file():
        faulthandler._sigsegv()  # what none_dealloc and any native crash look like: the process aborts
    open_the_file()
""")


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
def test_a_fatal_error_leaves_its_traceback_and_last_actions_and_the_next_start_says_so(tmp_path):
    crashed = subprocess.run([sys.executable, "-c", CRASHING, str(tmp_path)], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    assert crashed.returncode != 0  # it really died
    log_path = setup_logging(data_dir=tmp_path)
    crash_log = CrashLog(log_path.parent)
    try:
        report = crash_log.start()
    finally:
        crash_log.stop()
        setup_logging()  # the test's log file closed
    assert report == tmp_path / "logs" / LAST_CRASH
    text = report.read_text(encoding="utf-8")
    assert "action: Go to symbol…" in text and "why does saferepr fail" in text
    assert "Fatal Python error" in text and "open_the_file" in text  # the traceback, with the function it died in
    logged = log_path.read_text(encoding="utf-8")
    assert "stopped unexpectedly last time" in logged and "open_the_file" in logged


def test_a_clean_exit_is_not_reported_as_a_crash(tmp_path):
    folder = tmp_path / "logs"
    first = CrashLog(folder)
    assert first.start() is None
    logging.getLogger("ke.actions").info("action: Quit")
    first.stop()
    second = CrashLog(folder)
    try:
        assert second.start() is None
    finally:
        second.stop()
    assert not list(folder.glob("session-*"))
