"""The command line: demo, sessions, events, verify, and one-line errors."""

from __future__ import annotations

import json
import sqlite3

from typer.testing import CliRunner

from contextwright.cli import app

runner = CliRunner()


def test_demo_writes_a_store_and_reports_it(tmp_path):
    db = tmp_path / "demo.db"
    result = runner.invoke(app, ["demo", "--db", str(db), "--turns", "40", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["events"] > 200
    assert summary["crosses_midnight"] is True
    assert summary["denied_tool_calls"] >= 0
    assert summary["events_by_type"]["message.user"] == 40
    # Same seed, same session: the demo is deterministic.
    again = json.loads(runner.invoke(app, ["demo", "--db", str(db), "--turns", "40", "--json"]).output)
    assert again == summary


def test_demo_prints_tables(tmp_path):
    result = runner.invoke(app, ["demo", "--db", str(tmp_path / "d.db"), "--turns", "3"])
    assert result.exit_code == 0, result.output
    assert "Demo summary" in result.output and "message.user" in result.output


def test_sessions_events_and_verify(tmp_path):
    db = tmp_path / "d.db"
    runner.invoke(app, ["demo", "--db", str(db), "--turns", "3", "--json"])
    assert "demo-ticket-4711" in runner.invoke(app, ["sessions", str(db)]).output
    events = runner.invoke(app, ["events", str(db), "--session", "demo-ticket-4711", "--limit", "3"])
    assert events.exit_code == 0 and "message.user" in events.output
    ok = runner.invoke(app, ["verify", str(db)])
    assert ok.exit_code == 0 and "verified" in ok.output
    # Tamper with one payload: verify must notice.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE cw_events SET payload = replace(payload, 'CI fails', 'CI works') WHERE seq = 1")
    conn.commit()
    conn.close()
    bad = runner.invoke(app, ["verify", str(db)])
    assert bad.exit_code == 1 and "sha256" in bad.output


def test_mistakes_get_one_line_errors_without_tracebacks(tmp_path):
    not_a_store = tmp_path / "notes.db"
    sqlite3.connect(not_a_store).execute("CREATE TABLE notes (x)").connection.commit()
    cases = [
        ["events", str(tmp_path / "missing.db"), "--session", "s"],
        ["events", str(not_a_store), "--session", "s"],
        ["sessions", "mysql://nope"],
    ]
    for args in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "Traceback" not in result.output
        assert result.output.strip().startswith("error:"), result.output


def test_help_reads_well():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("demo", "sessions", "events", "verify"):
        assert command in result.output
        sub = runner.invoke(app, [command, "--help"])
        assert sub.exit_code == 0 and "Usage" in sub.output
