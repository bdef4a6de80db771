"""Render the HTML report of a generated session and screenshot it in headless Chromium.

Usage::

    python scripts/screenshot_report.py [--out report.png] [--html report.html] [--turns 12]

The session is the scripted demo (no network), driven through a real session on an
in-memory log; the provider never answers, so usage comes from the offline Anthropic
cache simulator. Chromium is looked up as ``$CHROMIUM``, ``/usr/bin/chromium`` or on
``PATH`` (``apt-get install -y chromium`` on Debian). The test suite imports this
file (tests/telemetry/test_report_browser.py) so that CI checks the same steps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from contextwright.budget.estimator import HeuristicEstimator
from contextwright.canonical import canonical_json
from contextwright.clock import FixedClock
from contextwright.demo._drive import drive
from contextwright.demo.script import demo_script
from contextwright.events.registry import encode_payload
from contextwright.pricing.cache_sim import AnthropicCacheSimulator, SimRequest
from contextwright.pricing.prices import cost, price_for
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.usage import Usage
from contextwright.providers.wires.anthropic import render
from contextwright.report import write_report
from contextwright.runtime.ports import InMemoryMemory
from contextwright.runtime.session import BuiltRequest, Session
from contextwright.telemetry.records import RequestRecord, request_records, summarize, with_usage
from contextwright.testing.fakes import open_session

WINDOW = 32_000
"""A small window, so that a short demo reaches pruning and compaction."""
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def simulated_usages(session: Session, requests: list[BuiltRequest], *, breakpoints: bool = True) -> dict[int, Usage]:
    """Usage per request index, predicted by replaying the Anthropic bodies through the cache simulator.

    ``breakpoints=False`` strips every ``cache_control`` marker first: the same requests
    sent without prompt caching, as a baseline.
    """
    estimator = HeuristicEstimator()
    events = session.history.events
    model = requests[0].plan.model.id if requests else "claude-sonnet-4-6"
    simulator = AnthropicCacheSimulator(count_tokens=lambda text: estimator.estimate(text, model=model))
    usages: dict[int, Usage] = {}
    previous = None
    for request in requests:
        body = render(request.neutral, capabilities_for(request.plan.model), previous=previous)
        previous = request.neutral
        if not breakpoints:
            body = _without_cache_control(body)
        # Bill the answer that followed the request as its output.
        answer = next((e for e in events if e.seq > request.event.seq and e.type == "message.assistant"), None)
        output = estimator.estimate(canonical_json(encode_payload(answer.payload)), model=model) if answer else 0
        usages[request.index] = simulator.request(SimRequest(at=request.event.at, body=body, output_tokens=output)).usage
    return usages


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _input_cost(records: list[RequestRecord]) -> Decimal:
    total = Decimal(0)
    for record in records:
        usage = record.usage
        assert usage is not None
        total += cost(replace(usage, output_tokens=0), price_for(record.model, record.at.date()))
    return total


def build_demo_report(html_path: Path, *, turns: int = 12, window: int = WINDOW) -> Path:
    """Drive the demo script through a session and write its report to ``html_path``.

    The comparison sets the engine's cache breakpoints against the same requests sent
    without any, both through the offline simulator.
    """
    clock = FixedClock("2026-03-01T22:30:00Z")
    memory = InMemoryMemory({"mem-style": "Billing code uses Decimal for money amounts."})
    engine, session, _ = open_session("demo-report", clock=clock, window=window, memory=memory)
    try:
        report = drive(session, demo_script(turns=turns), clock=clock, force_compaction_at=[turns * 2 // 3])
        session.close()
        events = session.history.events
        base = request_records(events)
        records = with_usage(base, simulated_usages(session, report.requests))
        uncached = with_usage(base, simulated_usages(session, report.requests, breakpoints=False))
        summary = summarize(events, records=records)
        baseline = summarize(events, records=uncached)
    finally:
        engine.close()
    comparison = [
        {
            "strategy": "contextwright (cache breakpoints)",
            "cache_read_share": summary.cache_read_share,
            "relative_input_cost": _input_cost(records) / _input_cost(uncached),
            "peak_request_tokens": summary.peak_request_tokens,
            "overflows": summary.overflow_recoveries,
        },
        {
            "strategy": "same requests, no cache breakpoints",
            "cache_read_share": baseline.cache_read_share,
            "relative_input_cost": 1.0,
            "peak_request_tokens": baseline.peak_request_tokens,
            "overflows": baseline.overflow_recoveries,
        },
    ]
    return write_report(html_path, summary, records, title=f"Session report: {summary.session_id}", comparison=comparison)


def find_chromium() -> str | None:
    """Path of a Chromium binary, or None when there is none."""
    configured = os.environ.get("CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else shutil.which(configured)
    for candidate in CHROMIUM_CANDIDATES:
        found = candidate if Path(candidate).is_absolute() and Path(candidate).exists() else shutil.which(candidate)
        if found:
            return found
    return None


def screenshot(
    html_path: Path, png_path: Path, *, chromium: str, width: int = 1280, height: int = 2000, timeout: float = 120
) -> Path:
    """Open ``html_path`` in headless Chromium (fresh profile, no network services) and save a PNG."""
    png_path = png_path.resolve()
    png_path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cw-chromium-") as profile:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png_path}",
            f"--window-size={width},{height}",
            html_path.resolve().as_uri(),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if not png_path.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-2000:]}")
    return png_path


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "contextwright-report.png")
    parser.add_argument("--html", type=Path, default=None, help="Where to keep the HTML (default: a temp file).")
    parser.add_argument("--turns", type=int, default=12)
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("no chromium found: install it (apt-get install -y chromium) or set CHROMIUM", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cw-report-") as tmp:
        html_path = args.html or Path(tmp) / "report.html"
        build_demo_report(html_path, turns=args.turns)
        png = screenshot(html_path, args.out, chromium=chromium)
    print(f"report: {html_path}\nscreenshot: {png} ({png.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
