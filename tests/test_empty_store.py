"""A vector store that lost its vectors is not an empty answer (issue 31, item 3): a query over an index
whose store folder is present but empty says so, in every face's result and per workspace in a
multi-workspace answer. Real Chroma, real model, the sample workspace."""

from __future__ import annotations

import shutil

import pytest

from app.render import query_text
from app.render import mcp_json
from services.core.models import QueryOptions
from services.engine.service import LocalEngine
from services.storage.vector_store import forget_client
from tests.conftest import copy_sample

pytestmark = pytest.mark.slow  # starts a process, a server or the model: not the unit tier


@pytest.fixture(scope="module")
def emptied(tmp_path_factory):
    import asyncio

    root = tmp_path_factory.mktemp("empty-store")
    whole, emptied = copy_sample(root / "whole"), copy_sample(root / "emptied")
    service = LocalEngine(data_dir=root / "data")
    asyncio.run(service.index(whole))
    asyncio.run(service.index(emptied))
    folder = service.workspace_index(emptied).folder / "chroma"
    service.close()
    for entry in folder.iterdir():  # the folder stays, its contents are gone
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    forget_client(folder)  # as a new process would, open the folder afresh
    service = LocalEngine(data_dir=root / "data")
    yield service, whole, emptied
    service.close()


async def test_a_query_over_a_store_without_vectors_says_so(emptied):
    service, _, workspace = emptied
    result = await service.query("save a note to disk", QueryOptions(workspace=str(workspace), use_cache=False, strategy="none"))
    assert "vectors are missing" in result.warning and "index --full" in result.warning
    assert result.chunks_with_vectors == 0
    assert "warning: the vector store holds 0 vectors" in query_text(result)
    assert "vectors are missing" in mcp_json("search", result)["warning"]


async def test_a_several_workspace_answer_names_the_workspace_without_vectors(emptied):
    service, whole, workspace = emptied
    result = await service.query_many("save a note to disk", [str(whole), str(workspace)],
                                      QueryOptions(workspace=str(whole), use_cache=False, strategy="none"))
    assert set(result.warnings) == {str(workspace)}
    assert result.results and {h.workspace for h in result.results} == {str(whole)}
