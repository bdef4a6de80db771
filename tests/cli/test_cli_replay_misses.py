"""``replay --json`` names every uncached input token's cause, for fresh and stored sessions alike."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_replay import claude_code_session, write_jsonl
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.pricing.cache_sim.attribution import CAUSES

runner = CliRunner()

# A few shared transcripts with relief passes, expiries and several formats.
SHARED = (
    "openhands-events/openhands-multi-swe-bench/ponylang__ponyc-4593.json",
    "claude-code-jsonl/claude-code-log/Users-dain-workspace-claude-code-log-sample/b45ad5d8-81fb-4bcb-baba-19d9f503d731.jsonl",
    "cursor-specstory-md/minsky/2025-05-01_19-32-starting-task-027.md",
)


def _rows(args: list[str]) -> list[dict]:
    result = runner.invoke(app, ["replay", *args, "--no-compare", "--json"])
    assert result.exit_code == 0, result.output[-2000:]
    return json.loads(result.stdout)["transcripts"]


def _check_sums(rows: list[dict]) -> None:
    for row in rows:
        by_cause = row["uncached_by_cause"]
        assert by_cause is not None, row["file"]
        # Check: every uncached token has a cause, from the documented list, in its order.
        assert sum(by_cause.values()) == row["uncached_input_tokens"], row["file"]
        assert list(by_cause) == [c for c in CAUSES if c in by_cause]
        assert all(tokens > 0 for tokens in by_cause.values())


def test_replay_json_attributes_every_uncached_token(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "today.jsonl", claude_code_session())
    rows = _rows([str(path)])
    _check_sums(rows)
    assert rows[0]["uncached_input_tokens"] > 0 and "new_content" in rows[0]["uncached_by_cause"]
    # Check: both providers' rules predict reads and writes for the same requests; the replay's own
    # provider (Anthropic) is the one the causes follow.
    rule_sets = rows[0]["cache_by_rule_set"]
    assert set(rule_sets) == {"anthropic", "openai"}
    assert rule_sets["anthropic"]["uncached_input_tokens"] == rows[0]["uncached_input_tokens"]
    assert rule_sets["openai"]["cache_write_tokens"] == 0  # OpenAI's automatic caching bills no writes


def test_a_stored_session_is_attributed_from_its_rebuilt_requests(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "today.jsonl", claude_code_session())
    store = f"sqlite:///{tmp_path / 'log.db'}"
    fresh = _rows([str(path), "--store", store])
    again = _rows([str(path), "--store", store])
    assert again[0]["stored_before"] and not fresh[0]["stored_before"]
    # Check: rebuilt from the log byte for byte, the same requests get the same causes.
    assert again[0]["uncached_by_cause"] == fresh[0]["uncached_by_cause"]
    assert again[0]["cache_by_rule_set"] == fresh[0]["cache_by_rule_set"]
    assert fresh[0]["cache_by_rule_set"]["openai"] is not None


def test_shared_transcripts_leave_no_uncached_token_without_a_cause(traces_dir: Path, tmp_path: Path) -> None:
    files = [traces_dir / name for name in SHARED if (traces_dir / name).exists()]
    assert files, f"none of {SHARED} under {traces_dir}"
    rows = _rows([*map(str, files), "--lenient", "--window", "32000"])
    _check_sums(rows)
    # Check: the relief passes of a 32k window show up as relief, not as client edits.
    totals: dict[str, int] = {}
    for row in rows:
        for cause, tokens in row["uncached_by_cause"].items():
            totals[cause] = totals.get(cause, 0) + tokens
    assert totals.get("relief_pass", 0) > 0
    assert "message_edited" not in totals

    # Check: the report draws a bar per cause.
    report = tmp_path / "r.html"
    result = runner.invoke(app, ["replay", str(files[0]), "--no-compare", "--report", str(report), "--window", "32000"])
    assert result.exit_code == 0, result.output[-2000:]
    html = report.read_text()
    assert "Cache misses by cause" in html and html.count('class="bar"') == len(rows[0]["uncached_by_cause"])


def test_stats_misses_rebuilds_a_stored_session_and_checks_its_predictions(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "today.jsonl", claude_code_session())
    store = tmp_path / "log.db"
    replayed = _rows([str(path), "--store", f"sqlite:///{store}", "--usage", "simulated"])
    result = runner.invoke(app, ["stats", str(store), "--misses"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    total = replayed[0]["uncached_input_tokens"]
    # Check: the same causes as the replay's, and the provider usage (the simulator's, reported back) agrees.
    assert f"{total:,} uncached input tokens (offline simulation)" in out
    assert "predicted against reported cache reads: 0 of 2 request(s) differ by more than 10 points" in out
    plain = runner.invoke(app, ["stats", str(store)], env={"COLUMNS": "200"})
    assert "uncached input tokens" not in plain.output


def test_stats_misses_names_a_session_it_cannot_simulate(tmp_path: Path) -> None:
    from contextwright import models
    from contextwright.log.sqlite import SQLiteEventLog
    from contextwright.runtime.engine import Engine
    from contextwright.runtime.spec import AgentSpec

    path = tmp_path / "odd.db"
    log = SQLiteEventLog(path)
    engine = Engine(log)
    model = models.anthropic("claude-sonnet-9-9", context_window=200_000, max_output_tokens=8_000)
    session = engine.session("odd", agent=AgentSpec(policy="Be careful."), model=model)
    session.user("Hello.")
    session.next_request()
    engine.close()
    result = runner.invoke(app, ["stats", str(path), "--misses"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "odd: cache misses not simulated: no cache rules known for model 'claude-sonnet-9-9'" in " ".join(
        result.output.split()
    )
