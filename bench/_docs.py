"""Write a benchmark's results into docs/benchmarks.md, between its own markers."""

from __future__ import annotations

import os
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def update_section(name: str, body: str, *, path: Path = BENCHMARKS) -> Path:
    """Replace the block between ``<!-- name:start -->`` and ``<!-- name:end -->`` (appending it if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def machine_load() -> str:
    """The load averages and core count, for a table's caption (timings on a shared machine follow the load)."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "unknown"
    return f"{one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"
