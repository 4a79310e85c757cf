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
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    from services.engine.service import KnowledgeService

    root = tmp_path_factory.mktemp("harder")
    workspace = root / "workspace"
    for path, text in FILES.items():
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text(text)
    service = KnowledgeService(None, data_dir=root / "data")
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
    assert [where(r) for r in result.results[:4]] == ["src/pkg/zeta.py::process",  # module-level first
                                                      "src/pkg/alpha.py::Reader.process",  # then methods by path
                                                      "src/pkg/alpha.py::Writer.process",
                                                      "src/pkg/beta.py::Pipeline.process"]
    assert "4 definitions first" in result.reading_note
