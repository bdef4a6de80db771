import json
import sqlite3

import pytest

from contextwright.clock import FixedClock
from contextwright.errors import NotAStore, StorageCorrupted, StoreNotFound
from contextwright.log import _migrations, open_log
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

    def tamper(self, log: SQLiteEventLog, what: str, **details) -> None:
        conn = sqlite3.connect(log.path)
        if what == "artifact":
            conn.execute("UPDATE cw_artifacts SET content = ? WHERE ref = ?", (details["content"], details["ref"]))
        elif what == "checkpoint":
            column = {"body": "body", "head_sha256": "head_sha256", "seq": "seq"}[details["column"]]
            conn.execute(
                f"UPDATE cw_checkpoints SET {column} = ? WHERE session_id = ?", (details["value"], details["session_id"])
            )
        else:
            conn.execute("UPDATE cw_sessions SET last_seq = ? WHERE session_id = ?", (details["seq"], details["session_id"]))
        conn.commit()
        conn.close()


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


def _open_fds() -> int:
    import os

    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/fd"), reason="counts file descriptors through /proc")
def test_many_short_threads_do_not_leave_connections_open(tmp_path):
    import threading

    with SQLiteEventLog(tmp_path / "threads.db", clock=FixedClock()) as log:
        log.append("s", [user("a")], expected_seq=0)
        before = _open_fds()

        def one_call(i: int) -> None:
            log.read("s")
            log.put_artifact(f"output {i}")

        # Threads run a few at a time and end, as in a server that starts a thread per request.
        for start in range(0, 600, 8):
            threads = [threading.Thread(target=one_call, args=(i,)) for i in range(start, start + 8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        # Before the pool, each thread kept its connection (and its file descriptors) until close().
        assert log.open_connections() <= 4
        assert _open_fds() - before <= 4 * 3, f"{_open_fds() - before} file descriptors more after 600 threads"
        assert log.last_seq("s") == 1


def _store_at_version(path, version: int, payloads) -> sqlite3.Connection:
    """A store built by hand at schema ``version`` holding ``payloads`` as session "s"; the connection stays open."""
    from contextwright.events.registry import payload_digest, payload_json
    from contextwright.log import _migrations

    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cw_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for migration in _migrations.SQLITE[:version]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO cw_migrations VALUES (?, ?, ?)", (migration.version, migration.name, "2026-01-01T00:00:00.000000Z")
        )
    for seq, payload in enumerate(payloads, start=1):
        text = payload_json(payload)
        conn.execute(
            "INSERT INTO cw_events VALUES ('s', ?, ?, ?, ?, '2026-01-01T00:00:00.000000Z', NULL)",
            (seq, type(payload).TYPE, text, payload_digest(text)),
        )
    conn.execute("INSERT INTO cw_sessions (session_id, last_seq) VALUES ('s', ?)", (len(payloads),))
    return conn


def test_an_old_store_is_indexed_when_migrated(tmp_path):
    """Events stored before the session-rules index existed are indexed by the migration that adds it."""
    from contextwright.events import AssistantMessage, ToolCall, ToolResult

    path = tmp_path / "v3.db"
    payloads = [
        AssistantMessage(tool_calls=(ToolCall(id="c1", name="t", arguments={}), ToolCall(id="c2", name="t", arguments={}))),
        ToolResult(call_id="c1", tool_name="t", output="ok"),
    ]
    conn = _store_at_version(path, 3, payloads)
    conn.commit()
    conn.close()
    from contextwright.errors import SessionInvariantViolated

    with SQLiteEventLog(path, clock=FixedClock()) as log:
        with pytest.raises(SessionInvariantViolated) as info:
            log.append("s", [ToolResult(call_id="c1", tool_name="t", output="again")], expected_seq=2)
        assert info.value.rule == "second_tool_result"
        log.append("s", [ToolResult(call_id="c2", tool_name="t", output="ok")], expected_seq=2)
        assert log.verify().ok


def _traced(log: SQLiteEventLog) -> list[str]:
    """The statements the log's connection runs from now on (one connection: this thread's)."""
    statements: list[str] = []
    conn = log._take()
    conn.set_trace_callback(statements.append)
    log._give_back(conn)
    return statements


def test_a_lone_tool_result_answers_its_call_in_one_statement(tmp_path):
    """The seq moves and the open call is answered by one UPDATE of the session row; a result the rules refuse still names its rule."""
    from contextwright.errors import SessionInvariantViolated
    from contextwright.events import AssistantMessage, ToolCall, ToolResult

    with SQLiteEventLog(tmp_path / "a.db", clock=FixedClock()) as log:
        log.append("s", [AssistantMessage(tool_calls=(ToolCall(id="c1", name="t", arguments={}),))], expected_seq=0)
        statements = _traced(log)
        log.append("s", [ToolResult(call_id="c1", tool_name="t", output="ok")], expected_seq=1)
        assert [s.split()[0] for s in statements] == ["BEGIN", "UPDATE", "INSERT", "COMMIT"], statements
        for call_id, rule in (("c1", "second_tool_result"), ("c2", "unknown_tool_call")):
            with pytest.raises(SessionInvariantViolated) as info:
                log.append("s", [ToolResult(call_id=call_id, tool_name="t", output="again")], expected_seq=2)
            assert info.value.rule == rule
        with pytest.raises(SessionInvariantViolated) as info:
            log.append("other", [ToolResult(call_id="c1", tool_name="t", output="ok")], expected_seq=0)
        assert info.value.rule == "orphaned_tool_result"
        assert log.last_seq("s") == 2 and log.last_seq("other") == 0 and log.verify().ok


def test_a_lone_assistant_message_opens_its_calls_without_the_general_check(tmp_path, monkeypatch):
    """One assistant message asks nothing of the rules: its calls are indexed directly, as a batch would index them."""
    from contextwright.events import AssistantMessage, ToolCall, ToolResult
    from contextwright.log import sqlite as sqlite_module

    def turns() -> list[object]:
        return [
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="t", arguments={"a": 1}),)),
            ToolResult(call_id="c1", tool_name="t", output="ok"),
            AssistantMessage(
                text="two", tool_calls=(ToolCall(id="c2", name="t", arguments={}), ToolCall(id="c\x00", name="t", arguments={}))
            ),
            AssistantMessage(text="no calls"),
            AssistantMessage(tool_calls=(ToolCall(id="c1", name="t", arguments={}),)),  # a reused id starts over
        ]

    with SQLiteEventLog(tmp_path / "batch.db", clock=FixedClock()) as log:
        log.append("s", turns(), expected_seq=0)
        expected = log._index_state("s")
    assert expected[0] == {"c1": False, "c2": False, "c\x00": False}

    def general_check(*args, **kwargs):
        raise AssertionError("a lone assistant message took the general check")

    with SQLiteEventLog(tmp_path / "single.db", clock=FixedClock()) as log:
        for seq, event in enumerate(turns()):
            if isinstance(event, AssistantMessage):
                monkeypatch.setattr(sqlite_module, "check_batch", general_check)
            log.append("s", [event], expected_seq=seq)
            monkeypatch.undo()
        assert log._index_state("s") == expected
        statements = _traced(log)
        log.append("s", [ToolResult(call_id="c1", tool_name="t", output="ok")], expected_seq=5)
        log.append("s", [turns()[0]], expected_seq=6)
        # Each writes one row besides its event: the session row, which moves the seq and holds the open calls.
        assert [s.split()[:2] for s in statements] == [
            ["BEGIN", "IMMEDIATE"],
            ["UPDATE", "cw_sessions"],
            ["INSERT", "INTO"],
            ["COMMIT"],
        ] * 2
        assert log.verify().ok


