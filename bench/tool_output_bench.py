"""Peak memory and time of one large tool output through the public API, on SQLite.

Run from the repository root:

    python bench/tool_output_bench.py            # 1, 5, 20 and 50 MB outputs, writes docs/benchmarks.md
    python bench/tool_output_bench.py --quick    # 1 and 5 MB, no docs

Each size runs in a fresh process: a session on a new SQLite store gets one tool call,
and ``Session.tool_result`` stores the output (the artifact) and records the bounded
view the model sees. Peak memory is the rise of the process's resident high-water mark
(``VmHWM``, reset through ``/proc/self/clear_refs`` once the output exists), so it counts
SQLite's own allocations too; the output string itself is not counted.
"""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

_sys.path.insert(0, str(_Path(__file__).resolve().parent))
import argparse
import json
import os
import platform
import subprocess
import time

from _docs import update_section
from rich.console import Console
from rich.table import Table

CHILD = r"""
import json, sys, tempfile, time
from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session

size = int(sys.argv[1])
folder = tempfile.mkdtemp()
engine, session, _ = open_session(url=f"sqlite:///{folder}/bench.db")
session.user("run the test suite")
session.next_request()
session.record_assistant(AssistantMessage(tool_calls=(ToolCall(id="c1", name="run_tests", arguments={}),)))
block = "".join(f"tests/test_mod_{i % 97}.py::test_case_{i} PASSED [{i % 100:3d}%]\n" for i in range(2000))
block += "tests/test_mod_5.py::test_broken FAILED - AssertionError: expected 3, got 4\n"
output = (block * (size // len(block) + 1))[:size]
del block

def hwm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = rss_kib()
start = time.perf_counter()
event = session.tool_result("c1", output, exit_code=1)
seconds = time.perf_counter() - start
peak = hwm_kib() - base
print(json.dumps({"size": size, "seconds": seconds, "peak_bytes": peak * 1024, "seen_chars": len(event.payload.output)}))
"""


def run(size: int) -> dict[str, float]:
    """One size in a fresh process."""
    env = dict(os.environ)
    src = str(_Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run([_sys.executable, "-c", CHILD, str(size)], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 and 5 MB only, and do not write the docs")
    args = parser.parse_args()
    sizes = [1_000_000, 5_000_000] if args.quick else [1_000_000, 5_000_000, 20_000_000, 50_000_000]
    results = [run(size) for size in sizes]
    table = Table(
        "output", "time (s)", "peak memory (MB)", "peak ÷ output size", "characters the model sees", title="One tool output"
    )
    rows = []
    for r in results:
        row = (
            f"{r['size'] / 1e6:.0f} MB",
            f"{r['seconds']:.2f}",
            f"{r['peak_bytes'] / 1e6:.1f}",
            f"{r['peak_bytes'] / r['size']:.2f}×",
            f"{r['seen_chars']:,}",
        )
        rows.append(row)
        table.add_row(*row)
    Console().print(table)
    if not args.quick:
        machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
        lines = [
            f"Machine: {machine}. Command: `python bench/tool_output_bench.py`.",
            "",
            "One pytest-style output (a failure line among passes) recorded with `Session.tool_result` on SQLite: "
            "the whole output becomes an artifact, the model sees a compressed, capped view. Before the bounded view "
            "and the chunked artifact hash, a 50 MB output peaked at about 700 MB of RSS (14×) and took 15 s.",
            "",
            "| output | time (s) | peak memory (MB) | peak ÷ output size | characters the model sees |",
            "|---|---:|---:|---:|---:|",
            *("| " + " | ".join(row) + " |" for row in rows),
            "",
            "Reading the table: above 1 MB the compressor sees a bounded view (head, tail and the middle's failure "
            "lines), so memory stops growing with the output except for storing it (SQLite copies the record once). "
            "At and below 1 MB the compressor's own working set, about twelve times its input, dominates: bounded "
            "in absolute terms (about 15 MB) but above 3× the output.",
        ]
        update_section("tool-output-bench", "## One large tool output (`bench/tool_output_bench.py`)\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    _sys.exit(main())
