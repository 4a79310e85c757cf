"""Why a result has its reranked score: one bar per signal (services.core.models.Signal), and its rank
in the vector ranking against its reranked rank."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QHeaderView, QLabel, QSizePolicy, QStyledItemDelegate, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from services.core.models import ResultChunk, Signal
from ui.ranking_model import DOWN_COLOR, UP_COLOR
from ui.viewmodels.ranking import effect_text, rank_text, steps, symbol_text

BarRole = Qt.ItemDataRole.UserRole + 21  # signed fraction -1..1 of the widest bar


def wrap_elided(text: str, fits, elide, lines: int) -> str:
    """`text` filled word by word into at most `lines` lines that `fits`; the last one `elide`d."""
    words, out = text.split(), []
    while len(words) > 0 and len(out) < lines - 1:
        taken = 1
        while taken < len(words) and fits(" ".join(words[:taken + 1])):
            taken += 1
        out.append(" ".join(words[:taken]))
        words = words[taken:]
    return "\n".join([*out, elide(" ".join(words))] if words else out)


class ElidedLabel(QLabel):
    """A label of a fixed number of lines, whatever its text: what does not fit ends in "…" and the
    whole text is its tooltip (so a long legend or heading never pushes rows out of view)."""

    def __init__(self, text: str = "", lines: int = 1, parent: QWidget | None = None,
                 shorten: Callable[[str, Callable[[str], bool]], str] | None = None, fixed: bool = True) -> None:
        """`shorten(text, fits)`: a shorter form of a text too long, tried before the cut at its end (a path
        first loses its folders: fit_location); `fixed`: the height of `lines` lines, else the label's own (a
        styled font sets it)."""
        super().__init__(parent)
        self.lines = lines
        self.shorten = shorten
        self.full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored,
                           QSizePolicy.Policy.Fixed if fixed else QSizePolicy.Policy.Preferred)
        if fixed:
            self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 8)  # room for a stylesheet's padding
        self.setText(text)

    def text(self) -> str:  # the whole text, not the elided one on screen
        return self.full

    def shown_text(self) -> str:
        return super().text()

    def setText(self, text: str) -> None:  # noqa: N802 (Qt API)
        self.full = text
        self.setToolTip(text if text else "")
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        metrics, width = self.fontMetrics(), max(40, self.contentsRect().width() - 4)
        text = " ".join(self.full.split())

        def fits(line: str) -> bool:
            return metrics.horizontalAdvance(line) <= width

        if self.shorten is not None and not fits(text):
            text = self.shorten(text, fits)
        super().setText(wrap_elided(text, fits, lambda t: metrics.elidedText(t, Qt.TextElideMode.ElideRight, width),
                                    self.lines))


class BarDelegate(QStyledItemDelegate):
    """Paints a bar from the left edge, green when the signal raised the score, red when it lowered it."""

    def paint(self, painter: QPainter, option, index) -> None:
        super().paint(painter, option, index)
        fraction = index.data(BarRole)
        if fraction is None:
            return
        rect = option.rect.adjusted(4, 5, -4, -5)
        width = max(2, int(rect.width() * min(1.0, abs(fraction))))
        painter.save()
        colour = QColor(UP_COLOR if fraction >= 0 else DOWN_COLOR)
        colour.setAlpha(170)
        painter.fillRect(QRect(rect.left(), rect.top(), width, rect.height()), colour)
        painter.restore()


class WhyView(QWidget):
    """set_item(result, strategy_label) shows why; set_item(None) clears it."""

    COLUMNS = ["Signal", "Effect", "", "Note"]
    MIN_ROWS = 3  # rows the panel always has room for

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heading = ElidedLabel("Select a result to see why it ranks where it does.")
        self.heading.setObjectName("whyHeading")
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        self.table.setItemDelegateForColumn(2, BarDelegate(self.table))
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.ResizeToContents,
                                       QHeaderView.ResizeMode.Stretch, QHeaderView.ResizeMode.Stretch)):
            header.setSectionResizeMode(column, mode)  # the bar shares the width with the note, and shrinks
        header.setMinimumSectionSize(40)
        rows = self.table.verticalHeader().defaultSectionSize() * self.MIN_ROWS
        self.table.setMinimumHeight(rows + header.sizeHint().height() + 2 * self.table.frameWidth())
        # in a narrow pane the note is cut (whole in its tooltip) rather than a scroll bar taking a row's height
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.heading)
        layout.addWidget(self.table, 1)
        self.item: ResultChunk | None = None

    def set_item(self, item: ResultChunk | None, strategy_label: str = "") -> None:
        self.item = item
        self.table.setRowCount(0)
        if item is None:
            self.heading.setText("Select a result to see why it ranks where it does.")
            return
        by = f" by {strategy_label}" if strategy_label else ""
        total = " (the sum of the rows below)" if item.signals and all(s.op == "add" for s in item.signals) else ""
        self.heading.setText(f"Why {symbol_text(item)} scores {item.score:.3f}{by}{total}: {rank_text(item)}")
        if not item.signals:
            self.heading.setText(self.heading.text() + " — not reranked: the score is the cosine similarity.")
            return
        self._fill(item.signals)

    def set_file(self, heading: str, signals: tuple[Signal, ...]) -> None:
        """Why a file of a file answer ranks where it does: `heading`, then a row per signal."""
        self.item = None
        self.heading.setText(heading)
        self.table.setRowCount(0)
        self._fill(signals)

    def _fill(self, signals: tuple[Signal, ...]) -> None:
        changes = steps(signals)
        widest = max((abs(change) for _, change in changes), default=0.0) or 1.0
        self.table.setRowCount(len(changes))
        for row, (signal, change) in enumerate(changes):
            tip = f"{signal.name}: raw value {signal.value:g}; {signal.op} {signal.contribution:g}" + (
                f"\n{signal.note}" if signal.note else "") + f"\nchanges the score by {change:+.4f}"
            bar = QTableWidgetItem()
            bar.setData(BarRole, change / widest)
            for column, cell in enumerate((QTableWidgetItem(signal.name), QTableWidgetItem(effect_text(signal)),
                                           bar, QTableWidgetItem(signal.note))):
                cell.setToolTip(tip)
                self.table.setItem(row, column, cell)

    def rows(self) -> list[tuple[str, str, float]]:
        """(signal, effect text, signed bar fraction) per row, as shown."""
        return [(self.table.item(r, 0).text(), self.table.item(r, 1).text(), self.table.item(r, 2).data(BarRole))
                for r in range(self.table.rowCount())]
