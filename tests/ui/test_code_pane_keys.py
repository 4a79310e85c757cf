"""Issue 52, point 3, on the real window, the real engine and the sample workspace: the code pane as an
editor's read-only view. A keyboard caret (Down moves it), F12 and Ctrl+click on a name land on its
definition through the engine's go to symbol, Back returns to the caret and view left, Ctrl+F finds the next
and previous match, Open in editor opens at the caret's line."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtGui import QTextCursor

from tests.ui.test_desk import press, recorder
from tests.ui.test_layout import indexed, window  # noqa: F401 (the module's indexed sample, its window)
from ui.editor import ENVIRONMENT


def open_symbol(qtbot, window, name: str) -> None:
    """Ctrl+T, the name, Enter: the definition in the code pane."""
    window.finder.symbol_action.trigger()
    qtbot.keyClicks(window.finder.filter, name)
    qtbot.waitUntil(lambda: window.finder.list.count() > 0 and not window.finder.runner.is_running("goto"))
    qtbot.keyClick(window.finder.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.code.item is not None and window.code.item.chunk.qualified_name == name)


def caret_on(editor, text: str, offset: int = 0) -> int:
    """Put the caret on the first `text` of the pane (`offset` characters into it); its line."""
    found = editor.document().find(text)
    assert not found.isNull(), text
    cursor = QTextCursor(found)
    cursor.setPosition(found.selectionStart() + offset)
    editor.setTextCursor(cursor)
    return editor.first_line + cursor.blockNumber()


def caret_line(editor) -> int:
    return editor.first_line + editor.textCursor().blockNumber()


def test_the_arrows_move_a_caret_and_f12_goes_to_the_definition_and_back(qtbot, window):
    open_symbol(qtbot, window, "SearchEngine.__init__")
    code, editor = window.code, window.code.editor
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    line = caret_line(editor)
    qtbot.keyClick(editor, Qt.Key.Key_Down)
    assert caret_line(editor) == line + 1  # a caret, not a scroll
    used = caret_on(editor, "store: NoteStore", offset=9)
    top = editor.verticalScrollBar().value()
    qtbot.keyClick(editor, Qt.Key.Key_F12)
    qtbot.waitUntil(lambda: code.item.chunk.qualified_name == "NoteStore", timeout=30_000)
    assert code.item.chunk.path == "notes/store.py" and caret_line(editor) == code.item.chunk.start_line
    assert code.back_action.isEnabled()

    press(qtbot, window, "Alt+Left")  # back where the reader was: the file, the caret, the view
    qtbot.waitUntil(lambda: code.item.chunk.qualified_name == "SearchEngine.__init__")
    assert caret_line(editor) == used and editor.verticalScrollBar().value() == top

    rect = editor.cursorRect(editor.textCursor())  # Ctrl+click on the same name
    qtbot.mouseClick(editor.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ControlModifier,
                     rect.center())
    qtbot.waitUntil(lambda: code.item.chunk.qualified_name == "NoteStore", timeout=30_000)

    caret_on(editor, "class NoteStore")  # a name with no definition is said, the pane stays
    caret_on(editor, "self")
    qtbot.keyClick(editor, Qt.Key.Key_F12)
    qtbot.waitUntil(lambda: "No definition of self" in window.messages.text(), timeout=30_000)
    assert code.item.chunk.qualified_name == "NoteStore"


def test_ctrl_f_finds_the_next_and_previous_match_in_the_file(qtbot, window):
    open_symbol(qtbot, window, "SearchEngine.score")
    editor, bar = window.code.editor, window.code.find_bar
    text = editor.toPlainText()
    editor.setFocus()
    start = caret_on(editor, "def score")
    qtbot.keyClick(editor, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible() and bar.text.hasFocus()
    qtbot.keyClicks(bar.text, "keywords")
    total = text.count("keywords")
    assert total >= 3
    first = editor.textCursor().selectionStart()
    assert editor.textCursor().selectedText() == "keywords" and first >= text.index("def score")
    assert bar.count.text() == f"{text[:first].count('keywords') + 1} of {total}"
    qtbot.keyClick(bar.text, Qt.Key.Key_Return)  # the next one
    second = editor.textCursor().selectionStart()
    assert second == text.index("keywords", first + 1)
    qtbot.keyClick(bar.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # back to the first
    assert editor.textCursor().selectionStart() == first
    qtbot.keyClick(bar.text, Qt.Key.Key_Escape)
    assert not bar.isVisible() and editor.hasFocus() and caret_line(editor) >= start


def test_open_in_editor_opens_at_the_carets_line(qtbot, window, tmp_path, monkeypatch):
    script, record = recorder(tmp_path, "fake-editor")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(script))
    window.editor_settings.set_editor(ENVIRONMENT)
    open_symbol(qtbot, window, "SearchEngine.score")
    editor = window.code.editor
    line = caret_on(editor, "return")
    assert line != window.code.item.chunk.start_line
    window.code.open_button.click()
    qtbot.waitUntil(record.exists, timeout=15_000)
    assert record.read_text().splitlines()[0] == f"+{line}"


def test_ctrl_f12_lists_the_files_chunks_and_goes_to_one(qtbot, window, indexed):  # noqa: F811
    service, _ = indexed
    open_symbol(qtbot, window, "SearchEngine.score")
    code, outline = window.code, window.outline
    code.editor.setFocus()
    qtbot.waitUntil(code.editor.hasFocus)
    qtbot.keyClick(code.editor, Qt.Key.Key_F12, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(outline.isVisible, timeout=30_000)
    catalog = service.workspace_index(window.workspace).catalog()
    chunks = sorted(catalog.chunks(path="notes/search.py"), key=lambda c: c.start_line)
    rows = outline.rows()  # every chunk the index has for the file, in file order, each at its line
    assert len(rows) == len(chunks) and [int(row.split()[0]) for row in rows] == [c.start_line for c in chunks]
    assert "SearchEngine.search · method" in " ".join(rows)
    qtbot.keyClicks(outline.filter, "search")
    qtbot.keyClick(outline.filter, Qt.Key.Key_Down)
    qtbot.keyClick(outline.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not outline.isVisible() and code.item.chunk.qualified_name != "SearchEngine.score")
    assert code.item.chunk.path == "notes/search.py"
    assert caret_line(code.editor) == code.item.chunk.start_line and code.back_action.isEnabled()


class TipsShown(QObject):
    """The text of every tooltip shown (Qt's tip label, as it appears): a tip that something hides again at
    once (a focus change anywhere in the app does) was still shown."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt API)
        if event.type() == QEvent.Type.Show and watched.objectName() == "qtooltip_label":
            self.texts.append(watched.text())
        return False


def test_the_mouse_resting_on_a_name_shows_its_signature_and_docstring(qtbot, window):
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from ui.viewmodels.goto import hover_text

    open_symbol(qtbot, window, "SearchEngine.__init__")
    editor = window.code.editor
    caret_on(editor, "store: NoteStore", offset=9)
    where = editor.cursorRect(editor.textCursor()).center()
    tips = TipsShown()
    QApplication.instance().installEventFilter(tips)
    try:
        QTest.mouseMove(editor.viewport(), where + QPoint(0, 3 * editor.fontMetrics().height()))  # Qt drops a
        QTest.mouseMove(editor.viewport(), where)  # move to where the mouse already is (an earlier click's)
        # the same lookup as F12's, given F12's time under a loaded CI
        qtbot.waitUntil(lambda: any("class NoteStore" in text for text in tips.texts), timeout=30_000)
    finally:
        QApplication.instance().removeEventFilter(tips)
    assert any("notes/store.py:" in text for text in tips.texts)
    chunk = window.code.item.chunk
    assert hover_text(window.code.item).startswith(chunk.content.split("\n")[0].strip()[:10])


def test_alt_f12_peeks_at_the_definition_under_the_caret_and_escape_leaves_the_place(qtbot, window):
    open_symbol(qtbot, window, "SearchEngine.__init__")
    code, editor = window.code, window.code.editor
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)
    line = caret_on(editor, "store: NoteStore", offset=9)
    qtbot.keyClick(editor, Qt.Key.Key_F12, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(code.peek.isVisible, timeout=30_000)
    assert "class NoteStore" in code.peek.code.toPlainText() and "notes/store.py:" in code.peek.title.text()
    assert code.item.chunk.qualified_name == "SearchEngine.__init__"  # the pane stayed where it was
    qtbot.keyClick(code.peek.code, Qt.Key.Key_Escape)
    assert not code.peek.isVisible() and caret_line(editor) == line

    qtbot.keyClick(editor, Qt.Key.Key_F12, Qt.KeyboardModifier.AltModifier)  # Enter in the peek goes there
    qtbot.waitUntil(code.peek.isVisible, timeout=30_000)
    qtbot.keyClick(code.peek.code, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: code.item.chunk.qualified_name == "NoteStore")
    assert not code.peek.isVisible() and code.back_action.isEnabled()


def test_breadcrumbs_follow_the_caret_and_a_step_opens_its_class(qtbot, window):
    open_symbol(qtbot, window, "SearchEngine.score")
    code, editor = window.code, window.code.editor
    caret_on(editor, "def score")
    qtbot.waitUntil(lambda: code.breadcrumb_texts() == ["search.py", "SearchEngine", "score"], timeout=30_000)
    qtbot.waitUntil(lambda: code.file_chunks[0] == "notes/search.py")  # the file's chunks arrived
    code.whole_file.setChecked(True)  # the whole file: the caret in another method names that one
    caret_on(editor, "def search")
    qtbot.waitUntil(lambda: code.breadcrumb_texts() == ["search.py", "SearchEngine", "search"])
    caret_on(editor, "class SearchEngine")
    qtbot.waitUntil(lambda: code.breadcrumb_texts()[:2] == ["search.py", "SearchEngine"])
    code.breadcrumbs.linkActivated.emit("1")  # the class's step opens the class
    qtbot.waitUntil(lambda: code.item.chunk.qualified_name == "SearchEngine")
    code.whole_file.setChecked(False)
