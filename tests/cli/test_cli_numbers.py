"""One counter and one vocabulary: the demo's summary, its comparison, the report and the terminal agree."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from typer.testing import CliRunner

import contextwright.cli._demo as demo_module
import contextwright.compare.strategies as strategies
from contextwright.cli import app
from contextwright.log import open_log
from contextwright.runtime.engine import SECRET_SETTING

runner = CliRunner()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("numbers")
    db, report = folder / "d.db", folder / "d.html"
    args = ["demo", "--db", str(db), "--turns", "8", "--window", "32000", "--report", str(report)]
    summary = json.loads(runner.invoke(app, [*args, "--json"]).output)
    return db, report, summary, args


def test_summary_and_contextwright_row_come_from_one_counter(demo_run):
    _, _, summary, _ = demo_run
    row = next(r for r in summary["comparison"] if r["strategy"] == "contextwright")
    assert row["cache_read_share"] == summary["cache_read_share"]
    assert row["input_cost_usd"] == summary["input_cost_usd"]
    assert row["peak_request_tokens"] == summary["peak_request_tokens"]
    assert "one shared counter" in summary["counter"]


def test_stats_shows_the_demo_figures_and_calls_them_simulated(demo_run):
    db, _, summary, _ = demo_run
    out = runner.invoke(app, ["stats", str(db)], env={"COLUMNS": "200"}).output
    # The JSON rounds the share to four places, the table shows one decimal of the exact value:
    # they agree to within half a shown unit plus the JSON's rounding.
    shown = re.search(r"(\d+\.\d)%", out)
    assert shown is not None
    assert abs(float(shown.group(1)) - 100 * summary["cache_read_share"]) <= 0.05 + 0.005
    assert f"${Decimal(summary['input_cost_usd']):.4f}" in out
    assert "simulated" in out


def test_terminal_and_report_show_the_same_forms(demo_run, tmp_path):
    db, report, summary, args = demo_run
    out = runner.invoke(app, [*args[:2], str(tmp_path / "t.db"), *args[3:7], "--report", str(tmp_path / "t.html")]).output
    html = report.read_text()
    for row in summary["comparison"]:
        share = f"{row['cache_read_share']:.1%}"
        relative = f"{row['relative_input_cost']:.2f}×"
        cost = f"${row['input_cost_usd']}"
        for form in (share, relative, cost):
            assert form in out and form in html, form
    # On a narrow terminal each strategy is a block with the headings written out whole.
    narrow = runner.invoke(
        app, [*args[:2], str(tmp_path / "n.db"), *args[3:7], "--report", str(tmp_path / "n.html")], env={"COLUMNS": "60"}
    ).output
    assert "…" not in narrow and max(len(line) for line in narrow.splitlines()) <= 60
    for heading in ("cache-read share", "input cost", "vs ceiling", "peak request", "over window", "task visible"):
        assert heading in narrow and heading in html
    assert "baseline" not in html and "input cost usd" not in html and "input_cost_usd" not in html


def test_simulated_usage_is_never_called_provider_reported(demo_run):
    _, report, _, _ = demo_run
    html = report.read_text()
    assert "as reported by the provider" not in html
    assert "predicted by the offline cache simulator" in html or "simulated" in html
    assert "The demo session under each strategy" in html


def test_no_public_constant_secrets():
    assert not hasattr(demo_module, "DEMO_SECRET") and not hasattr(strategies, "COMPARE_SECRET")


def test_demo_secret_comes_from_its_settings(demo_run, tmp_path):
    db, _, _, _ = demo_run
    with open_log(db, create=False, read_only=True) as log:
        stored = log.setting(SECRET_SETTING, "")
    assert stored == demo_module.demo_secret(turns=8, window=32000, provider="anthropic", seed=7).hex()
    assert stored != demo_module.demo_secret(turns=8, window=32000, provider="anthropic", seed=8).hex()
    assert stored != demo_module.demo_secret(turns=9, window=32000, provider="anthropic", seed=7).hex()


def test_demo_on_openai_says_why_there_is_no_comparison(tmp_path):
    result = runner.invoke(
        app,
        ["demo", "--db", str(tmp_path / "o.db"), "--turns", "2", "--provider", "openai", "--report", str(tmp_path / "o.html")],
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"No strategy comparison: .*Anthropic wire only", " ".join(result.output.split()))


@pytest.mark.parametrize("columns", ["140", "80"])
def test_stats_headers_and_names_are_never_cut(demo_run, columns):
    db, _, _, _ = demo_run
    out = runner.invoke(app, ["stats", str(db)], env={"COLUMNS": columns}).output
    assert "…" not in out and "demo-ticket-4711" in out
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    for header in ("requests", "compactions", "recovered", "dedupe", "relief", "cache"):
        assert re.search(rf"\b{header}\b", out), header


def test_terminal_and_report_name_both_peaks_the_same_way(demo_run, tmp_path):
    _, report, summary, args = demo_run
    html = report.read_text()
    out = " ".join(
        runner.invoke(app, [*args[:2], str(tmp_path / "p.db"), *args[3:7], "--report", str(tmp_path / "p.html")]).output.split()
    )
    assert f"{summary['peak_request_tokens']:,} tokens" in html and f"{summary['peak_request_tokens']:,} tokens" in out
    assert f"{summary['peak_estimated_tokens']:,} tokens" in html and f"{summary['peak_estimated_tokens']:,} tokens" in out
    assert "Peak input (usage)" in html and "peak input (simulated usage)" in out


def test_two_demo_runs_build_the_same_requests(demo_run, tmp_path):
    import sqlite3

    db, _, _, args = demo_run
    again = tmp_path / "again.db"
    assert runner.invoke(app, [*args[:2], str(again), *args[3:7], "--report", str(tmp_path / "a.html")]).exit_code == 0

    def hashes(path):
        rows = sqlite3.connect(path).execute("SELECT payload FROM cw_events WHERE type = 'context.request.built' ORDER BY seq")
        return [json.loads(p)["request_sha256"] for (p,) in rows]

    assert hashes(db) == hashes(again) and len(hashes(db)) > 10
