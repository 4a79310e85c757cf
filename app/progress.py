"""A terminal progress bar for `index` (tqdm), fed by the engine's ProgressEvents: the whole run's share
(`run_percent`, both steps weighed by their measured cost), the step, and the vectors made."""

from __future__ import annotations

from tqdm import tqdm

STEPS = {1: "step 1 of 2: names and files", 2: "step 2 of 2: vectors"}


class TerminalProgress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: tqdm | None = None

    def update(self, event) -> None:
        if not self.enabled or event.phase in ("done", "cancelled"):
            return
        if event.run_percent is None:
            if event.phase in ("preparing", "scanning") and event.message:
                tqdm.write(f"{event.phase}... {event.message}".rstrip())
            return
        if self.bar is None:
            self.bar = tqdm(total=100, unit="%", leave=False, bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix}")
        self.bar.set_description(STEPS.get(event.step, event.phase), refresh=False)
        self.bar.n = event.run_percent
        postfix = {"files": f"{event.files_done}/{event.files_total}"} if event.files_total else {}
        if event.index_total:
            postfix["vectors"] = f"{min(event.index_done, event.index_total):,}/{event.index_total:,}"
        if event.eta_seconds is not None:
            postfix["eta"] = f"{int(event.eta_seconds) // 60}:{int(event.eta_seconds) % 60:02d}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
