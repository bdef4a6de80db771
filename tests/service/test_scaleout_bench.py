"""The scale-out harness's bounded mode: workers killed and connections cut, and every session still verifies."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

pytestmark = pytest.mark.postgres

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "scaleout_bench.py"


def test_the_bounded_fault_run_loses_nothing(postgres_dsn, monkeypatch):
    spec = importlib.util.spec_from_file_location("scaleout_bench", _BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "scaleout_bench", bench)  # its dataclasses look their module up there
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "POSTGRES_DSN", postgres_dsn)
    [phase] = bench.phases(quick=True, workers=[2], duration=8, agents=4)
    outcome = bench.run_phase(phase)
    results, verification = outcome["results"], outcome["verification"]
    # Check: faults happened, and every request was answered in the end.
    assert results.cuts >= 1 and results.kills >= 1
    # A failure names what the workers logged, so a rare one can be traced from a CI log.
    assert results.failures == [], outcome["crashes"]
    # Check: every session verifies from the log, with every acknowledged write in it once.
    assert verification["problems"] == []
    assert verification["sessions"] == phase.sessions and verification["acked"] > 0 and verification["requests"] > 0
    lines: list[str] = []
    bench.report([outcome], print_=lines.append)
    assert any("kills" in line for line in lines)
