"""Manage mode on a short Claude-Code-shaped session of medium outputs: fewer tokens upstream, the failure kept.

The session and the counting are the manage benchmark's (``bench/gateway_manage_bench.py``),
on 20 turns instead of its 60.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("starlette", reason='the gateway needs its extra: pip install "contextwright[gateway]"')
pytest.importorskip("uvicorn", reason='the gateway needs its extra: pip install "contextwright[gateway]"')

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gateway_manage_bench.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gateway_manage_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_manage_mode_sends_far_fewer_tokens_and_keeps_the_last_test_runs_failure_and_totals() -> None:
    figures = _bench().run_tokens(20)
    assert figures["requests"] == 21
    assert figures["saving"] > 0.40, figures
    assert figures["failure_kept"] and figures["totals_kept"]
    assert figures["run_upstream_chars"] < figures["run_chars"] / 4  # the noisy passing run is reduced
    assert (figures["recall"].share or 0) >= 0.99, figures["recall"]  # the relief issue's 200k target


def test_the_latency_benchmarks_library_side_builds_the_gateways_requests_on_its_session(tmp_path: Path) -> None:
    # The denominator of the manage-mode latency ratio: the same requests as the gateway's timed ones, built
    # through the library on the session the gateway's recorder made for the first request of the size.
    bench = _bench()
    system, turns = bench.session(12)
    row = {"size": 11, "session": "00000000-0000-4000-8000-000000000011"}
    work, build = bench._library_turns(system, turns, row, 3, tmp_path, pause=0)
    assert len(work) == len(build) == 3
    assert all(0 < b <= w for w, b in zip(work, build, strict=True))  # the build is part of the request's work
