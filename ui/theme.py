"""Application-wide look: Fusion style plus resources/style.qss."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QApplication

import resources

STYLE_PATH = Path(resources.__file__).resolve().parent / "style.qss"


def apply_theme(app: QApplication) -> None:
    app.setStyle("Fusion")
    try:
        app.setStyleSheet(STYLE_PATH.read_text(encoding="utf-8"))
    except OSError:
        pass  # a missing stylesheet leaves the default look, never a crash
