"""Harder names (issue 41b): a dotted module path opens the module's file, and a bare name defined many times
lists all its definitions first as an editor's go-to-symbol does; real model and engine on a small generated
workspace, with the default and every reranking strategy."""

from __future__ import annotations

import asyncio

import pytest

from services.core.models import QueryOptions
from services.retrieval.strategies import strategy_names

RERANKING = [n for n in strategy_names() if n != "none"]

FILES = {
    "src/pkg/__init__.py": '"""The package."""\n',
    "src/pkg/nodes.py": '"""Nodes of the tree."""\n\nimport os\n\nROOT = os.sep\n\n\n'
                        'def walk(node):\n    """Every node under `node`."""\n    return [node]\n',
    "src/pkg/core/__init__.py": "",
    "src/pkg/core/dataset.py": '"""Datasets: tables of named columns."""\n\nCOLUMNS = 3\n\n\n'
                               'class Table:\n    """A table."""\n\n    def width(self):\n        return COLUMNS\n',
    "src/pkg/core/other.py": 'class Coarsen:\n    """Coarsen a dataset."""\n\n    def dataset(self):\n'
                             '        """The dataset this coarsens: a dataset of datasets."""\n        return None\n',
    "src/pkg/builders/__init__.py": "",
    "src/pkg/builders/html/__init__.py": '"""The html builder: pages from documents."""\n\n'
                                         'THEME = "basic"\n\n\nclass PageBuilder:\n    """Builds pages."""\n',
    "src/pkg/alpha.py": 'class Reader:\n    def process(self, text):\n        """Read the text into lines."""\n'
                        '        return text.splitlines()\n\n\nclass Writer:\n    def process(self, lines):\n'
                        '        """Write the lines to disk as one process."""\n        return "\\n".join(lines)\n',
    "src/pkg/beta.py": 'class Pipeline:\n    def process(self, items):\n        """Run each step of the '
                       'process over the items: process, process, process."""\n        return list(items)\n',
    "src/pkg/zeta.py": 'def process(job):\n    """Run a job."""\n    return job()\n',
    "a_tests/test_zeta.py": 'def process(job):\n    """A stand-in job runner for the tests."""\n    return None\n',
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from services.engine.service import LocalEngine

    root = tmp_path_factory.mktemp("harder")
    workspace = root / "workspace"
    for path, text in FILES.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text)
    service = LocalEngine(None, data_dir=root / "data")
    asyncio.run(service.index(workspace))
    yield service, workspace
    service.close()


def options(workspace, strategy: str) -> QueryOptions:
    return QueryOptions(workspace=str(workspace), strategy=strategy, top_k=10, use_cache=False, min_relevance=0.0)


def where(item) -> str:
    return f"{item.chunk.path}::{item.chunk.qualified_name}"


@pytest.mark.parametrize("strategy", RERANKING)
@pytest.mark.parametrize("question, path", [
    ("pkg.nodes", "src/pkg/nodes.py"),
    ("pkg.core.dataset", "src/pkg/core/dataset.py"),  # not the method `Coarsen.dataset` under pkg/core
    ("pkg.builders.html", "src/pkg/builders/html/__init__.py"),  # a package, though `.html` ends like a file
])
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_dotted_module_path_opens_the_module_first(indexed, strategy, question, path):
    service, workspace = indexed
    result = await service.query(question, options(workspace, strategy))
    top = result.results[0].chunk
    assert (top.path, top.start_line) == (path, 1), [where(r) for r in result.results[:3]]
    assert top.kind == "module"


@pytest.mark.parametrize("strategy", RERANKING)
@pytest.mark.slow  # starts a process, a server or the model: not the unit tier
async def test_a_name_defined_many_times_lists_every_definition_first_as_go_to_symbol(indexed, strategy):
    service, workspace = indexed
    result = await service.query("process", options(workspace, strategy))
    assert [where(r) for r in result.results[:5]] == ["src/pkg/zeta.py::process",  # module-level first
                                                      "a_tests/test_zeta.py::process",  # a test's after sources
                                                      "src/pkg/alpha.py::Reader.process",  # then methods by path
                                                      "src/pkg/alpha.py::Writer.process",
                                                      "src/pkg/beta.py::Pipeline.process"]
    assert "5 definitions first" in result.reading_note


