"""A terminal progress bar for `index` (tqdm), fed by the engine's ProgressEvents."""

from __future__ import annotations

from tqdm import tqdm


class TerminalProgress:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: tqdm | None = None

    def update(self, event) -> None:
        if not self.enabled:
            return
        if event.phase == "embedding" and event.chunks_total:
            if self.bar is None:
                self.bar = tqdm(total=event.chunks_total, unit="chunk", desc="embedding", leave=False)
            self.bar.n = event.chunks_done
            self.bar.set_postfix(files=f"{event.files_done}/{event.files_total}", rate=f"{event.rate:.0f}/s")
            self.bar.refresh()
        elif event.phase in ("scanning", "chunking", "finalizing"):
            tqdm.write(f"{event.phase}... {event.message}".rstrip())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
