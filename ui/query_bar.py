"""Query row: question with symbol completion, strategy, result count, language and path filters."""

from __future__ import annotations

import re

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtGui import QAction, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox, QCompleter, QHBoxLayout, QLabel, QLineEdit, QMenu, QPushButton, QSpinBox, QToolButton,
    QVBoxLayout, QWidget,
)

from services.models import StrategyInfo

StrategyNameRole = Qt.ItemDataRole.UserRole + 1
_LAST_WORD = re.compile(r"[\w.]*$")


def strategy_model(strategies: list[StrategyInfo]) -> QStandardItemModel:
    """Combo model: one item per strategy; unavailable ones disabled, the reason as tooltip."""
    model = QStandardItemModel()
    for info in strategies:
        item = QStandardItem(info.label or info.name)
        item.setData(info.name, StrategyNameRole)
        if info.available:
            item.setToolTip(info.description + (f"\n{info.reason}" if info.reason else ""))
        else:
            item.setFlags(item.flags() & ~(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable))
            item.setToolTip(f"Unavailable: {info.reason}" if info.reason else "Unavailable")
            item.setText(f"{info.label or info.name} (unavailable)")
        model.appendRow(item)
    return model


class WordCompleter(QCompleter):
    """Completes the word under the cursor (the last word), keeping the rest of the question."""

    def splitPath(self, path: str) -> list[str]:  # noqa: N802 (Qt API)
        return [_LAST_WORD.search(path).group(0)]

    def pathFromIndex(self, index) -> str:  # noqa: N802 (Qt API)
        widget = self.widget()
        text = widget.text() if isinstance(widget, QLineEdit) else ""
        head = text[: _LAST_WORD.search(text).start()]
        return head + str(index.data())


class QueryBar(QWidget):
    submitted = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.query = QLineEdit()
        self.query.setObjectName("queryEdit")
        self.query.setPlaceholderText("Ask about the code… e.g. “where are notes saved to disk”")
        self.query.setClearButtonEnabled(True)
        self.symbols = QStringListModel(self)
        self.completer = WordCompleter(self.symbols, self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchStartsWith)
        self.completer.setModelSorting(QCompleter.ModelSorting.CaseInsensitivelySortedModel)
        self.completer.setMaxVisibleItems(12)
        self.query.setCompleter(self.completer)
        self.query.returnPressed.connect(self.submitted.emit)

        self.strategy = QComboBox()
        self.strategy.setMinimumContentsLength(18)
        self.strategy.setToolTip("Reranking strategy")
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 100)
        self.top_k.setValue(10)
        self.top_k.setToolTip("Number of results")
        self.top_k.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.languages_button = QToolButton()
        self.languages_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.languages_menu = QMenu(self)
        self.languages_button.setMenu(self.languages_menu)
        self.languages_button.setToolTip("Only search these languages")
        self.path_glob = QLineEdit()
        self.path_glob.setPlaceholderText("path glob, e.g. src/**/*.py")
        self.path_glob.setMinimumWidth(170)
        self.path_glob.returnPressed.connect(self.submitted.emit)
        self.search_button = QPushButton("Search")
        self.search_button.setObjectName("searchButton")
        self.search_button.setDefault(True)
        self.search_button.clicked.connect(self.submitted.emit)

        search_row = QHBoxLayout()
        search_row.setSpacing(6)
        search_row.addWidget(self.query, 1)
        search_row.addWidget(self.search_button)
        options = QHBoxLayout()
        options.setSpacing(6)
        for label, widget in (("Strategy", self.strategy), ("Results", self.top_k),
                              ("Languages", self.languages_button), ("Paths", self.path_glob)):
            caption = QLabel(label)
            caption.setObjectName("optionLabel")
            caption.setBuddy(widget)
            options.addWidget(caption)
            options.addWidget(widget)
            options.addSpacing(10)
        options.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 4, 2, 4)
        layout.setSpacing(6)
        layout.addLayout(search_row)
        layout.addLayout(options)
        self.set_languages([])

    # --- strategies ---
    def set_strategies(self, strategies: list[StrategyInfo], preferred: str = "") -> None:
        model = strategy_model(strategies)
        self.strategy.setModel(model)
        names = [info.name for info in strategies]
        available = [info.name for info in strategies if info.available]
        choice = preferred if preferred in available else (available[0] if available else "")
        if choice:
            self.strategy.setCurrentIndex(names.index(choice))

    def strategy_name(self) -> str:
        return self.strategy.currentData(StrategyNameRole) or "none"

    def select_strategy(self, name: str) -> bool:
        model = self.strategy.model()
        for row in range(model.rowCount()):
            item = model.item(row) if isinstance(model, QStandardItemModel) else None
            if item is not None and item.data(StrategyNameRole) == name and item.isEnabled():
                self.strategy.setCurrentIndex(row)
                return True
        return False

    # --- symbols / languages ---
    def set_symbols(self, names: list[str]) -> None:
        self.symbols.setStringList(sorted(set(names), key=str.lower))

    def set_languages(self, languages: list[str]) -> None:
        previous = set(self.selected_languages())
        self.languages_menu.clear()
        for name in sorted(languages):
            action = QAction(name, self.languages_menu)
            action.setCheckable(True)
            action.setChecked(name in previous)
            action.toggled.connect(self._update_languages_text)
            self.languages_menu.addAction(action)
        self.languages_button.setEnabled(bool(languages))
        self._update_languages_text()

    def selected_languages(self) -> tuple[str, ...]:
        return tuple(a.text() for a in self.languages_menu.actions() if a.isChecked())

    def _update_languages_text(self, *_args) -> None:
        chosen = self.selected_languages()
        if not chosen:
            self.languages_button.setText("All languages")
        elif len(chosen) <= 2:
            self.languages_button.setText(", ".join(chosen))
        else:
            self.languages_button.setText(f"{len(chosen)} languages")
