"""What the bug-report strategy reads out of long questions, and how it matches an index's names."""

from __future__ import annotations

from services.core.models import Chunk
from services.retrieval.query_signals import NameTable, extract, is_long, looks_like_code

REPORT = '''caplog.get_records and caplog.clear conflict
# Description

`caplog.get_records()` gets decoupled from actual caplog records when `caplog.clear()` is called.
It is [set to the same list](https://github.com/pytest-dev/pytest/blob/28e8c85/src/_pytest/logging.py#L699)
as `caplog.records`; `LogCaptureFixture` replaces it.

```python
def test(caplog) -> None:
    verify_consistency()
```

```
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.9/site-packages/_pytest/runner.py", line 341, in from_call
    result: Optional[TResult] = func()
src/_pytest/python.py:608: in _importtestmodule
    mod = import_path(self.path)
```
'''


def test_long_reports_and_short_questions_are_told_apart():
    assert is_long(REPORT)
    assert is_long("crash\nwith a traceback")
    assert not is_long("python get first element of list")
    assert not is_long("how to read a csv file into a dict in python quickly")


def test_paths_come_from_urls_text_and_traceback_frames():
    signals = extract(REPORT)
    assert "src/_pytest/logging.py" in signals.paths  # from the GitHub URL, without the #L699 anchor
    assert "/home/me/venv/lib/python3.9/site-packages/_pytest/runner.py" in signals.paths
    assert "src/_pytest/python.py" in signals.paths
    assert not any(p.startswith("http") or "github.com" in p for p in signals.paths)


def test_traceback_frames_in_python_and_pytest_styles():
    frames = {(f.path.rsplit("/", 1)[-1], f.line, f.function) for f in extract(REPORT).frames}
    assert ("runner.py", 341, "from_call") in frames
    assert ("python.py", 608, "_importtestmodule") in frames


def test_dotted_names_and_code_like_identifiers():
    signals = extract(REPORT)
    assert "caplog.get_records" in signals.dotted and "caplog.clear" in signals.dotted
    assert not any(d.endswith(".py") for d in signals.dotted)  # file names are paths, not dotted names
    for name in ("get_records", "LogCaptureFixture", "verify_consistency"):
        assert name in signals.identifiers
    assert "records" in signals.identifiers  # a plain word, but written in backticks
    assert "decoupled" not in signals.identifiers and "decoupled" in signals.words
    names = signals.names()
    assert {"get_records", "clear", "from_call", "_importtestmodule"} <= set(names)


def test_looks_like_code():
    assert all(map(looks_like_code, ["get_records", "LogCaptureFixture", "parseHTTP", "__mro__"]))
    assert not any(map(looks_like_code, ["Description", "records", "HTTP", "_"]))


def test_parts_split_title_prose_and_code_blocks():
    signals = extract(REPORT)
    assert signals.title == "caplog.get_records and caplog.clear conflict"
    assert any("decoupled" in p for p in signals.paragraphs)
    assert not any("verify_consistency()" in p for p in signals.paragraphs)  # code stays out of prose
    assert len(signals.code_blocks) == 2 and "def test(caplog)" in signals.code_blocks[0]


def _chunk(path: str, symbol: str = "", qualified: str = "") -> Chunk:
    return Chunk(path, "python", 1, 2, "pass", symbol, qualified or symbol, "function",
                 content_hash=f"{abs(hash((path, symbol, qualified))):016d}")


def test_name_table_matches_symbols_by_rarity_and_files_by_path_or_module():
    table = NameTable([
        _chunk("src/_pytest/logging.py", "get_records", "LogCaptureFixture.get_records"),
        _chunk("src/_pytest/logging.py", "clear", "LogCaptureFixture.clear"),
        _chunk("src/_pytest/python.py", "_importtestmodule", "Module._importtestmodule"),
        _chunk("src/_pytest/runner.py", "from_call", "CallInfo.from_call"),
        *[_chunk(f"src/_pytest/m{n}.py", "clear", f"C{n}.clear") for n in range(5)],
        _chunk("testing/logging/test_fixture.py", "test_clear", "test_clear"),
    ])
    signals = extract(REPORT)
    symbols = {chunk_id.split(":")[0] + "::" + why: score for chunk_id, (score, why) in
               table.symbol_matches(signals).items()}
    assert symbols["src/_pytest/logging.py::get_records"] > symbols["src/_pytest/m0.py::clear"]  # rarer name
    assert "testing/logging/test_fixture.py::test_clear" not in symbols

    paths = table.path_matches(signals)
    assert {"src/_pytest/logging.py", "src/_pytest/python.py", "src/_pytest/runner.py"} <= set(paths)
    assert paths["src/_pytest/logging.py"][0] > paths.get("testing/logging/test_fixture.py", (0, ""))[0]
    module = table.path_matches(extract("Problem in `_pytest.runner` when a plugin fails during setup "
                                        "and the error gets lost somewhere along the way of the report"))
    assert "src/_pytest/runner.py" in module


def test_bm25_terms_favour_identifiers_and_are_capped():
    from services.retrieval.strategies.bugreport import bm25_weights
    from services.core.settings import Settings

    settings = Settings(bugreport_max_terms=6)
    weights = bm25_weights(extract(REPORT), settings)
    assert len(weights) == 6
    assert weights["get_records"] == settings.bugreport_code_term_weight
    assert all(w >= settings.bugreport_title_term_weight for w in weights.values())  # prose was cut first
    assert "decoupled" not in weights and "the" not in weights
