"""Index-health panel: status badge, facts, stale/skipped files, reindex controls and progress."""

from __future__ import annotations

from datetime import datetime, timezone

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QFormLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton, QTreeWidget, QTreeWidgetItem,
    QVBoxLayout, QWidget,
)

from services.core.models import RUNNING_STATES, IndexHealth, ProgressEvent, state_label, vectors_reused_text
from ui.actions import INDEX, VIEW, Place, window_action
from ui.viewmodels.progress import health_fraction, progress_fraction, progress_text  # noqa: F401 (re-exported)

# badge state -> (css state name)
UP_TO_DATE, STALE, NEEDS_REINDEX, NOT_INDEXED, UNKNOWN, FAILED = (
    "ok", "stale", "reindex", "missing", "unknown", "error")


BUSY = "busy"
# the engine's state (IndexHealth.state) -> the badge's css state; the text is state_label's
BADGE_STATES = {"missing": NOT_INDEXED, "empty": NOT_INDEXED, "folder-missing": NEEDS_REINDEX,
                "interrupted": STALE, "stale": STALE, "ready": UP_TO_DATE, "damaged": FAILED,
                "unavailable": FAILED, "failed": FAILED, "error": FAILED, **{state: BUSY for state in RUNNING_STATES}}


def badge_for(health: IndexHealth | None) -> tuple[str, str]:
    """(text, state) of the status badge: the engine's state, as `health` prints it."""
    if health is None:
        return "no workspace", UNKNOWN
    if not health.indexed and health.last_error and health.state in ("missing", "error"):
        return "error", FAILED
    if health.state == "interrupted" and health.run_cancelled:
        return "cancelled", STALE
    if health.state == "stale" and health.needs_reindex:
        return state_label(health), NEEDS_REINDEX
    return state_label(health), BADGE_STATES.get(health.state, UNKNOWN)


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def human_time(iso: str) -> str:
    """ISO 8601 UTC -> local 'YYYY-MM-DD HH:MM' plus how long ago."""
    if not iso:
        return "—"
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    ago = (datetime.now(timezone.utc) - when).total_seconds()
    if ago < 90:
        rel = "just now"
    elif ago < 5400:
        rel = f"{ago / 60:.0f} min ago"
    elif ago < 172800:
        rel = f"{ago / 3600:.0f} h ago"
    else:
        rel = f"{ago / 86400:.0f} days ago"
    return f"{when.astimezone().strftime('%Y-%m-%d %H:%M')} ({rel})"


def chunks_text(health: IndexHealth) -> str:
    """"36,522", or while a run embeds "36,522 (semantic: 18% of 36,522 chunks)"."""
    if health.chunks_embedded is None or health.chunks_embedded >= health.chunks or not health.chunks:
        return f"{health.chunks:,}"
    share = 100 * health.chunks_embedded // health.chunks
    return f"{health.chunks:,} (semantic: {share}% of {health.chunks:,} chunks)"


def reused_text(health: IndexHealth) -> str:
    """"vectors reused: 6,900 of 7,206 (last run)", or "—" before a run embedded anything."""
    text = vectors_reused_text(health.last_run_reused, health.last_run_vectors)
    return f"{text} (last run)" if text else "—"


