"""A fatal error never goes unseen: while the window is open, `faulthandler` writes a fatal error's
traceback (a crash in Qt or any native library, where Python can no longer log) into a session file in the
log folder, after the last actions the user took (the `ke.actions` log records, written as they happen).
A clean exit removes the file; one found at the next start means the app stopped unexpectedly: its content
goes into the log file, and the window says so."""

from __future__ import annotations

import faulthandler
import logging
import os
from collections import deque
from pathlib import Path
from typing import TextIO

from ui.action_log import ACTIONS

SESSION = "session-{pid}.txt"  # one per running window: a second window never takes the first's for a crash
LAST_CRASH = "last-crash.txt"
KEEP = 200  # the last actions kept in the session file


class CrashLog(logging.Handler):
    """The session file: the last actions, then (only on a fatal error) faulthandler's traceback."""

    def __init__(self, folder: Path) -> None:
        super().__init__(logging.INFO)
        self.folder = folder
        self.recent: deque[str] = deque(maxlen=KEEP)
        self.file: TextIO | None = None
        self.setFormatter(logging.Formatter("%(asctime)s %(message)s"))

    def start(self) -> Path | None:
        """Open the session file and arm faulthandler on it; returns the previous session's crash report
        when the last run did not end cleanly (None otherwise)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        crashed = self._previous_crash()
        self.file = file = open(self.session, "w", encoding="utf-8")  # noqa: SIM115 (kept open all session)
        faulthandler.enable(file=file, all_threads=True)
        logging.getLogger(ACTIONS).addHandler(self)
        return crashed

    @property
    def session(self) -> Path:
        return self.folder / SESSION.format(pid=os.getpid())

    def _previous_crash(self) -> Path | None:
        """The newest session file whose window is gone, moved to LAST_CRASH (older ones are dropped)."""
        dead = sorted((path for path in self.folder.glob(SESSION.format(pid="*")) if not alive(path)),
                      key=lambda path: path.stat().st_mtime)
        if not dead:
            return None
        report = self.folder / LAST_CRASH
        os.replace(dead[-1], report)
        for path in dead[:-1]:
            path.unlink(missing_ok=True)
        text = report.read_text(encoding="utf-8", errors="replace")
        logging.getLogger(__name__).error("the app stopped unexpectedly last time; its last actions and "
                                          "traceback:\n%s", text)
        return report

    def emit(self, record: logging.LogRecord) -> None:
        if self.file is None:
            return
        line = self.format(record)
        self.recent.append(line)
        try:
            if self.file.tell() > KEEP * 400:  # keep the file short: the last actions only
                self.file.seek(0)
                self.file.truncate()
                self.file.write("\n".join(self.recent) + "\n")
            else:
                self.file.write(line + "\n")
            self.file.flush()
        except (OSError, ValueError):
            pass  # a full disk must not take the window down

    def stop(self) -> None:
        """A clean exit: the session file goes."""
        logging.getLogger(ACTIONS).removeHandler(self)
        if self.file is None:
            return
        faulthandler.disable()
        self.file.close()
        self.file = None
        self.session.unlink(missing_ok=True)


def alive(session: Path) -> bool:
    """Whether the process a session file is named after still runs."""
    try:
        pid = int(session.stem.rsplit("-", 1)[1])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return pid != os.getpid()