def _sql(path, statement: str, params: tuple = ()) -> None:
    conn = sqlite3.connect(path)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


def test_verify_finds_tampering_with_events_and_open_calls(tmp_path):
    """A deleted tail, a rewritten payload and an edited list of open calls are each reported."""
    from contextwright.events import AssistantMessage, ToolCall, ToolResult

    def store(name: str) -> SQLiteEventLog:
        log = SQLiteEventLog(tmp_path / name, clock=FixedClock())
        log.append(
            "s",
            [
                user("go"),
                AssistantMessage(
                    tool_calls=(ToolCall(id="c1", name="t", arguments={}), ToolCall(id="c2", name="t", arguments={}))
                ),
            ],
            expected_seq=0,
        )
        log.append("s", [ToolResult(call_id="c1", tool_name="t", output="ok")], expected_seq=2)
        log.append("s", [user("more")], expected_seq=3)
        assert log.verify().ok
        assert log._index_state("s")[0] == {"c2": False}
        return log

    cases = {
        "tail": ("DELETE FROM cw_events WHERE session_id = 's' AND seq = 4", (), "last seq"),
        "payload": (
            "UPDATE cw_events SET payload = ? WHERE seq = 1",
            ('{"author":"user","steering":false,"text":"no"}',),
            "sha256",
        ),
        "closed": ("UPDATE cw_sessions SET open_calls = ''", (), "index"),
        "reopened": ("UPDATE cw_sessions SET open_calls = open_calls || ?", ('"c1"\n',), "index"),
        "garbage": ("UPDATE cw_sessions SET open_calls = ?", ('"c2"\n[1]\n',), "index"),
    }
    for name, (statement, params, word) in cases.items():
        log = store(f"{name}.db")
        _sql(log.path, statement, params)
        report = log.verify()
        assert not report.ok and any(word in p for p in report.problems), (name, report.problems)
        log.close()


