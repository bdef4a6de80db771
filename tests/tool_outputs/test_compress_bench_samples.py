"""The compression benchmark finds the hand-written samples it reports on (they live beside these tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import unseen_samples

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Run apart from this test process, whose import path already reaches the samples.
LIST_SAMPLES = """
import compress_bench
for sample in compress_bench.unseen_samples():
    print(sample.name, len(sample.must), sample.exit_code)
"""


def test_the_compression_benchmark_reads_every_hand_written_sample() -> None:
    run = subprocess.run(
        [sys.executable, "-c", LIST_SAMPLES], cwd=BENCH, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines()]
    assert [name for name, _, _ in rows] == sorted(unseen_samples.UNSEEN)
    assert all(int(must) > 0 and code == "1" for _, must, code in rows)
