"""Issue 42's long run: requests generated from the REST OpenAPI document and the MCP tools' input schemas
(tests/helpers/fuzz.py), sent to a real `knowledge-explorer serve` on a throwaway data dir with a copy of the
sample workspace; counts requests, 5xx (or transport errors) and hangs (no answer in 30 s) per face.

    KE_FUZZ_EXAMPLES=50 python benchmarks/fuzz_faces.py    # examples per operation and generation mode
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.lib import record  # noqa: E402
from tests.helpers.fuzz import HANG_SECONDS, examples, fuzz_mcp, fuzz_rest, fuzz_server  # noqa: E402


def timed(run) -> tuple:
    started = time.monotonic()
    tally = run()
    return tally, round(time.monotonic() - started)


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help; KE_FUZZ_EXAMPLES sets the size
    count = examples()
    with tempfile.TemporaryDirectory() as folder:
        for server in fuzz_server(Path(folder)):
            rest, rest_s = timed(lambda: fuzz_rest(server["url"], server["openapi"], server["id"], count))
            mcp, mcp_s = timed(lambda: fuzz_mcp(server["url"], str(server["workspace"]), count))
    rows = [{**rest.summary(), "seconds": rest_s}, {**mcp.summary(), "seconds": mcp_s}]
    for row in rows:
        print(row)
    findings = {"rest": rest.server_errors + rest.hangs, "mcp": mcp.server_errors + mcp.hangs}
    record("fuzz_faces", rows, uses_percentiles=False, figures={"findings": findings},
           settings={"examples_per_operation_and_mode": count, "hang_seconds": HANG_SECONDS,
                     "modes": "positive, negative (schemathesis)", "derandomized": True})
    return 1 if any(findings.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