def test_a_version_4_store_keeps_its_open_calls_when_migrated(tmp_path):
    """Migration 5 moves the open calls from the tool-call table into the session row and drops the table."""
    from contextwright.errors import SessionInvariantViolated
    from contextwright.events import AssistantMessage, ToolCall, ToolResult

    path = tmp_path / "v4.db"
    calls = tuple(ToolCall(id=i, name="t", arguments={}) for i in ("c1", "c2", 'c"\n3'))
    payloads = [AssistantMessage(tool_calls=calls), ToolResult(call_id="c1", tool_name="t", output="ok")]
    conn = _store_at_version(path, 4, payloads)
    # The index as version 4 kept it: every call, answered or not (ids as JSON strings).
    conn.executemany("INSERT INTO cw_tool_calls VALUES ('s', ?, 1, ?)", [('"c1"', 2), ('"c2"', None), ('"c\\"\\n3"', None)])
    conn.commit()
    conn.close()

    with SQLiteEventLog(path, clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.SQLITE)
        assert log._index_state("s")[0] == {"c2": False, 'c"\n3': False}
        assert log.verify().ok
        for call_id, rule in (("c1", "second_tool_result"), ("c9", "unknown_tool_call")):
            with pytest.raises(SessionInvariantViolated) as info:
                log.append("s", [ToolResult(call_id=call_id, tool_name="t", output="again")], expected_seq=2)
            assert info.value.rule == rule
        log.append("s", [ToolResult(call_id='c"\n3', tool_name="t", output="ok")], expected_seq=2)
        log.append("s", [ToolResult(call_id="c2", tool_name="t", output="ok")], expected_seq=3)
        assert log._index_state("s")[0] == {} and log.verify().ok
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert "cw_tool_calls" not in tables


def test_open_calls_are_the_same_whichever_path_indexed_them(tmp_path):
    """Lone appends (one statement each) and batches (the general check) leave the same session row."""
    from contextwright.events import AssistantMessage, ToolCall, ToolResult

    def call(i: str) -> ToolCall:
        return ToolCall(id=i, name="t", arguments={})

    turns = [
        AssistantMessage(tool_calls=(call("a"), call("b"), call("c\x00"))),
        ToolResult(call_id="b", tool_name="t", output="ok"),
        AssistantMessage(tool_calls=(call("a"), call("d"))),  # "a" is reused while open: it starts over
        ToolResult(call_id="a", tool_name="t", output="ok"),
        AssistantMessage(tool_calls=tuple(call(f"m{i}") for i in range(12))),  # more than the lone path takes
        AssistantMessage(tool_calls=(call("b"),)),  # an answered id reused
    ]
    rows = []
    for name, batches in (("lone", [[t] for t in turns]), ("batch", [turns[:3], turns[3:]]), ("whole", [turns])):
        with SQLiteEventLog(tmp_path / f"{name}.db", clock=FixedClock()) as log:
            seq = 0
            for batch in batches:
                seq = log.append("s", batch, expected_seq=seq)[-1].seq
            assert log.verify().ok
        conn = sqlite3.connect(tmp_path / f"{name}.db")
        rows.append(conn.execute("SELECT last_seq, open_calls FROM cw_sessions").fetchall())
        conn.close()
    assert rows[0] == rows[1] == rows[2]
    opened = ["c\x00", "d", *(f"m{i}" for i in range(12)), "b"]
    assert rows[0] == [(6, "".join(f"{json.dumps(i)}\n" for i in opened))]


def test_a_keyed_read_seeks_in_the_key_index(tmp_path):
    """The prefix range is answered from the idempotency index, not by scanning the session."""
    from contextwright.log.base import key_prefix_range
    from contextwright.log.sqlite import _READ_KEYED

    with SQLiteEventLog(tmp_path / "k.db", clock=FixedClock()) as log:
        log.append("s", [user(str(i), key=f"k{i % 7}:{i}") for i in range(50)], expected_seq=0)
        assert [e.payload.text for e in log.read_keyed("s", "k3:")] == ["3", "10", "17", "24", "31", "38", "45"]
    conn = sqlite3.connect(tmp_path / "k.db")
    for analyzed in (False, True):  # with and without the statistics ANALYZE gathers
        if analyzed:
            conn.execute("ANALYZE")
        plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {_READ_KEYED}", ("s", *key_prefix_range("k3:"))))
        assert "INDEX cw_events_idempotency (session_id=? AND idempotency_key>? AND idempotency_key<?)" in plan, plan
    conn.close()
