"""The code graph (issue 35): who uses a definition and what it uses, over a real indexed workspace, kept
fresh by the same run that re-indexes an edit, and filled into an index made before it without
re-embedding. Through every engine: tests/contract."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from services.core.errors import QueryError
from services.core.models import Chunk
from services.engine.service import LocalEngine
from services.indexing.chunking.graph import file_uses
from services.storage.catalog import Catalog, FileRecord

HELPERS = '''\
"""Helpers."""


def normalise(text):
    return text.strip().lower()


class Base:
    def run(self):
        return normalise("x")
'''

FIRST = '''\
from pkg.helpers import Base, normalise


class Loader(Base):
    def load(self, raw):
        return normalise(raw)
'''

SECOND = '''\
import pkg.helpers as helpers
from pkg.helpers import normalise


def clean_all(items):
    return [normalise(item) for item in items]


def other():
    return helpers.normalise("y")
'''

NOTES = '''\
"""Notes: normalise lower-cases its text."""

NAME = "normalise"  # the helper's name, as a string
normaliser = None  # a longer word holding it: no mention
'''

SCRIPT = '''\
function normaliseName(name) { return name.trim(); }

export function greet(person) {
  return "hi " + normaliseName(person.name);
}
'''


def write(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """(service, workspace): a small generated repo indexed once; tests that edit it work on their own copy."""
    root = tmp_path_factory.mktemp("graph")
    workspace = write(root / "workspace", {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/first.py": FIRST,
                                           "pkg/second.py": SECOND, "pkg/notes.py": NOTES, "web/names.js": SCRIPT})
    service = LocalEngine(data_dir=root / "data")
    asyncio.run(service.index(workspace))
    yield service, workspace
    service.close()


def where(answer) -> list[tuple[str, int, str, str]]:
    return [(g.path, link.line, link.how, link.qualified_name) for g in answer.files for link in g.links]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_function_called_from_two_files_lists_both_callers_with_their_enclosing_function(repo):
    service, workspace = repo
    answer = await service.references("normalise", workspace)
    assert [(t.path, t.start_line) for t in answer.targets] == [("pkg/helpers.py", 4)]
    assert [g.path for g in answer.files] == ["pkg/first.py", "pkg/helpers.py", "pkg/notes.py", "pkg/second.py"]
    found = where(answer)
    assert ("pkg/first.py", 6, "call", "Loader.load") in found and ("pkg/first.py", 1, "import", "first") in found
    assert ("pkg/second.py", 6, "call", "clean_all") in found
    assert ("pkg/second.py", 10, "call", "other") in found  # helpers.normalise(...)
    assert ("pkg/helpers.py", 10, "call", "Base.run") in found
    assert not any(line == 4 for path, line, *_ in found if path == "pkg/helpers.py")  # not its own definition


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_mentions_in_docstrings_comments_and_strings_follow_the_code_uses_as_grep_w_finds_them(repo):
    """As an editor's "usages in comments and strings": the lines `grep -w normalise` finds that are not code
    uses, listed as "text" after the code uses of their file; a longer word and the definition are not."""
    service, workspace = repo
    found = where(await service.references("normalise", workspace))
    assert [(line, how) for path, line, how, _ in found if path == "pkg/notes.py"] == [(1, "text"), (3, "text")]
    assert all(how != "text" for path, _line, how, _ in found if path != "pkg/notes.py")
    assert ("pkg/notes.py", 3, "text", "notes") in found  # with the chunk that holds it (the module)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_what_a_method_uses_are_the_definitions_it_calls_grouped_by_their_file(repo):
    service, workspace = repo
    answer = await service.uses("Loader.load", workspace)
    assert [(t.path, t.qualified_name) for t in answer.targets] == [("pkg/first.py", "Loader.load")]
    assert [(g.path, [(link.qualified_name, link.line, link.lines) for link in g.links]) for g in answer.files] == [
        ("pkg/helpers.py", [("normalise", 4, (6,))])]
    loader = await service.uses("Loader", workspace)  # a base class is a use
    assert ("pkg/helpers.py", "Base", "base") in {(g.path, link.qualified_name, link.how)
                                                  for g in loader.files for link in g.links}


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_name_in_another_language(repo):
    service, workspace = repo
    answer = await service.references("normaliseName", workspace)
    assert where(answer) == [("web/names.js", 4, "call", "greet")]
    uses = await service.uses("greet", workspace)
    assert [(link.path, link.qualified_name) for g in uses.files for link in g.links] == [
        ("web/names.js", "normaliseName")]


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_unknown_names_and_bad_input_get_a_clear_message(repo):
    service, workspace = repo
    missing = await service.references("Frobnicate", workspace)
    assert not missing.files and missing.message == "No symbol named 'Frobnicate' in the index."
    assert (await service.uses("Frobnicate", workspace)).message == "No definition named 'Frobnicate' in the index."
    outside = await service.references("strip", workspace)  # a library's name: its uses, said to be so
    assert where(outside) == [("pkg/helpers.py", 5, "call", "normalise")] and "not defined in the indexed files" in outside.message
    with pytest.raises(QueryError, match="empty"):
        await service.references("  ", workspace)


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_an_edit_removing_a_call_updates_references_in_the_same_run(tmp_path):
    workspace = write(tmp_path / "workspace", {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                               "pkg/first.py": FIRST, "pkg/second.py": SECOND})
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        (workspace / "pkg/second.py").write_text("def clean_all(items):\n    return list(items)\n")
        await service.index(workspace)
        answer = await service.references("normalise", workspace)
        assert "pkg/second.py" not in [g.path for g in answer.files] and "pkg/first.py" in [g.path for g in answer.files]
        (workspace / "pkg/first.py").unlink()
        await service.index(workspace)
        assert [g.path for g in (await service.references("normalise", workspace)).files] == ["pkg/helpers.py"]
    finally:
        service.close()


OLDER_GRAPHS = {  # what an index made before the graph, or with its first layout (a name per row), holds
    "none": ["DROP TABLE refs", "DROP TABLE ref_names", "DROP TABLE ref_uses", "DELETE FROM meta WHERE key = 'graph'"],
    "a name per row": ["DROP TABLE refs", "DROP TABLE ref_names", "DROP TABLE ref_uses", "CREATE TABLE refs (name TEXT NOT NULL, "
                       "file INTEGER NOT NULL, uses TEXT NOT NULL, PRIMARY KEY (name, file)) WITHOUT ROWID",
                       "INSERT INTO refs SELECT 'normalise', rowid, '1c' FROM files", "UPDATE meta SET value = '2' "
                       "WHERE key = 'graph'"]}


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
@pytest.mark.parametrize("older", OLDER_GRAPHS)
async def test_an_index_from_before_the_graph_gets_it_without_re_embedding(tmp_path, older):
    workspace = write(tmp_path / "workspace", {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                               "pkg/first.py": FIRST})
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        manifest = next((tmp_path / "data").rglob("manifest.sqlite"))
        service.close()
        with sqlite3.connect(manifest) as db:
            for statement in OLDER_GRAPHS[older]:
                db.execute(statement)
        service = LocalEngine(data_dir=tmp_path / "data")
        before = await service.references("normalise", workspace)
        assert not before.files and "not built yet" in before.message
        health = await service.health(workspace)  # search is whole; health says what one more run adds
        assert health.state == "ready" and "find references needs one more index run" in health.message
        report = await service.index(workspace)
        assert report.chunks_embedded == 0 and not report.rebuilt_reason
        assert [g.path for g in (await service.references("normalise", workspace)).files] == [
            "pkg/first.py", "pkg/helpers.py"]
        assert "find references" not in (await service.health(workspace)).message
    finally:
        service.close()


def test_the_catalogue_keeps_no_free_pages_after_files_are_removed(tmp_path):
    catalog = Catalog(tmp_path / "manifest.sqlite")
    for n in range(200):
        path = f"f{n}.py"
        catalog.commit_file(FileRecord(path, "cd" * 8, 1, 1, "python"), [chunk(path, f"name_{n}")],
                            {f"name_{n}": "1c", "shared": "2c", f"local_{n}_" + "x" * 200: "3n"})
    catalog.compact()
    size = (tmp_path / "manifest.sqlite").stat().st_size
    for count in (40, 150):  # some removals (incremental vacuum), then most files (VACUUM)
        for n in range(count):
            catalog.remove_file(f"f{n}.py")
        catalog.compact()
        with sqlite3.connect(tmp_path / "manifest.sqlite") as db:
            assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
        assert (tmp_path / "manifest.sqlite").stat().st_size < size
        size = (tmp_path / "manifest.sqlite").stat().st_size
    assert [path for _name, path, _uses in catalog.graph.uses_of(["shared"])] == [f"f{n}.py" for n in sorted(
        range(150, 200), key=str)]
    assert catalog.graph.uses_in("f199.py") == [("local_199_" + "x" * 200, "3n"), ("name_199", "1c"), ("shared", "2c")]
    catalog.close()


def chunk(path: str, name: str) -> Chunk:
    return Chunk(path=path, language="python", start_line=1, end_line=2, content=f"def {name}():\n    return 1\n",
                 symbol=name, qualified_name=name, kind="function", content_hash="ab" * 8, file_hash="cd" * 8)


def test_the_kinds_of_use_in_python():
    uses = file_uses("from a.b import thing\nclass K(Parent):\n    def m(self, arg=1):\n"
                     "        return thing(arg).value.method(key=2)\n", "python")
    assert {name: [(u.line, u.kind, u.module or u.receiver) for u in found] for name, found in uses.items()} == {
        "thing": [(1, "i", "a.b"), (4, "c", "")], "Parent": [(2, "b", "")], "value": [(4, "a", "?")],
        "method": [(4, "c", "?")], "arg": [(3, "l", ""), (4, "n", "")]}  # a parameter is bound, then read


def test_a_quoted_annotation_is_a_type_use():
    uses = file_uses('def run(session: "Session", hook: "Callable[[Config], None]") -> "main.Session":\n'
                     '    """Session is not used here."""\n', "python")
    assert [(u.line, u.kind) for u in uses["Session"]] == [(1, "t")] and "Config" not in uses


RUNNER = '''\
from pkg.helpers import normalise
from pkg import tools


def run_all(items):
    step(items)
    items.reload()
    tools.prepare(items)
    return normalise(items)
'''

TOOLS = '''\
def prepare(items):
    return items
'''

TEST_UTIL = '''\
def step(items):
    return items


class FakeItems:
    def reload(self):
        return None


def prepare(items):
    return None
'''


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_uses_are_resolved_through_the_file_s_imports_never_by_name_alone(tmp_path):
    """"Uses" lists what the code's imports and its own file bind: a helper of the tests with the same name
    as a called function, or a method of an unrelated class, is not listed by name alone (issue 40)."""
    workspace = write(tmp_path / "workspace", {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS,
                                               "pkg/tools.py": TOOLS, "pkg/runner.py": RUNNER,
                                               "tests/util.py": TEST_UTIL})
    service = LocalEngine(data_dir=tmp_path / "data")
    try:
        await service.index(workspace)
        answer = await service.uses("run_all", workspace)
    finally:
        service.close()
    listed = {(g.path, link.qualified_name) for g in answer.files for link in g.links}
    assert ("pkg/helpers.py", "normalise") in listed  # from pkg.helpers import normalise
    assert ("pkg/tools.py", "prepare") in listed  # tools.prepare, through `from pkg import tools`
    assert not any(path.startswith("tests/") for path, _name in listed), listed  # step, reload, the other prepare


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_messages_name_a_chunk_by_its_definition_never_by_its_raw_id(repo):
    """The window asks by chunk id; what it shows names the definition (issue 40: no raw chunk ids)."""
    from services.core.models import QueryOptions

    service, workspace = repo
    result = await service.query("normalise text strip lower", QueryOptions(workspace=str(workspace), top_k=10, strategy="none"))
    chunk = next(r.chunk for r in result.results if r.chunk.qualified_name == "normalise")
    answer = await service.uses(chunk.id, workspace)
    assert not answer.files and "'normalise' uses no definition" in answer.message
    assert chunk.id not in answer.message


PLUGIN_CONFIG = '''\
class Config:
    def getoption(self, name):
        return name

    def run(self):
        return None


class Parser:
    def run(self):
        return None


class FixtureRequest:
    @property
    def config(self):
        return Config()


def prepare(items):
    return items
'''

PLUGIN_MAIN = '''\
from pkg.config import Config, FixtureRequest, prepare


def myproj_configure(config):
    config.getoption("x")


def main(config):
    verbose = config.getoption("verbose")
    config.run()
    config.hook.myproj_configure(config=config)
    prepare = verbose
    return prepare, FixtureRequest
'''

HOOKSPEC = '''\
hookspec = object()


@hookspec
def myproj_configure(config):
    """Called once the configuration is read."""
'''

HOOKIMPL = '''\
from pkg import hookimpl


@hookimpl
def myproj_configure(config):
    return None
'''


def long_class() -> str:
    """A class past max_chunk_lines (150): its own chunk is its header, its methods are chunks apart."""
    methods = "".join(f"\n    def step_{n}(self, items):\n        \"\"\"Step {n}.\n\n        Does little.\n        \"\"\"\n"
                      f"        return items\n" for n in range(30))
    return (f"from pkg.config import prepare\n\n\nclass Session:\n    \"\"\"A long class.\"\"\"\n{methods}"
            "\n    def collect(self, items):\n        return prepare(self.step_1(items))\n")


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugins")
    workspace = write(root / "workspace", {
        "pkg/__init__.py": "hookimpl = object()\n", "pkg/config.py": PLUGIN_CONFIG, "pkg/main.py": PLUGIN_MAIN,
        "pkg/hookspec.py": HOOKSPEC, "pkg/plugin_a.py": HOOKIMPL, "tests/conftest.py": HOOKIMPL,
        "pkg/session.py": long_class()})
    service = LocalEngine(data_dir=root / "data")
    asyncio.run(service.index(workspace))
    yield service, workspace
    service.close()


def listed(answer) -> dict[tuple[str, str], tuple[str, str]]:
    return {(link.path, link.qualified_name): (link.how, link.kind) for g in answer.files for link in g.links}


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_parameter_or_a_local_is_never_a_use_and_an_ambiguous_member_is_left_out(plugins):
    """Issue 52: `config` (a parameter) is not the property FixtureRequest.config; `prepare` assigned in the
    function is its local, not the imported function; `config.run()` on an object of unknown class, with
    two `run` methods to choose from, lists neither; `config.getoption` has one candidate: listed."""
    service, workspace = plugins
    found = listed(await service.uses("main", workspace))
    assert ("pkg/config.py", "FixtureRequest.config") not in found, found
    assert ("pkg/config.py", "prepare") not in found, found
    assert ("pkg/config.py", "Config.run") not in found and ("pkg/config.py", "Parser.run") not in found, found
    assert found[("pkg/config.py", "Config.getoption")] == ("call", "method")
    assert ("pkg/config.py", "FixtureRequest") in found  # the imported class the function reads
    used_by = await service.references("FixtureRequest.config", workspace)
    assert [how for *_, how, _name in where(used_by) if how != "text"] == [], where(used_by)  # `config` params


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_called_hook_lists_its_specification_and_implementations_as_such(plugins):
    """`config.hook.myproj_configure(...)` calls every implementation of the hook: they are listed as hook
    implementations (the one in the caller's own file too), never as the one function it calls."""
    service, workspace = plugins
    found = listed(await service.uses("main", workspace))
    hooks = {key: value for key, value in found.items() if key[1] == "myproj_configure"}
    assert hooks == {("pkg/hookspec.py", "myproj_configure"): ("hook", "hook specification"),
                     ("pkg/main.py", "myproj_configure"): ("hook", "hook implementation"),
                     ("pkg/plugin_a.py", "myproj_configure"): ("hook", "hook implementation"),
                     ("tests/conftest.py", "myproj_configure"): ("hook", "hook implementation")}


@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_long_class_uses_what_its_methods_use_never_its_own_methods(plugins):
    """A class past max_chunk_lines is indexed as its header and its methods: what it uses is what they use."""
    service, workspace = plugins
    answer = await service.uses("Session", workspace)
    found = listed(answer)
    assert ("pkg/config.py", "prepare") in found and "uses no definition" not in answer.message
    assert not any(name.startswith("Session.") for _path, name in found), found
