"""19.6: recording one tool output costs at most three times its size, at every size.

Python's allocations are measured with tracemalloc around ``Session.tool_result`` and the
next request, on the in-memory store (which keeps the caller's string, so what is
measured is the view, the compressor, the hash and the request). Sizes are the
output's UTF-8 bytes.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session

MB = 1_000_000


FAILURE = "tests/test_pay.py::test_refund FAILED - AssertionError: 3 != 4"


def _with_failure(text: str) -> str:
    cut = text.index("\n", int(len(text) * 0.6)) + 1
    return text[:cut] + FAILURE + "\n" + text[cut:]


def _pytest_run(size: int) -> str:
    block = "".join(f"tests/test_mod_{i % 97}.py::test_case_{i} PASSED [{i % 100:3d}%]\n" for i in range(2000))
    return _with_failure((block * (size // len(block) + 1))[:size])


def _short_lines(size: int) -> str:
    # Short lines cost the most per character: a line object weighs more than its text.
    rnd = random.Random(7)
    return _with_failure("".join(f"ok {rnd.randrange(10**6)}\n" for _ in range(size // 9))[:size])


def _binary_dump(size: int) -> str:
    # A binary's stdout decoded with replacement characters: four bytes a character in memory.
    return random.Random(3).randbytes(size // 2).decode("utf-8", errors="replace")


def measure(make_name: str, size: int) -> tuple[int, int]:
    """Peak traced bytes around recording one output and building the next request, and the output's size."""
    make = {"pytest": _pytest_run, "short-lines": _short_lines, "binary": _binary_dump}[make_name]
    _, session, _ = open_session()
    session.user("run it")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(tool_calls=(ToolCall(id="c1", name="run_tests", arguments={}),)))
    output = make(size)
    stored = len(output.encode("utf-8"))
    tracemalloc.start()
    try:
        event = session.tool_result("c1", output, exit_code=1)
        session.next_request()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Check that what matters still reaches the model and the original is kept whole.
    if make is _short_lines:
        assert FAILURE in event.payload.output
    assert session.setup.log.get_artifact(event.payload.artifact.ref) == output
    return peak, stored


@pytest.mark.parametrize("make", ["pytest", "short-lines", "binary"])
@pytest.mark.parametrize("size", [2 * MB, 8 * MB], ids=["2MB", "8MB"])
def test_one_tool_output_peaks_under_three_times_its_size(make, size):
    # Measured in a fresh interpreter: tracemalloc counts every thread, and threads an earlier
    # test left running (a server, a client library's logger) would be billed to this output.
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from test_tool_output_memory import measure; "
        "print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), make, str(size)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    peak, stored = json.loads(run.stdout)
    # Check the bound: compressing the whole output, or a 1 MB view of it, cost 3 to 14 times that.
    assert peak <= 3 * stored, f"peak {peak / stored:.2f}× the output"
