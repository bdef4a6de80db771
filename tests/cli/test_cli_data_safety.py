"""The command line is safe with users' files: demo replaces only its own stores, looking never writes."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextwright.cli import app
from contextwright.errors import NotAStore, StoreNotFound, StoreReadOnly
from contextwright.events import UserMessage
from contextwright.log import open_log
from contextwright.log.sqlite import SQLiteEventLog

runner = CliRunner()
READ_ONLY = (
    ["sessions"],
    ["verify"],
    ["stats"],
    ["events", "--session", "s"],
    ["inspect", "--session", "s"],
    ["why", "--session", "s", "a text"],
)


def _demo(db: Path, *extra: str):
    return runner.invoke(
        app, ["demo", "--db", str(db), "--turns", "2", "--report", str(db.with_suffix(".html")), "--json", *extra]
    )


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("store") / "demo.db"
    result = _demo(db)
    assert result.exit_code == 0, result.output
    return db


def test_demo_refuses_a_store_with_another_session(tmp_path):
    db = tmp_path / "agent.db"
    with open_log(db) as log:
        log.append("ticket-1", [UserMessage(text="keep me")], expected_seq=0)
    before = _snapshot(tmp_path)
    result = _demo(db)
    assert result.exit_code == 1 and "not a store made by the demo" in result.output and "Traceback" not in result.output
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("content", [b"", b"my notes\n", b"SQLite format 3\x00 but not really"])
def test_demo_refuses_a_file_that_is_not_its_store(tmp_path, content):
    db = tmp_path / "notes.db"
    db.write_bytes(content)
    result = _demo(db)
    assert result.exit_code == 1 and result.output.startswith("error:") and "left untouched" in result.output
    assert db.read_bytes() == content and sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_demo_does_not_create_missing_folders(tmp_path):
    result = _demo(tmp_path / "no" / "such" / "demo.db")
    assert result.exit_code == 1 and "does not exist" in result.output
    assert not (tmp_path / "no").exists()


def test_demo_replaces_its_own_store(demo_db):
    again = _demo(demo_db)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["session"] == "demo-ticket-4711"


@pytest.mark.parametrize("content", [b"", b"hello, not a database\n"])
@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: c[0])
def test_read_only_commands_leave_a_non_store_byte_identical(tmp_path, command, content):
    path = tmp_path / "x.db"
    path.write_bytes(content)
    result = runner.invoke(app, [command[0], str(path), *command[1:]])
    assert result.exit_code == 1 and result.output.startswith("error:") and len(result.output.strip().splitlines()) == 1
    assert path.read_bytes() == content and [p.name for p in tmp_path.iterdir()] == ["x.db"]


@pytest.mark.parametrize("command", READ_ONLY[:3], ids=lambda c: c[0])
def test_read_only_commands_leave_a_store_and_its_folder_unchanged(demo_db, command):
    before = _snapshot(demo_db.parent)
    result = runner.invoke(app, [command[0], str(demo_db)])
    assert result.exit_code == 0, result.output
    assert _snapshot(demo_db.parent) == before  # no -wal/-shm files appear either


def test_inspect_is_read_only_too(demo_db):
    before = _snapshot(demo_db.parent)
    result = runner.invoke(app, ["inspect", str(demo_db), "--session", "demo-ticket-4711", "--request", "1"])
    assert result.exit_code == 0, result.output
    assert _snapshot(demo_db.parent) == before


def test_read_only_sqlite_log_refuses_writes_and_missing_files(tmp_path):
    path = tmp_path / "s.db"
    with open_log(path) as log:
        log.append("s", [UserMessage(text="hi")], expected_seq=0)
    with SQLiteEventLog(path, read_only=True) as log:
        assert [e.seq for e in log.read("s")] == [1]
        assert log.setting("absent", "default") == "default"  # answered, not stored
        with pytest.raises(StoreReadOnly, match="read-only"):
            log.append("s", [UserMessage(text="no")], expected_seq=1)
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM cw_meta WHERE key = 'absent'").fetchone()[0] == 0
    with pytest.raises(StoreNotFound):
        SQLiteEventLog(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(NotAStore):
        SQLiteEventLog(tmp_path / "empty.db", read_only=True)
    assert (tmp_path / "empty.db").read_bytes() == b""


def test_demo_report_into_a_missing_folder_is_one_line_and_writes_nothing(tmp_path):
    result = runner.invoke(
        app, ["demo", "--db", str(tmp_path / "d.db"), "--turns", "2", "--report", str(tmp_path / "no" / "r.html")]
    )
    assert result.exit_code == 1 and result.output.startswith("error:") and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_demo_replaces_a_demo_store_of_an_earlier_version_without_its_mark(tmp_path):
    db = tmp_path / "old.db"
    with open_log(db) as log:
        log.append("demo-ticket-4711", [UserMessage(text="old demo")], expected_seq=0)
    assert _demo(db).exit_code == 0
    with open_log(db) as log:
        log.append("other", [UserMessage(text="mine")], expected_seq=0)
    assert _demo(db).exit_code == 1  # now it holds someone's session too


@pytest.mark.postgres
def test_stats_on_postgres_writes_nothing(postgres_dsn, postgres_schema):
    import psycopg

    url = f"{postgres_dsn}?schema={postgres_schema}"
    with open_log(url) as log:
        log.append("s", [UserMessage(text="hi")], expected_seq=0)
    query = f"SELECT key, value FROM {postgres_schema}.cw_meta ORDER BY key"
    with psycopg.connect(postgres_dsn) as conn:
        before = conn.execute(query).fetchall()
    result = runner.invoke(app, ["stats", url])
    assert result.exit_code == 0, result.output
    with psycopg.connect(postgres_dsn) as conn:
        assert conn.execute(query).fetchall() == before


def test_why_and_the_diff_are_read_only_too(demo_db):
    before = _snapshot(demo_db.parent)
    for command in (
        ["why", str(demo_db), "test_total", "--session", "demo-ticket-4711"],
        ["inspect", str(demo_db), "-s", "demo-ticket-4711", "-r", "3", "--diff"],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
    assert _snapshot(demo_db.parent) == before
