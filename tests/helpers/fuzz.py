"""Requests generated from the faces' own schemas, sent to a real server: REST from its OpenAPI document
(schemathesis), MCP from each tool's input schema (schemathesis too, tools_openapi). A 5xx, a transport error or no
answer within HANG_SECONDS is a finding; everything else (2xx, 4xx, a tool error) is the server saying no
in words. Used by tests/test_fuzz_faces.py (a few examples) and benchmarks/fuzz_faces.py (many)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

import httpx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis import strategies as st

HANG_SECONDS = 30.0
SUITE_EXAMPLES = 3  # per operation and generation mode: the suite's bounded run
# (the REST routes that stream events: their status and headers are checked, the stream is not read)
STREAMING = "text/event-stream"
KNOWN_FILE = "notes/store.py"  # a file of the sample workspace: "path" is it half the time


# Examples per operation (and mode): KE_FUZZ_EXAMPLES for the long run, else the suite's few. Taken out of
# the environment: the server it starts refuses a KE_ setting it does not know.
EXAMPLES = int(os.environ.pop("KE_FUZZ_EXAMPLES", SUITE_EXAMPLES))


def examples() -> int:
    return EXAMPLES


@dataclass
class Tally:
    """What one face answered: requests sent, and the findings (5xx / transport errors, hangs)."""
    face: str
    requests: int = 0
    answered: dict[str, int] = field(default_factory=dict)  # "2xx", "4xx" (REST); "result", "tool error", "refused" (MCP)
    server_errors: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        return {"face": self.face, "requests": self.requests, **dict(sorted(self.answered.items())),
                "5xx or transport error": len(self.server_errors), "hangs": len(self.hangs)}

    def saw(self, kind: str) -> None:
        self.answered[kind] = self.answered.get(kind, 0) + 1


def fuzz_settings(count: int):
    """Deterministic (derandomized), no shrinking (each example is a real request), no example database."""
    return settings(max_examples=count, derandomize=True, deadline=None, database=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


# --- REST ---
def rest_operations(doc: dict) -> list:
    import schemathesis

    return [result.ok() for result in schemathesis.openapi.from_dict(doc).get_all_operations()]


def fuzz_rest(url: str, doc: dict, workspace_id: str, count: int) -> Tally:
    """Every operation of the OpenAPI document, `count` valid and `count` invalid requests each; a request
    for a workspace is for the registered one half the time (else for whatever id was generated), and
    then its "path" (a query parameter) is a file of it."""
    from schemathesis import GenerationMode

    tally = Tally("rest")
    with httpx.Client(timeout=HANG_SECONDS) as client:
        for operation in rest_operations(doc):
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                run_rest(client, url, operation.as_strategy(generation_mode=mode), workspace_id, count, tally)
    return tally


def run_rest(client: httpx.Client, url: str, strategy, workspace_id: str, count: int, tally: Tally) -> None:
    @fuzz_settings(count)
    @given(case=strategy, ours=st.booleans())
    def send(case, ours):
        if ours and "workspace_id" in (case.path_parameters or {}):
            case.path_parameters["workspace_id"] = workspace_id
        if ours and isinstance(case.query, dict) and "path" in case.query:
            case.query["path"] = KNOWN_FILE
        send_rest(client, url, case, tally)

    try:
        send()
    except Unsatisfiable:  # nothing to make invalid (a route with no parameters)
        pass


def send_rest(client: httpx.Client, url: str, case, tally: Tally) -> None:
    kwargs = case.as_transport_kwargs(base_url=url)
    label = f"{kwargs['method']} {kwargs['url']} params={kwargs.get('params')} body={kwargs.get('json')!r:.300}"
    tally.requests += 1
    request = client.build_request(kwargs["method"], kwargs["url"], params=kwargs.get("params"),
                                   headers=kwargs.get("headers"), cookies=kwargs.get("cookies"),
                                   json=kwargs.get("json"), content=kwargs.get("data"))
    try:
        response = client.send(request, stream=True)
        try:
            if STREAMING not in response.headers.get("content-type", ""):
                response.read()
        finally:
            response.close()
    except httpx.TimeoutException:
        tally.hangs.append(label)
        return
    except httpx.HTTPError as error:
        tally.server_errors.append(f"{label}: {type(error).__name__} {error}")
        return
    if response.status_code >= 500:
        tally.server_errors.append(f"{label}: {response.status_code} {response.text[:300]}")
    else:
        tally.saw(f"{response.status_code // 100}xx")


# --- MCP ---
async def mcp_tools(url: str) -> list:
    from mcp import Client

    async with Client(url + "/mcp", read_timeout_seconds=HANG_SECONDS) as mcp:
        return list((await mcp.list_tools()).tools)


def tools_openapi(tools: list) -> dict:
    """The tools as an OpenAPI document (POST /<tool>, its input schema the body) for schemathesis to draw
    arguments from: valid ones, and ones its schema refuses (the SDK must refuse those in words too)."""
    def operation(tool) -> dict:
        body = {"required": True, "content": {"application/json": {"schema": tool.input_schema}}}
        return {"post": {"operationId": tool.name, "requestBody": body, "responses": {"200": {"description": "ok"}}}}

    return {"openapi": "3.1.0", "info": {"title": "MCP tools", "version": "1"},
            "paths": {f"/{tool.name}": operation(tool) for tool in tools}}


def fuzz_mcp(url: str, workspace: str, count: int) -> Tally:
    """Every tool, `count` valid and `count` invalid argument sets from its input schema; "workspace" is the
    registered folder half the time, and then a "path" a file of it. One MCP session per tool and mode."""
    from schemathesis import GenerationMode

    tally = Tally("mcp")
    for operation in rest_operations(tools_openapi(asyncio.run(mcp_tools(url)))):
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            calls = draw_calls(operation.as_strategy(generation_mode=mode), workspace, count)
            asyncio.run(call_tools(url, operation.path.strip("/"), calls, tally))
    return tally


def draw_calls(strategy, workspace: str, count: int) -> list:
    calls: list = []

    @fuzz_settings(count)
    @given(case=strategy, ours=st.booleans())
    def draw(case, ours):
        arguments = case.body
        if not isinstance(arguments, dict):  # MCP's arguments are an object: the client sends nothing else
            return
        if ours and "workspace" in arguments:
            arguments = {**arguments, "workspace": workspace}
        if ours and "path" in arguments:
            arguments = {**arguments, "path": KNOWN_FILE}
        calls.append(arguments)

    try:
        draw()
    except Unsatisfiable:  # nothing to make invalid
        pass
    return calls


async def call_tools(url: str, name: str, calls: list, tally: Tally) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types.jsonrpc import INTERNAL_ERROR

    async with Client(url + "/mcp", read_timeout_seconds=HANG_SECONDS) as mcp:
        for arguments in calls:
            tally.requests += 1
            label = f"{name} {arguments!r:.300}"
            try:
                result = await asyncio.wait_for(mcp.call_tool(name, arguments), HANG_SECONDS)
                tally.saw("tool error" if result.is_error else "result")
            except TimeoutError:
                tally.hangs.append(label)
            except MCPError as error:  # a JSON-RPC error answer: a refusal, unless it is an internal error
                if error.code == INTERNAL_ERROR:
                    tally.server_errors.append(f"{label}: {error.message}")
                else:
                    tally.saw("refused")
            except Exception as error:  # a tool's own error is a result (is_error), never an exception
                tally.server_errors.append(f"{label}: {type(error).__name__} {error}")


def fuzz_server(root):
    """A `serve` of its own, allowed only under `root`/allowed, the sample workspace copied there, registered
    and indexed: yields {"url", "data_dir", "workspace", "id", "openapi"} (a generator: the server stops after)."""
    from tests.conftest import copy_sample
    from tests.helpers.engine_server import index_and_wait, register, served

    workspace = copy_sample(root / "allowed" / "workspace")
    for server in served(root, root / "allowed"):
        with httpx.Client(base_url=server["url"], timeout=120) as client:
            key = register(client, workspace)
            assert index_and_wait(client, key)["state"] == "done"
            doc = client.get("/openapi.json").json()
        yield {**server, "workspace": workspace, "id": key, "openapi": doc}
