"""An index run's progress, as every face shows it: one percentage for the whole run (step 1 and step 2 each
weighed by its measured cost), the step named, the chunks made, and an ETA from the speed of the last 30 s.
The counts are the run's (services/indexing/indexer.py, `run`) and its step 2's (`run.step_two`); the last event
is what health shows meanwhile."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from services.core.models import ProgressEvent
from services.indexing.rate import RateMeter, eta

if TYPE_CHECKING:
    from services.indexing.indexer import Indexer

DEFAULT_RATE = 20.0  # chunks/s expected of an encoder never timed here (a slow CPU's; progress is never ahead)


class RunProgress:
    def __init__(self, run: Indexer) -> None:
        self.run = run
        self.rate_meter = RateMeter()  # the ETA's rate: chunks over the run's last 30 s
        self.step1_weight: float | None = None  # step 1's share of the run's cost, fixed when step 2 begins

    def emit(self, phase: str, files_done: int, files_total: int, chunks_done: int = 0,
              chunks_total: int = 0, message: str = "") -> None:
        elapsed = max(time.monotonic() - (self.run.step_two.started or self.run.started), 1e-6)
        now = self.rate_meter.add(chunks_done) if chunks_total else 0.0  # the speed of the last 30 s
        rate = now or max(chunks_done, self.run.step_two.embedded) / elapsed
        left = eta(now, chunks_done, chunks_total)
        if phase == "embedding" and not message:  # where the vectors are computed, for the status bar
            message = self._encoder_line()
        job = (self.run.kept_chunks + chunks_done, self.run.kept_chunks + chunks_total) if chunks_total else (0, 0)
        share, seconds_left = self.run_share(now)
        if phase in ("done", "cancelled"):
            share, seconds_left = (1.0 if phase == "done" else share), None
        event = ProgressEvent(phase, files_done, files_total, chunks_done, chunks_total, round(rate, 2),
                              left if seconds_left is None else round(seconds_left, 1), message, *job,
                              run_percent=None if share is None else int(100 * share), step=self.step())
        self.run.last_event = event
        self.run.progress(event)

    def step(self) -> int:
        """1 while files are read, chunked and committed (names, keywords, graph, history); 2 while vectors
        are made; 0 before the scan."""
        return 0 if self.run.step1_started is None else (1 if self.run.step1_seconds is None else 2)

    def run_share(self, rate_now: float) -> tuple[float | None, float | None]:
        """(the whole run's share done, seconds left), each step weighed by its measured cost: step 1 at
        the speed its files went so far, step 2's chunks at the encoder's speed (of the last 30 s, else of
        the last run, else of the encoder's timing on this machine). In step 2 the share is step 1's weight
        plus the rest times the share of the index's chunks with vectors: it never runs ahead of them, and a
        resumed run starts where the last one stopped. (None, None) before anything is counted."""
        run = self.run
        rate = rate_now or self._rate_hint()
        if run.step1_seconds is None:
            if not run.step1_files or run.step1_started is None:
                return None, None
            done = (run.files_chunked + run.files_committed) / (2 * run.step1_files)
            spent = time.monotonic() - run.step1_started
            if done <= 0:
                return 0.0, None
            per_file = run.chunks_chunked / max(run.files_chunked, 1)
            left = spent * (1 - done) / done + (run.awaiting_before + per_file * run.step1_files) / rate
            return min(spent / (spent + left), 1.0), left
        if not run.total_chunks:
            return None, None
        if self.step1_weight is None:  # fixed as step 2 begins: the bar then moves only with vectors made
            self.step1_weight = run.step1_seconds / (run.step1_seconds + run.total_chunks / rate)
        whole = run.kept_chunks + run.total_chunks  # of the whole index: a resumed run starts where it stopped
        made = run.step_two.made
        share = min(run.kept_chunks + made, whole) / whole
        return self.step1_weight + (1 - self.step1_weight) * share, max(run.total_chunks - made, 0) / rate

    def _rate_hint(self) -> float:
        """Chunks per second the encoder is expected to make before this run measured it."""
        try:
            recorded = float(self.run.index.catalog().get_meta("chunks_per_second", "0") or 0)
        except (ValueError, Exception):
            recorded = 0.0
        timed = re.search(r"(\d+) chunks/s", self.run.embedder.note)
        return recorded or (float(timed.group(1)) if timed else 0.0) or DEFAULT_RATE

    def _encoder_line(self) -> str:
        """Where embedding runs, for progress: "torch on cuda, fp16, batch 512" (names the device)."""
        try:
            return self.run.embedder.describe()
        except Exception:  # the encoder failed to load: the run reports that itself
            return ""
