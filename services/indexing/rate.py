"""How fast a run is going now: the rate behind the ETA a user reads.

A run's overall average is too hopeful: its first chunks often come from the vector cache (thousands a
second) and a machine that gets busy slows it down later (seen: ETA 2:31, the run took 4:54). `RateMeter`
measures the chunks done over the last `window` seconds of the run instead, and the ETA follows the speed
the run has now. The clock is injected, so tests need no sleeping.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 30.0


class RateMeter:
    def __init__(self, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self.marks: deque[tuple[float, int]] = deque()  # (time, chunks done), oldest first

    def add(self, done: int) -> float:
        """Record the chunks done so far; the rate (chunks per second) over the last window, 0 when unknown."""
        now = self.clock()
        if self.marks and done < self.marks[-1][1]:  # a new stage counts from 0 again
            self.marks.clear()
        self.marks.append((now, done))
        while len(self.marks) > 2 and now - self.marks[1][0] >= self.window:
            self.marks.popleft()  # keep one mark at or beyond the window's start
        (first_time, first_done), (last_time, last_done) = self.marks[0], self.marks[-1]
        return (last_done - first_done) / (last_time - first_time) if last_time > first_time else 0.0


def eta(rate: float, done: int, total: int) -> float | None:
    """Seconds left at `rate`; None until a rate is known."""
    return max(total - done, 0) / rate if rate > 0 and total else None