def test_the_whole_dotted_name_comes_before_a_tail_matched_in_a_like_named_module(tmp_path):
    """`Parser.parse_definition` is Parser's method, not DefinitionFinder's in `parser.py`; `Variable.dtype` is not a
    `dtype` in `variables.py` (a module matches by path components, not by a substring); `Config.__init__` is not the
    package `config` (a module path matches with its case). A real SQLite catalogue."""
    from services.retrieval import names
    from services.storage.catalog import Catalog
    from tests.test_goto import chunk, commit

    catalog = Catalog(tmp_path / "manifest.sqlite")
    commit(catalog, "pycode/parser.py", [
        chunk("pycode/parser.py", "parse_definition", "DefinitionFinder.parse_definition", "method", 10, 20),
        chunk("pycode/parser.py", "parse_definition", "Parser.parse_definition", "method", 50, 60)])
    commit(catalog, "coding/variables.py", [chunk("coding/variables.py", "dtype", "_Array.dtype", "method", 5, 8)])
    commit(catalog, "core/variable.py", [chunk("core/variable.py", "dtype", "Variable.dtype", "method", 90, 95)])
    commit(catalog, "config/__init__.py", [chunk("config/__init__.py", "__init__", "__init__", "module", 1, 9)])
    commit(catalog, "config/main.py", [chunk("config/main.py", "__init__", "Config.__init__", "method", 3, 6)])

    def first(question: str) -> str:
        found = names.find(catalog, names.read(question))
        return f"{found[0].chunk.path}::{found[0].chunk.qualified_name}"

    assert first("Parser.parse_definition") == "pycode/parser.py::Parser.parse_definition"
    assert first("Variable.dtype") == "core/variable.py::Variable.dtype"
    assert first("parser.DefinitionFinder.parse_definition") == "pycode/parser.py::DefinitionFinder.parse_definition"
    assert first("Config.__init__") == "config/main.py::Config.__init__"  # not the package `config`
    assert first("config.__init__") == "config/__init__.py::__init__"  # as spelled, the package's file
    catalog.close()


def test_the_catalogue_reads_classes_and_module_level_functions_before_methods_within_its_limit(tmp_path):
    """A name defined hundreds of times as a method: the module-level function is among the rows read, first."""
    from services.storage.catalog import Catalog
    from tests.test_goto import chunk, commit

    catalog = Catalog(tmp_path / "manifest.sqlite")
    commit(catalog, "a/many.py", [chunk("a/many.py", "run", f"K{i}.run", "method", 2 * i + 1, 2 * i + 1)
                                  for i in range(100)])
    commit(catalog, "z/last.py", [chunk("z/last.py", "run", "run", "function", 1, 3)])
    found = catalog.definitions(["run"], limit=10)
    assert len(found) == 10 and (found[0].path, found[0].qualified_name) == ("z/last.py", "run")
    catalog.close()


def test_a_method_of_a_name_defined_beyond_the_catalogues_limit_is_still_found(tmp_path):
    """`Zed.run` among 600 `run` methods (the catalogue reads at most 500 definitions of a name, by path): the
    rows whose qualified name ends with `Zed.run` are asked for first."""
    from services.retrieval import names
    from services.storage.catalog import Catalog
    from tests.test_goto import chunk, commit

    catalog = Catalog(tmp_path / "manifest.sqlite")
    commit(catalog, "a/many.py", [chunk("a/many.py", "run", f"K{i}.run", "method", 2 * i + 1, 2 * i + 1)
                                  for i in range(600)])
    commit(catalog, "z/zed.py", [chunk("z/zed.py", "run", "Zed.run", "method", 5, 9)])
    found = names.find(catalog, names.read("Zed.run"))
    assert [(d.chunk.path, d.chunk.qualified_name) for d in found] == [("z/zed.py", "Zed.run")]
    assert names.find(catalog, names.read("zed.Zed.run"))[0].chunk.qualified_name == "Zed.run"
    catalog.close()
