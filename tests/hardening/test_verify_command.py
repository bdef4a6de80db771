"""`contextwright verify` finds every tampering a hash or a counter covers (19.7)."""

from __future__ import annotations

import sqlite3

from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.clock import FixedClock
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.testing.contract import user

runner = CliRunner()


def _store(path) -> str:
    with SQLiteEventLog(path, clock=FixedClock()) as log:
        log.append("s", [user("a"), user("b")], expected_seq=0)
        return log.put_artifact("the original tool output\n" * 20, kind="tool_output")


def _tamper(path, sql: str, *args) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def test_a_sound_store_verifies(tmp_path):
    _store(tmp_path / "ok.db")
    result = runner.invoke(app, ["verify", str(tmp_path / "ok.db")])
    assert result.exit_code == 0, result.output
    assert "2 events in 1 sessions and 1 artifacts verified" in result.output


def test_a_rewritten_artifact_fails_verify(tmp_path):
    path = tmp_path / "artifact.db"
    ref = _store(path)
    _tamper(path, "UPDATE cw_artifacts SET content = ? WHERE ref = ?", "a rewritten output\n" * 20, ref)
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1 and ref in result.output and "does not match its hash" in result.output


def test_an_artifact_size_that_lies_fails_verify(tmp_path):
    path = tmp_path / "size.db"
    ref = _store(path)
    _tamper(path, "UPDATE cw_artifacts SET size_chars = 3 WHERE ref = ?", ref)
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1 and "size is recorded as 3" in result.output


def test_a_last_seq_past_the_last_event_fails_verify(tmp_path):
    path = tmp_path / "last.db"
    _store(path)
    _tamper(path, "UPDATE cw_sessions SET last_seq = 9 WHERE session_id = 's'")
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1 and "last seq is recorded as 9" in result.output


def test_events_whose_session_row_is_gone_are_still_checked(tmp_path):
    path = tmp_path / "lost.db"
    _store(path)
    _tamper(path, "DELETE FROM cw_sessions")
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1 and "last seq is recorded as 0, but the last event is seq 2" in result.output


def test_an_index_that_disagrees_with_the_events_fails_verify(tmp_path):
    path = tmp_path / "index.db"
    _store(path)
    _tamper(path, "UPDATE cw_sessions SET requests_built = 4")
    result = runner.invoke(app, ["verify", str(path)])
    assert result.exit_code == 1 and "index" in result.output
