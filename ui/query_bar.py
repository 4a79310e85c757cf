"""Query row: question with symbol completion, strategy, result count, language and path filters."""

from __future__ import annotations

import re
from typing import cast

from PySide6.QtCore import QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox, QCompleter, QHBoxLayout, QLabel, QLineEdit, QMenu, QPushButton, QSpinBox, QToolButton,
    QVBoxLayout, QWidget,
)

from services.core.messages import MAX_QUESTION_CHARS
from services.core.models import StrategyInfo
from ui.actions import SEARCH, Place, window_action
from ui.viewmodels.strategies import step_strategy

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


PASTE_CHARS = 10 * MAX_QUESTION_CHARS  # what the question box holds (the engine's limit decides what is asked)


class HistoryEdit(QLineEdit):
    """The question box: Up and Down walk the recent questions (newest first), Alt+Down opens the
    list of recent and pinned questions, Down past the newest leaves for the results."""

    history_menu_requested = Signal()
    leave_down = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        # Qt cuts a line edit's text at 32,767 characters by default, silently: a longer bug report would be
        # asked cut short. The box takes what is pasted whole; the engine refuses one over the limit, saying so.
        self.setMaxLength(PASTE_CHARS)
        self.history: list[str] = []
        self.position = -1  # -1: the text being typed; 0: the newest question; ...
        self._draft = ""
        self._length = 0  # the text's length before the last edit
        self.textEdited.connect(self._typed)
        self.textChanged.connect(lambda text: setattr(self, "_length", len(text)))

    def set_history(self, questions: list[str]) -> None:
        self.history = list(questions)
        self.position = -1

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt API)
        popup = self.completer().popup() if self.completer() else None
        key, mods = event.key(), event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if popup is not None and popup.isVisible() or mods not in (Qt.KeyboardModifier.NoModifier,
                                                                    Qt.KeyboardModifier.AltModifier):
            super().keyPressEvent(event)
        elif key == Qt.Key.Key_Down and mods == Qt.KeyboardModifier.AltModifier:
            self.history_menu_requested.emit()
        elif key == Qt.Key.Key_Up and mods == Qt.KeyboardModifier.NoModifier:
            self.step(1)
        elif key == Qt.Key.Key_Down and mods == Qt.KeyboardModifier.NoModifier:
            if self.position == -1:
                self.leave_down.emit()
            else:
                self.step(-1)
        else:
            super().keyPressEvent(event)

    def step(self, direction: int) -> None:
        """Move through the history: +1 older, -1 newer (back to what was being typed)."""
        if not self.history:
            return
        if self.position == -1:
            self._draft = self.text()
        self.position = max(-1, min(self.position + direction, len(self.history) - 1))
        self.setText(self._draft if self.position == -1 else self.history[self.position])

    def _typed(self, text: str) -> None:
        """An edit by the user; one that adds more than a character at once (a paste) offers no completion:
        the popup would cover the rankings for a word the user did not type."""
        self.position = -1
        pasted, self._length = len(text) - self._length > 1, len(text)
        popup = self.completer().popup() if self.completer() else None
        if pasted and popup is not None:
            QTimer.singleShot(0, popup.hide)  # after the completer's own reaction to the same edit


