"""Table view-models for the two rankings shown side by side (testable without a window)."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from services.core.models import QueryResult, ResultChunk
from ui.theme import mono_font
from ui.viewmodels.ranking import format_score, location_text, movement, rank_text, symbol_text, why_summary

ORIGINAL = "original"
RERANKED = "reranked"

UP_COLOR = QColor("#2e9d57")
DOWN_COLOR = QColor("#d1483f")
NEW_COLOR = QColor("#2f7bd8")
SAME_COLOR = QColor("#8a8f98")
MUTED_COLOR = QColor("#8a8f98")

ChunkIdRole = Qt.ItemDataRole.UserRole + 1
SortRole = Qt.ItemDataRole.UserRole + 2
ScoreBarRole = Qt.ItemDataRole.UserRole + 3  # 0-1 bar length: the score relative to this list's scores
SCORE_COLUMNS = ("Vector", "Reranked")


def movement_color(delta: int | None) -> QColor:
    if delta is None:
        return NEW_COLOR
    if delta > 0:
        return UP_COLOR
    if delta < 0:
        return DOWN_COLOR
    return SAME_COLOR


def bar_fractions(values: list[float | None]) -> list[float | None]:
    """Bar lengths comparable within one list: score / best for non-negative scores (cosine,
    probabilities), min-max otherwise; the lowest still shows a sliver."""
    known = [v for v in values if v is not None]
    if not known:
        return [None] * len(values)
    low, high = min(known), max(known)
    if low >= 0 and high > 0:
        return [None if v is None else max(0.03, v / high) for v in values]
    span = (high - low) or 1.0
    return [None if v is None else max(0.03, (v - low) / span) for v in values]


class RankingModel(QAbstractTableModel):
    """One ranking of a QueryResult: `side` is ORIGINAL (vector order) or RERANKED.

    Every row shows both scores: in the original list the reranked score is looked up by chunk id
    in the reranked list ("—" when the chunk did not make the reranked cut), and vice versa.
    """

    def __init__(self, side: str, parent=None) -> None:
        super().__init__(parent)
        if side not in (ORIGINAL, RERANKED):
            raise ValueError(f"side must be {ORIGINAL!r} or {RERANKED!r}")
        self.side = side
        self._rows: list[ResultChunk] = []
        self._other: dict[str, ResultChunk] = {}
        self._row_of: dict[str, int] = {}
        self._cells: dict[tuple[int, int, int], object] = {}  # Qt asks for each cell's roles on every paint
        self._bars: dict[str, list[float | None]] = {}  # column title -> bar length per row
        self.legend = ""  # what the reranked scores mean (the strategy's legend), for tooltips
        self.first = "Vector"  # what ranked first: "Keyword" when a name was answered by BM25, not vectors
        self.columns = (["#", "Δ"] if side == RERANKED else ["#"]) + [
            "Symbol", "Kind", "Location", "Vector", "Reranked"]
        self._mono = mono_font()

    # --- data in ---
    def set_result(self, result: QueryResult | None) -> None:
        self.beginResetModel()
        if result is None:
            self._rows, others = [], []
        elif self.side == ORIGINAL:
            self._rows, others = list(result.original), list(result.results)
        else:
            self._rows, others = list(result.results), list(result.original)
        self._other = {r.chunk.id: r for r in others}
        self.first = "Keyword" if result is not None and result.original_ranking == "keyword" else "Vector"
        self._row_of = {r.chunk.id: i for i, r in enumerate(self._rows)}
        self._cells = {}
        scores = [self.scores(r) for r in self._rows]
        self._bars = {"Vector": bar_fractions([v for v, _ in scores]),
                      "Reranked": bar_fractions([r for _, r in scores])}
        self.endResetModel()

    def clear(self) -> None:
        self.set_result(None)

    # --- lookups ---
    def item(self, row: int) -> ResultChunk:
        return self._rows[row]

    def row_of(self, chunk_id: str) -> int | None:
        return self._row_of.get(chunk_id)

    def column_of(self, title: str) -> int:
        return self.columns.index(title)

    def rank_of(self, item: ResultChunk) -> int | None:
        if self.side == RERANKED:
            return item.rank
        return item.original_rank if item.original_rank is not None else self._rows.index(item) + 1

    def scores(self, item: ResultChunk) -> tuple[float | None, float | None]:
        """(vector score, reranked score) for a row."""
        if self.side == RERANKED:
            return item.original_score, item.score
        other = self._other.get(item.chunk.id)
        return item.original_score, (other.score if other is not None else None)

    # --- Qt model API ---
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        title = self.columns[section]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.first if title == "Vector" else title
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return self._alignment(title)
        if role == Qt.ItemDataRole.ToolTipRole:
            first = self.first.lower()
            return {
                "#": "Rank in this list",
                "Δ": f"Movement from the {first} ranking (▲ up, ▼ down, = same, new = not in the {first} top list)",
                "Vector": self._first_meaning(),
                "Reranked": "Score after reranking (— when the chunk is not in the reranked list)",
            }.get(title)
        return None

    def _first_score(self) -> str:
        """What the first ranking's scores are."""
        return "BM25 keyword score" if self.first == "Keyword" else "Cosine similarity"

    def _first_meaning(self) -> str:
        return (f"{self._first_score()}, relative to the best (the name was answered without vectors)"
                if self.first == "Keyword" else f"{self._first_score()} from the vector search")

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        key = (index.row(), index.column(), int(role))
        if key not in self._cells:
            self._cells[key] = self._cell(index, role)
        return self._cells[key]

    def _cell(self, index: QModelIndex | QPersistentModelIndex, role: int):
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        item = self._rows[index.row()]
        title = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(item, title)
        if role == SortRole:
            return self._sort_value(item, title)
        if role == ChunkIdRole:
            return item.chunk.id
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return self._alignment(title)
        if role == Qt.ItemDataRole.ForegroundRole:
            return self._foreground(item, title)
        if role == Qt.ItemDataRole.FontRole and title in ("#", "Vector", "Reranked", "Δ"):
            return self._mono
        if role == ScoreBarRole and title in SCORE_COLUMNS:
            return self._bars[title][index.row()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._score_tooltip(item, title) if title in SCORE_COLUMNS else self._tooltip(item)
        return None

    def _display(self, item: ResultChunk, title: str) -> str:
        vector, reranked = self.scores(item)
        if title == "#":
            return str(self.rank_of(item))
        if title == "Δ":
            return movement(item)[0]
        if title == "Symbol":
            return symbol_text(item)
        if title == "Kind":
            return item.chunk.kind
        if title == "Location":
            return location_text(item)
        if title == "Vector":
            return format_score(vector)
        return format_score(reranked)

    def _sort_value(self, item: ResultChunk, title: str):
        vector, reranked = self.scores(item)
        return {"#": self.rank_of(item), "Δ": movement(item)[1], "Vector": vector,
                "Reranked": reranked}.get(title, self._display(item, title))

    @staticmethod
    def _alignment(title: str):
        if title in ("#", "Vector", "Reranked"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if title == "Δ":
            return int(Qt.AlignmentFlag.AlignCenter)
        return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    def _foreground(self, item: ResultChunk, title: str):
        if title == "Δ":
            return QBrush(movement_color(movement(item)[1]))
        if title == "Location" and item.stale:
            return QBrush(DOWN_COLOR)
        if title in ("Kind", "Location"):
            return QBrush(MUTED_COLOR)
        if title == "Reranked" and self.scores(item)[1] is None:
            return QBrush(MUTED_COLOR)
        return None

    def _tooltip(self, item: ResultChunk) -> str:
        """The chunk (its whole name, kind and place), then why the row is where it is."""
        named = f"{symbol_text(item)} · {item.chunk.kind} · {location_text(item)}"
        reranked = self.item_in_reranked(item)
        if reranked is None:
            return f"{named}\n{self.first} rank #{self.rank_of(item)}; not in the reranked list"
        lines = [named, rank_text(reranked)]
        if reranked.signals:
            lines.append("Why: " + why_summary(reranked))
        if item.chunk.docstring:
            lines.append(item.chunk.docstring.strip().splitlines()[0][:200])
        if item.stale:
            lines.append(f"The file was {item.stale} since it was indexed.")
        return "\n".join(lines)

    def _score_tooltip(self, item: ResultChunk, title: str) -> str:
        vector, reranked = self.scores(item)
        if title == "Vector":
            return f"{self._first_score()} {format_score(vector)} (bar: relative to the best in this list)"
        return f"Reranked score {format_score(reranked)} (bar: relative to the best in this list)" + (
            f"\n{self.legend}" if self.legend else "")

    def item_in_reranked(self, item: ResultChunk) -> ResultChunk | None:
        return item if self.side == RERANKED else self._other.get(item.chunk.id)