def languages_text(languages: dict[str, int], limit: int = 0) -> str:
    """'python 50, go 30' by chunk count; with `limit`, the first `limit` and '+n more'."""
    if not languages:
        return "—"
    ordered = sorted(languages.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ordered[:limit] if limit else ordered
    text = ", ".join(f"{name} {count}" for name, count in shown)
    if len(shown) < len(ordered):
        text += f", +{len(ordered) - len(shown)} more"
    return text


def encoder_text(health: IndexHealth) -> str:
    """"onnx-int8 on cpu", with the encoder's note ("GPU NOT USED: ..." when a GPU sits idle)."""
    if not health.backend:
        return "—"
    text = f"{health.backend} on {health.device}"
    note = health.encoder_note.removeprefix(f"encoder {health.backend}: ")  # the row already names it
    return f"{text} — {note}" if note else text


class HealthPanel(QWidget):
    reindex_requested = Signal(bool)  # full rebuild?
    cancel_requested = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.health: IndexHealth | None = None
        self.clock = QTimer(self)  # "just now", "5 min ago" move on while the window is open
        self.clock.setInterval(30_000)
        self.clock.timeout.connect(self.refresh_times)
        self.clock.start()
        self.badge = QLabel()
        self.badge.setObjectName("healthBadge")
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.workspace_label = QLabel()
        self.workspace_label.setObjectName("healthWorkspace")
        self.workspace_label.setWordWrap(True)
        self.values: dict[str, QLabel] = {}
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        form.setHorizontalSpacing(10)
        form.setVerticalSpacing(4)
        for key in ("Files", "Chunks", "Languages", "Model", "Encoder", "Vectors", "History", "Size", "Updated",
                    "Created", "Repaired", "Last error"):
            label = QLabel("—")
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[key] = label
            form.addRow(f"{key}:", label)
        self.values["Last error"].setObjectName("healthError")
        self.values["Encoder"].setObjectName("healthEncoder")
        self.values["Vectors"].setToolTip("Vectors the last run took from this data dir's shared cache (the same "
                                          "chunks in another checkout or an earlier version) instead of embedding them")

        self.files = QTreeWidget()
        self.files.setHeaderLabels(["File", "Status"])
        self.files.setRootIsDecorated(False)
        self.files.setAlternatingRowColors(True)
        self.files.setUniformRowHeights(True)
        self.files.header().setStretchLastSection(True)
        self.files.setColumnWidth(0, 200)

        self._build_actions()
        self.reindex_button = QPushButton("Reindex")
        self.reindex_button.setToolTip(self.reindex_action.toolTip())
        self.rebuild_button = QPushButton("Full rebuild")
        self.rebuild_button.setToolTip(self.rebuild_action.toolTip())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip(self.cancel_action.toolTip())
        self.cancel_button.setEnabled(False)
        self.reindex_button.clicked.connect(lambda: self.reindex_requested.emit(False))
        self.rebuild_button.clicked.connect(lambda: self.reindex_requested.emit(True))
        self.cancel_button.clicked.connect(self.cancel_requested.emit)
        self.auto_reindex = QCheckBox("Index changes automatically")
        self.auto_reindex.setToolTip("Watch the workspace and index edited, added and deleted files in the "
                                     "background; when off, changed files are listed as stale")
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        self.progress.hide()  # shown from the first indexing run on
        self.progress_label = QLabel("")
        self.progress_label.setObjectName("progressLabel")
        self.progress_label.setWordWrap(True)  # a long "Done in ..." line must not widen the panel

        self.running = ""  # "user" (a run the window started), "auto" (the engine's catch-up or watcher run), ""
        self._after_run = False  # a run just ended: the health on hand predates it, a new one is being read
        self.controls = QWidget()  # the buttons: the window keeps them under the panel's scrolling part
        controls = QVBoxLayout(self.controls)
        controls.setContentsMargins(10, 4, 10, 6)
        buttons = QHBoxLayout()
        buttons.addWidget(self.reindex_button)
        buttons.addWidget(self.rebuild_button)
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        controls.addLayout(buttons)
        controls.addWidget(self.auto_reindex)

        top = QHBoxLayout()
        top.addWidget(self.badge)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(8)
        layout.addLayout(top)
        layout.addWidget(self.progress)  # at the top: a run and its progress are never below the fold
        layout.addWidget(self.progress_label)
        layout.addWidget(self.workspace_label)
        layout.addLayout(form)
        self.files_title = QLabel("Stale and skipped files")
        self.files_title.setObjectName("sectionTitle")
        self.files_title.setWordWrap(True)  # "(12 stale, 340 skipped)" must not widen the panel past its pane
        layout.addWidget(self.files_title)
        layout.addWidget(self.files, 1)
        layout.addStretch(0)  # takes the space when the file list is hidden
        layout.addWidget(self.controls)
        self.set_health(None)

    def _build_actions(self) -> None:
        """The Index menu's actions (the buttons' keys), and View ▸ Index health, which the window connects to
        the panel's place."""
        self.reindex_action = window_action(self, "Reindex", "F5", lambda: self.reindex_requested.emit(False),
                                            "Index new and changed files", Place(140, INDEX, 0, 0))
        self.rebuild_action = window_action(self, "Full rebuild…", "Ctrl+Shift+R",
                                            lambda: self.reindex_requested.emit(True), "Embed every file again (asks first)",
                                            Place(150, INDEX, 0, 1))
        self.cancel_action = window_action(self, "Cancel indexing", "Ctrl+.", self.cancel_requested.emit,
                                           place=Place(160, INDEX, 0, 2))
        self.show_action = window_action(self, "Index health", "Ctrl+Shift+H", None,
                                         "Show or hide the index health panel", Place(20, VIEW, 0, 4))
        self.show_action.setCheckable(True)
        self.show_action.setChecked(True)

    # --- health ---
    def set_busy_owner(self, message: str) -> None:
        """Another process owns the index: say so and offer no reindex (it would be refused)."""
        self.set_health(self.health)
        self.badge.setText("in use elsewhere")
        self.values["Last error"].setText(message)
        self.reindex_button.setEnabled(False)
        self.rebuild_button.setEnabled(False)

    def set_health(self, health: IndexHealth | None) -> None:
        self.health = health
        text, state = badge_for(health)
        if self.running and (health is None or health.state != "cancelling"):  # a run this window knows of is
            text, state = self._busy_text(), BUSY  # under way: the badge says so, in one wording whoever reports it
        elif self._after_run:
            text, state = "checking…", BUSY
        self._set_badge(text, state)
        self.badge.setToolTip(health.message if health is not None else "")
        self.workspace_label.setText(health.workspace if health else "Open a workspace to see its index")
        h = health or IndexHealth(workspace="", indexed=False)
        self.values["Files"].setText(f"{h.files:,}" if h.indexed else "—")
        self.values["Chunks"].setText(chunks_text(h) if h.indexed else "—")
        self.values["Languages"].setText(languages_text(h.languages, limit=4))
        self.values["Languages"].setToolTip(languages_text(h.languages))
        self.values["Model"].setText(f"{h.model} ({h.dimension}-d)" if h.model else "—")
        self.values["Model"].setToolTip(f"vectors: {h.vectors}" if h.vectors else "")
        self.values["Encoder"].setText(encoder_text(h))
        self.values["Encoder"].setProperty("error", "GPU NOT USED" in h.encoder_note)  # loud: styled as an error
        self.values["Encoder"].style().polish(self.values["Encoder"])
        self.values["Vectors"].setText(reused_text(h))
        self.values["History"].setText(h.history or "—")
        self.values["Size"].setText(human_size(h.size_bytes) if h.indexed else "—")
        self.refresh_times()
        self.values["Repaired"].setText("\n".join(h.repaired) or "nothing")  # damage found and repaired in its stores
        self.values["Last error"].setText(h.last_error or "none")
        self.values["Last error"].setProperty("error", bool(h.last_error))
        self._fill_files(h)
        if not self.running:  # between runs the bar shows the index, never 0 % under "up to date"
            value, maximum = health_fraction(health)
            self.progress.setRange(0, maximum)
            self.progress.setValue(value)
        usable = health is not None and health.state != "folder-missing"
        self.reindex_button.setEnabled(usable and not self.is_indexing())
        self.rebuild_button.setEnabled(usable and not self.is_indexing())
        self.reindex_button.setText("Index now" if health is not None and not health.indexed else "Reindex")

    def refresh_times(self) -> None:
        """"Updated" and "Created" with how long ago as of now (the clock timer calls it: "just now" moves on)."""
        h = self.health
        if h is not None:
            self.values["Updated"].setText(human_time(h.updated_at))
            self.values["Created"].setText(human_time(h.created_at))

    def _fill_files(self, h: IndexHealth) -> None:
        self.files.clear()
        for stale in h.stale_files:
            QTreeWidgetItem(self.files, [stale.path, f"stale: {stale.change}"])
        for skipped in h.skipped:
            item = QTreeWidgetItem(self.files, [skipped.path, f"skipped: {skipped.reason}"])
            item.setToolTip(1, skipped.reason)
        count = len(h.stale_files) + len(h.skipped)
        self.files.setVisible(count > 0)
        self.files_title.setText(
            f"Stale and skipped files ({len(h.stale_files)} stale, {len(h.skipped)} skipped)" if count
            else "Stale and skipped files (none)")

    # --- indexing state ---
    def _set_badge(self, text: str, state: str) -> None:
        self.badge.setText(text)
        self.badge.setProperty("state", state)
        self.badge.style().unpolish(self.badge)
        self.badge.style().polish(self.badge)

    def _busy_text(self) -> str:
        """"resuming…" when the run continues an interrupted one, else "indexing…"."""
        resumes = self.health is not None and self.health.state in ("interrupted", "resuming")
        return "resuming…" if resumes else "indexing…"

    def show_cancelling(self) -> None:
        self._set_badge("cancelling…", BUSY)

    def is_indexing(self) -> bool:
        """A run the window started is under way."""
        return self.running == "user"

    def auto_started(self) -> None:
        """The engine's automatic run (catch-up or changed files): shown, and cancellable, like a user's."""
        if self.running:
            return
        self.running = "auto"
        self.progress.show()
        self.progress.setRange(0, 0)
        self._set_badge(self._busy_text(), BUSY)
        self.cancel_button.setEnabled(True)

    def auto_finished(self) -> None:
        if self.running != "auto":
            return
        self.running = ""
        self.cancel_button.setEnabled(False)
        self._checking_after_run()

    def _checking_after_run(self) -> None:
        """The badge leaves "indexing…" for "checking…": the health from before the run is out of date,
        and the window reads it again (a failed read shows why)."""
        self._after_run = True
        try:
            self.set_health(self.health)
        finally:
            self._after_run = False

    def indexing_started(self, full: bool) -> None:
        self.running = "user"
        self.progress.show()
        self._set_badge(self._busy_text(), BUSY)
        self.cancel_button.setEnabled(True)
        self.reindex_button.setEnabled(False)
        self.rebuild_button.setEnabled(False)
        self.progress.setRange(0, 0)
        self.progress_label.setText("Full rebuild: starting…" if full else "Reindex: starting…")

    def show_progress(self, event: ProgressEvent, fraction: tuple[int, int] | None = None) -> None:
        """A run's event on the bar and its line; `fraction`: the bar's (value, maximum) when the caller
        keeps it from going backwards (else the event's own)."""
        if event.phase == "done":
            self.progress.setRange(0, 1)
            self.progress.setValue(1)
            self.progress_label.setText("Done")
            return
        if event.phase == "cancelled":
            self.progress_label.setText("Cancelled")
            return
        value, maximum = fraction if fraction is not None else progress_fraction(event)
        self.progress.setRange(0, maximum)
        if maximum:
            self.progress.setValue(value)
        self.progress_label.setText(progress_text(event, 100 * value // maximum if maximum else None))

    def indexing_finished(self, message: str) -> None:
        self.running = ""
        self.cancel_button.setEnabled(False)
        self._checking_after_run()
        self.progress_label.setText(message)
