"""An index run's progress, one way for every place that shows it (the panel's bar and line, the status
bar, the window title): the engine's share of the whole run (`run_percent`: step 1, names and files, and
step 2, vectors, weighed by their measured cost), never of what is left of a resumed run."""

from __future__ import annotations

from services.core.models import IndexHealth, ProgressEvent


def progress_fraction(event: ProgressEvent) -> tuple[int, int]:
    """(value, maximum) for a progress bar: the run's share (of 100) when the engine counts it, else the
    index's chunks, this run's chunks or files; (0, 0) while nothing is counted yet (a busy indicator)."""
    if event.run_percent is not None:
        return event.run_percent, 100
    if event.index_total:
        return min(event.index_done, event.index_total), event.index_total
    if event.chunks_total:
        return event.chunks_done, event.chunks_total
    if event.files_total:
        return event.files_done, event.files_total
    return 0, 0


class RunProgress:
    """One run's bar, never going backwards: a run's phases count different things (files, then chunks,
    then the index's chunks), so a later phase may start at a smaller share; the bar holds until it passes
    what was shown. `end()` when the run is over."""

    def __init__(self) -> None:
        self.shown: tuple[int, int] = (0, 0)

    def fraction(self, event: ProgressEvent) -> tuple[int, int]:
        value, maximum = progress_fraction(event)
        old_value, old_maximum = self.shown
        if maximum and (not old_maximum or value * old_maximum >= old_value * maximum):
            self.shown = (value, maximum)
        return self.shown

    def percent(self, event: ProgressEvent) -> int | None:
        value, maximum = self.fraction(event)
        return 100 * value // maximum if maximum else None

    def end(self) -> None:
        self.shown = (0, 0)


STEPS = {1: "Step 1 of 2, names and files: ", 2: "Step 2 of 2, vectors: "}


def progress_percent(event: ProgressEvent) -> int | None:
    """The bar's percentage (None while it is a busy indicator), for the title."""
    value, maximum = progress_fraction(event)
    return 100 * value // maximum if maximum else None


def progress_text(event: ProgressEvent, percent: int | None = None) -> str:
    """"Embedding · 1,200 of 7,206 chunks (16 %) · files 3/40 · 55/s · ETA 2:05": the same numbers as the bar
    (`percent`: the bar's, when it is held from going backwards)."""
    if event.phase == "preparing" and event.message:
        return f"Preparing the model: {event.message.removeprefix('preparing the embedding model ')}"
    parts = [STEPS.get(event.step, "") + event.phase.capitalize()]
    shown = progress_percent(event) if percent is None else percent
    if event.index_total and event.run_percent is not None:
        parts.append(f"vectors for {min(event.index_done, event.index_total):,} of {event.index_total:,} chunks")
    elif event.index_total:
        parts.append(f"{min(event.index_done, event.index_total):,} of {event.index_total:,} chunks ({shown} %)")
    if event.run_percent is not None and shown is not None:
        parts.append(f"{shown} % of the run")
    if event.files_total:
        parts.append(f"files {event.files_done}/{event.files_total}")
    if event.chunks_total and not event.index_total:
        parts.append(f"chunks {event.chunks_done}/{event.chunks_total}")
    if event.rate:
        parts.append(f"{event.rate:.0f}/s")
    if event.phase == "embedding" and " on " in event.message:  # where it runs: "torch on cuda, fp16, batch 512"
        parts.append(event.message)
    if event.eta_seconds is not None and event.phase not in ("done", "cancelled"):
        eta = int(round(event.eta_seconds))
        parts.append(f"ETA {eta // 60}:{eta % 60:02d}")
    return " · ".join(parts)


def health_fraction(health: IndexHealth | None) -> tuple[int, int]:
    """(value, maximum) for the bar between runs, from the index's state: where an interrupted run
    stopped, the share of chunks with vectors, full when all have one; (0, 1) with no index."""
    if health is None or not health.indexed:
        return 0, 1
    if health.run_chunks_total:
        return min(health.run_chunks_done, health.run_chunks_total), health.run_chunks_total
    if not health.chunks:
        return 0, 1
    embedded = health.chunks if health.chunks_embedded is None else health.chunks_embedded
    return min(embedded, health.chunks), health.chunks
