import sqlite3

import pytest

from contextwright.clock import FixedClock
from contextwright.errors import NotAStore, StorageCorrupted, StoreNotFound
from contextwright.log import open_log
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.testing.contract import EventLogContract, user


class TestSQLiteEventLog(EventLogContract):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp_path = tmp_path

    def make_log(self, clock: FixedClock) -> SQLiteEventLog:
        return SQLiteEventLog(self.tmp_path / "events.db", clock=clock)

    def store_url(self, log: SQLiteEventLog) -> str:
        return f"sqlite:///{log.path}"

    def peer(self, log: SQLiteEventLog) -> SQLiteEventLog:
        other = SQLiteEventLog(log.path, clock=log.clock)
        self.__dict__.setdefault("_opened", []).append(other)
        return other


def test_uses_wal_and_survives_reopen(tmp_path):
    path = tmp_path / "a.db"
    with SQLiteEventLog(path, clock=FixedClock()) as log:
        log.append("s", [user("a")], expected_seq=0)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with open_log(f"sqlite:///{path}") as log:
        assert [e.payload.text for e in log.read("s")] == ["a"]


def test_opening_without_create_needs_an_existing_store(tmp_path):
    with pytest.raises(StoreNotFound):
        SQLiteEventLog(tmp_path / "missing.db", create=False)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAStore):
        SQLiteEventLog(other, create=False)
    text_file = tmp_path / "plain.db"
    text_file.write_text("this is not a database at all, just some words" * 50)
    with pytest.raises(NotAStore):
        SQLiteEventLog(text_file)


def test_tampered_payload_is_reported_not_returned(tmp_path):
    path = tmp_path / "t.db"
    with SQLiteEventLog(path, clock=FixedClock()) as log:
        log.append("s", [user("original")], expected_seq=0)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE cw_events SET payload = replace(payload, 'original', 'tampered')")
    conn.commit()
    conn.close()
    with SQLiteEventLog(path) as log, pytest.raises(StorageCorrupted) as info:
        log.read("s")
    assert info.value.seq == 1