class QueryBar(QWidget):
    submitted = Signal()
    focus_requested = Signal()  # Ctrl+L: the window puts the question box of the tab on screen in focus
    filters_changed = Signal()  # languages, path glob or result count changed by the user
    history_changed = Signal()  # recent or pinned questions changed (to be saved)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.query = HistoryEdit()
        self.query.setObjectName("queryEdit")
        self.query.setToolTip("Question (Ctrl+L). Enter runs it; Up/Down walk recent questions; "
                              "Alt+Down lists recent and pinned ones; Down leaves for the results")
        self.recent: list[str] = []
        self.pinned: list[str] = []
        self.history_menu = QMenu(self)
        self.history_menu.aboutToShow.connect(self._fill_history_menu)
        self.history_button = QToolButton()
        self.history_button.setText("History")
        self.history_button.setToolTip("Recent and pinned questions (Alt+Down in the question box)")
        self.history_button.setMenu(self.history_menu)
        self.history_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.query.history_menu_requested.connect(self.show_history_menu)
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
        self.strategy.setMinimumContentsLength(12)
        self.strategy.setToolTip("Reranking strategy (Ctrl+] next, Ctrl+[ previous)")
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 100)
        self.top_k.setValue(10)
        self.top_k.setToolTip("Number of results (changing it runs the question again)")
        self.top_k.valueChanged.connect(lambda _value: self.filters_changed.emit())
        self.top_k.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.languages_button = QToolButton()
        self.languages_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.languages_menu = QMenu(self)
        self.languages_button.setMenu(self.languages_menu)
        self.languages_button.setToolTip("Only search these languages")
        self.path_glob = QLineEdit()
        self.path_glob.setPlaceholderText("path glob, e.g. src/**/*.py")
        self.path_glob.setMinimumWidth(110)
        self.path_glob.setToolTip("Only search paths matching these globs (comma-separated); Enter applies")
        self._applied_glob = ""
        self.path_glob.editingFinished.connect(self._glob_edited)
        self.clear_filters_button = QToolButton()
        self.clear_filters_button.setObjectName("clearFilters")
        self.clear_filters_button.setAutoRaise(True)
        self.clear_filters_button.setToolTip("Clear the language and path filters of this workspace (Ctrl+Shift+Backspace)")
        self.clear_filters_button.clicked.connect(self.clear_filters)
        self.clear_filters_button.hide()
        self.search_button = QPushButton("Search")
        self.search_button.setObjectName("searchButton")
        self.search_button.setToolTip("Run the question (Enter in the question box, Ctrl+Enter anywhere)")
        self.search_button.setDefault(True)
        self.search_button.clicked.connect(self.submitted.emit)

        search_row = QHBoxLayout()
        search_row.setSpacing(6)
        search_row.addWidget(self.query, 1)
        search_row.addWidget(self.history_button)
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
            options.addSpacing(6)
        options.addWidget(self.clear_filters_button)
        options.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 4, 2, 4)
        layout.setSpacing(6)
        layout.addLayout(search_row)
        layout.addLayout(options)
        self.set_languages([])
        self._build_actions()

    def _build_actions(self) -> None:
        """The Search menu's question actions."""
        self.focus_action = window_action(self, "Focus the question", "Ctrl+L", self.focus_requested.emit,
                                          place=Place(40, SEARCH, 1, 0))
        self.run_action = window_action(self, "Run the question", "Ctrl+Return", self.submitted.emit,
                                        place=Place(50, SEARCH, 1, 1))
        self.history_action = window_action(self, "Recent and pinned questions…", "Ctrl+H", self._history_asked,
                                            "Question history: recent and pinned questions", Place(60, SEARCH, 1, 2))
        self.pin_action = window_action(self, "Pin or unpin the question", "Ctrl+D", lambda: self.toggle_pin(),
                                        place=Place(70, SEARCH, 1, 3))
        self.next_strategy_action = window_action(self, "Next strategy", "Ctrl+]", lambda: self.step_strategy(1),
                                                  place=Place(80, SEARCH, 2, 0))
        self.previous_strategy_action = window_action(self, "Previous strategy", "Ctrl+[",
                                                      lambda: self.step_strategy(-1), place=Place(90, SEARCH, 2, 1))
        self.clear_filters_action = window_action(self, "Clear filters", "Ctrl+Shift+Backspace", self.clear_filters,
                                                  place=Place(100, SEARCH, 2, 2))

    def _history_asked(self) -> None:
        self.focus_requested.emit()
        self.show_history_menu()

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

    def step_strategy(self, step: int) -> None:
        """Select the next (or previous) available strategy, wrapping around."""
        combo = self.strategy
        model = cast(QStandardItemModel, combo.model())
        available = [model.item(row).isEnabled() for row in range(combo.count())]
        row = step_strategy(available, combo.currentIndex(), step)
        if row is not None:
            combo.setCurrentIndex(row)

    # --- symbols / languages ---
    def set_symbols(self, names: list[str]) -> None:
        self.symbols.setStringList(sorted(set(names), key=str.lower))

    def set_languages(self, languages: list[str], chosen: list[str] | None = None) -> None:
        """The languages on offer; `chosen` (else the current choice) stays ticked where offered."""
        previous = set(self.selected_languages() if chosen is None else chosen)
        self.languages_menu.clear()
        for name in sorted(languages):
            action = QAction(name, self.languages_menu)
            action.setCheckable(True)
            action.setChecked(name in previous)
            action.toggled.connect(self._update_languages_text)
            action.toggled.connect(lambda _checked: self.filters_changed.emit())
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
        self._show_filters()

    # --- filters ---
    def filters_text(self) -> str:
        """The active filters in words ("" when none)."""
        parts = list(self.selected_languages())
        if self.path_glob.text().strip():
            parts.append(f"paths {self.path_glob.text().strip()}")
        return ", ".join(parts)

    def set_filters(self, languages: list[str], path_glob: str) -> None:
        """Show a workspace's own filters (without signalling a change)."""
        self.blockSignals(True)
        try:
            self.path_glob.setText(path_glob)
            self._applied_glob = path_glob.strip()
            self.set_languages(list(languages), languages)  # the full list comes with the index health
        finally:
            self.blockSignals(False)
        self._show_filters()

    def clear_filters(self) -> None:
        if not self.filters_text():
            return
        self.blockSignals(True)
        try:
            for action in self.languages_menu.actions():
                action.setChecked(False)
            self.path_glob.clear()
            self._applied_glob = ""
        finally:
            self.blockSignals(False)
        self._show_filters()
        self.filters_changed.emit()

    def _glob_edited(self) -> None:
        text = self.path_glob.text().strip()
        self._show_filters()
        if text != self._applied_glob:
            self._applied_glob = text
            self.filters_changed.emit()

    def _show_filters(self) -> None:
        text = self.filters_text()
        self.clear_filters_button.setText(f"Filtered: {text}  ✕" if text else "")
        self.clear_filters_button.setVisible(bool(text))

    # --- history ---
    def set_history(self, recent: list[str], pinned: list[str]) -> None:
        self.recent, self.pinned = list(recent), list(pinned)
        self.query.set_history(self.recent)

    def remember(self, question: str, limit: int = 50) -> None:
        self.recent = [question] + [q for q in self.recent if q != question][:limit - 1]
        self.query.set_history(self.recent)
        self.history_changed.emit()

    def toggle_pin(self, question: str | None = None) -> None:
        question = (question if question is not None else self.query.text()).strip()
        if not question:
            return
        if question in self.pinned:
            self.pinned.remove(question)
        else:
            self.pinned.insert(0, question)
        self.history_changed.emit()

    def clear_history(self) -> None:
        self.set_history([], self.pinned)
        self.history_changed.emit()

    def show_history_menu(self) -> None:
        self.history_menu.popup(self.query.mapToGlobal(self.query.rect().bottomLeft()))

    def _fill_history_menu(self) -> None:
        menu = self.history_menu
        menu.clear()
        for title, questions in (("Pinned", self.pinned), ("Recent", self.recent[:15])):
            menu.addSection(title)
            if not questions:
                menu.addAction("(none)").setEnabled(False)
            for question in questions:
                action = menu.addAction(question)
                action.triggered.connect(lambda _=False, q=question: self._choose(q))
        menu.addSeparator()
        current = self.query.text().strip()
        pin = menu.addAction("Unpin this question" if current in self.pinned else "Pin this question")
        pin.setShortcut("Ctrl+D")
        pin.setEnabled(bool(current))
        pin.triggered.connect(lambda: self.toggle_pin())
        menu.addAction("Clear recent questions").triggered.connect(self.clear_history)

    def _choose(self, question: str) -> None:
        self.query.setText(question)
        self.submitted.emit()
