"""Application-wide look: Fusion style, the fonts the project ships (resources/fonts) and
resources/style.qss. The shipped fonts make the window's size and layout the same whatever fonts the
machine has (fontconfig would otherwise pick Noto, URW, ... where they are installed)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QFont, QFontDatabase, QIcon
from PySide6.QtWidgets import QApplication

import resources

RESOURCES = Path(resources.__file__).resolve().parent
STYLE_PATH = RESOURCES / "style.qss"
FONTS_DIR = RESOURCES / "fonts"
ICON_PATH = RESOURCES / "icons" / "knowledge-explorer.png"  # the window's and the menu entry's icon
SANS = "DejaVu Sans"  # the application font
MONO = "DejaVu Sans Mono"  # code, paths and timings (style.qss names it too)
POINT_SIZE = 10


def load_fonts() -> bool:
    """Adds the shipped fonts to Qt's font database (once); False when none could be loaded."""
    loaded = set(QFontDatabase.families())
    if SANS in loaded and MONO in loaded:
        return True
    ok = False
    for path in sorted(FONTS_DIR.glob("*.ttf")):
        ok = QFontDatabase.addApplicationFont(str(path)) >= 0 or ok
    return ok


def mono_font(point_size: float = POINT_SIZE) -> QFont:
    font = QFont(MONO)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSizeF(point_size)
    return font


def apply_theme(app: QApplication) -> None:
    app.setStyle("Fusion")
    if ICON_PATH.is_file():
        app.setWindowIcon(QIcon(str(ICON_PATH)))
    if load_fonts():  # missing font files leave the system's fonts, never a crash
        app.setFont(QFont(SANS, POINT_SIZE))
    try:
        app.setStyleSheet(STYLE_PATH.read_text(encoding="utf-8"))
    except OSError:
        pass  # a missing stylesheet leaves the default look, never a crash
