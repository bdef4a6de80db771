"""The event-log contract, written once and run against every backend.

Subclass :class:`EventLogContract` in a pytest module, implement
:meth:`~EventLogContract.make_log` (and, for stores that other processes can
open, :meth:`~EventLogContract.store_url`), and every test below runs against
your adapter. Optional capabilities (multi-process racing, crash safety) run
only when ``store_url`` is implemented.

Each test calls ``self.open()`` rather than taking a fixture, so a test can also
be run by hand against a deliberately broken adapter to show that it catches
the defect.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

from contextwright.canonical import canonical_json, sha256_tagged
from contextwright.clock import FixedClock
from contextwright.errors import (
    ArtifactNotFound,
    EventError,
    IdempotencyConflict,
    InvalidIdempotencyKey,
    InvalidSessionId,
    MalformedPayload,
    PayloadLimitExceeded,
    SeqConflict,
    SessionInvariantViolated,
    UnknownEventType,
    UsageError,
)
from contextwright.events import (
    AssistantMessage,
    EpochRotated,
    NewEvent,
    PlanCreated,
    RequestBuilt,
    ToolCall,
    ToolResult,
    UserMessage,
)
from contextwright.events.limits import MAX_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH
from contextwright.events.registry import encode_payload, type_of
from contextwright.log.base import AsyncEventLog, EventLog

START = "2026-03-01T23:59:58+00:00"


def user(text: str, key: str | None = None) -> NewEvent:
    """A user-message event, optionally with an idempotency key."""
    return NewEvent.of(UserMessage(text=text), idempotency_key=key)


class EventLogContract:
    """Mixin of contract tests; subclasses provide ``make_log``."""

    race_writers = 4
    race_rounds = 25

    # -- what a backend's test module provides --------------------------------

    def make_log(self, clock: FixedClock) -> EventLog:
        """Return a new, empty log using ``clock``."""
        raise NotImplementedError

    def store_url(self, log: EventLog) -> str | None:
        """A URL that another process can pass to ``open_log`` to reach the same store."""
        return None

    def peer(self, log: EventLog) -> EventLog:
        """A second handle on the same store (another connection where that exists)."""
        return log

    def tamper(self, log: EventLog, what: str, **details: Any) -> None:
        """Change the stored bytes behind the log's back, as an attacker or a bad disk would.

        ``what`` is ``"artifact"`` (rewrite the content stored under ``details["ref"]``),
        ``"last_seq"`` (set ``details["session_id"]``'s recorded last seq to ``details["seq"]``)
        or ``"checkpoint"`` (set the column ``details["column"]`` of ``details["session_id"]``'s
        checkpoint to ``details["value"]``).
        Optional: ``verify`` tests skip when a backend does not implement it."""
        raise NotImplementedError

    # -- helpers ----------------------------------------------------------------

    def open(self, clock: FixedClock | None = None) -> EventLog:
        """Open a fresh log for this test; it is closed in teardown."""
        log = self.make_log(clock or FixedClock(START, step=1))
        self.__dict__.setdefault("_opened", []).append(log)
        return log

    def teardown_method(self, method: Any = None) -> None:
        for log in self.__dict__.pop("_opened", []):
            log.close()

    @staticmethod
    def snapshot(log: EventLog, session_id: str) -> list[tuple[Any, ...]]:
        """Everything observable about a session, for 'nothing changed' checks."""
        return [(e.seq, e.type, e.payload_sha256, e.at, e.idempotency_key) for e in log.read(session_id)]

    # -- basic shape -----------------------------------------------------------

    def test_unknown_session_is_empty(self) -> None:
        log = self.open()
        assert log.last_seq("nobody") == 0
        assert log.read("nobody") == []
        assert log.sessions() == []

    def test_append_numbers_events_from_one_without_gaps(self) -> None:
        log = self.open()
        first = log.append("s", [user("a")], expected_seq=0)
        more = log.append("s", [user("b"), user("c"), user("d")], expected_seq=1)
        assert [e.seq for e in first + more] == [1, 2, 3, 4]
        assert [e.seq for e in log.read("s")] == [1, 2, 3, 4]
        assert log.last_seq("s") == 4

    def test_read_returns_what_was_appended(self) -> None:
        log = self.open()
        call = ToolCall(id="c1", name="run_tests", arguments={"path": "tests/ünï", "n": 3})
        payloads: list[UserMessage | AssistantMessage | ToolResult] = [
            UserMessage(text="fix CI ✓ — naïve 漢字 \x00 \u2028"),
            AssistantMessage(text="", tool_calls=(call,)),
            ToolResult(call_id="c1", tool_name="run_tests", output="1 failed", is_error=True, exit_code=1),
        ]
        appended = log.append("s", payloads, expected_seq=0)
        read = log.read("s")
        assert read == appended
        assert [e.payload for e in read] == payloads
        for event, payload in zip(read, payloads):
            # Check the stored hash is the tagged SHA-256 of the canonical payload.
            assert event.payload_sha256 == sha256_tagged(canonical_json(encode_payload(payload)))
            assert event.type == type_of(payload)
            assert event.ref == f"s#{event.seq}"

    def test_event_time_comes_from_the_injected_clock(self) -> None:
        clock = FixedClock(START)
        log = self.open(clock)
        clock.set("2026-03-02T00:00:05+00:00")
        batch = log.append("s", [user("a"), user("b")], expected_seq=0)
        assert [e.at for e in batch] == [_dt.datetime(2026, 3, 2, 0, 0, 5, tzinfo=_dt.UTC)] * 2
        assert [e.at for e in log.read("s")] == [e.at for e in batch]

    def test_read_after_seq_and_limit(self) -> None:
        log = self.open()
        log.append("s", [user(str(i)) for i in range(10)], expected_seq=0)
        assert [e.seq for e in log.read("s", after_seq=7)] == [8, 9, 10]
        assert [e.seq for e in log.read("s", after_seq=2, limit=3)] == [3, 4, 5]
        assert log.read("s", after_seq=10) == []
        assert log.read("s", limit=0) == []

    def test_sessions_are_independent_and_listed_once(self) -> None:
        log = self.open()
        log.append("b", [user("1")], expected_seq=0)
        log.append("a", [user("1"), user("2")], expected_seq=0)
        log.append("b", [user("2")], expected_seq=1)
        assert log.sessions() == ["a", "b"]
        assert [e.seq for e in log.read("a")] == [1, 2]
        assert [e.payload.text for e in log.read("b")] == ["1", "2"]

    def test_a_second_handle_sees_the_same_events(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        other = self.peer(log)
        assert other.read("s") == log.read("s")
        other.append("s", [user("b")], expected_seq=1)
        assert log.last_seq("s") == 2

    # -- optimistic concurrency ------------------------------------------------

    def test_stale_expected_seq_conflicts_and_writes_nothing(self) -> None:
        log = self.open()
        log.append("s", [user("a"), user("b")], expected_seq=0)
        before = self.snapshot(log, "s")
        for wrong in (0, 1, 3, 99):
            try:
                log.append("s", [user("late")], expected_seq=wrong)
            except SeqConflict as exc:
                assert (exc.session_id, exc.expected_seq, exc.actual_seq) == ("s", wrong, 2)
            else:
                raise AssertionError(f"expected_seq={wrong} was accepted with last seq 2")
        assert self.snapshot(log, "s") == before

    def test_a_new_session_must_start_from_zero(self) -> None:
        log = self.open()
        try:
            log.append("fresh", [user("a")], expected_seq=1)
        except SeqConflict:
            pass
        else:
            raise AssertionError("appending at expected_seq=1 to an empty session was accepted")
        assert log.read("fresh") == [] and log.sessions() == []

    # -- atomic batches --------------------------------------------------------

    def test_a_batch_with_one_bad_event_writes_nothing(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        before = self.snapshot(log, "s")
        bad_batches: list[tuple[list[Any], type[Exception]]] = [
            ([user("b"), NewEvent(type="no.such.type", payload={}), user("c")], UnknownEventType),
            ([user("b"), NewEvent(type="message.user", payload={"txt": 1})], MalformedPayload),
            ([user("b"), NewEvent(type="tool.result", payload={"call_id": "x"})], MalformedPayload),
        ]
        for batch, error in bad_batches:
            try:
                log.append("s", batch, expected_seq=1)
            except error:
                pass
            else:
                raise AssertionError(f"batch with a bad event was accepted: {batch}")
        assert self.snapshot(log, "s") == before

    def test_a_conflicting_batch_writes_none_of_its_events(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        try:
            log.append("s", [user("b"), user("c"), user("d")], expected_seq=0)
        except SeqConflict:
            pass
        assert [e.payload.text for e in log.read("s")] == ["a"]
        assert log.last_seq("s") == 1

    # -- idempotency -----------------------------------------------------------

    def test_reused_key_returns_the_stored_event_and_writes_nothing(self) -> None:
        log = self.open()
        stored = log.append("s", [user("a", key="k1"), user("b", key="k2")], expected_seq=0)
        log.append("s", [user("c")], expected_seq=2)
        # The retry still says expected_seq=0: a retry after a lost reply must succeed.
        again = log.append("s", [user("a", key="k1"), user("b", key="k2")], expected_seq=0)
        assert again == stored
        assert log.last_seq("s") == 3
        single = log.append("s", [user("b", key="k2")], expected_seq=3)
        assert single == stored[1:]
        assert log.last_seq("s") == 3

    def test_keys_are_scoped_to_their_session(self) -> None:
        log = self.open()
        log.append("s1", [user("a", key="k")], expected_seq=0)
        other = log.append("s2", [user("a", key="k")], expected_seq=0)
        assert other[0].session_id == "s2" and other[0].seq == 1

    def test_reused_key_with_different_content_conflicts(self) -> None:
        log = self.open()
        log.append("s", [user("a", key="k1")], expected_seq=0)
        before = self.snapshot(log, "s")
        for batch in (
            [user("changed", key="k1")],
            [user("a", key="k1"), user("new", key="k9")],
            [user("a", key="k1"), user("x")],
        ):
            try:
                log.append("s", batch, expected_seq=1)
            except IdempotencyConflict as exc:
                assert exc.session_id == "s"
            else:
                raise AssertionError(f"misused idempotency key accepted: {batch}")
        assert self.snapshot(log, "s") == before

    def test_duplicate_key_within_one_batch_is_rejected(self) -> None:
        log = self.open()
        try:
            log.append("s", [user("a", key="k"), user("b", key="k")], expected_seq=0)
        except UsageError:
            pass
        else:
            raise AssertionError("a batch repeating an idempotency key was accepted")
        assert log.read("s") == []

    # Keys that sort next to one another or next to a prefix's bounds, appended out of key order:
    # LIKE wildcards, a key that is a prefix of others, non-ASCII, the highest code point, the code
    # points around the surrogates, and punctuation or case a linguistic collation would ignore.
    KEYED = (
        "a:2",
        "a:1",
        "a:",
        "a",
        "a:%",
        "a%",
        "a_",
        "ab",
        "a;",
        "A:1",
        "a-b",
        "a b",
        "a:\u00e9",
        "a:\U0001f600",
        "a:\uffff",
        "a:\U0010ffff",
        "a:\U0010ffffz",
        "\U0010ffff",
        "\U0010ffff\U0010ffff",
        "x\ud7ff",
        "x\ud7ffy",
        "x\ue000",
    )
    PREFIXES = ("a", "a:", "a%", "a_", "a:\U0010ffff", "\U0010ffff", "x\ud7ff", "x\ue000", "A", "b", "zz")

    def test_keyed_read_finds_exactly_the_keys_with_a_prefix_in_seq_order(self) -> None:
        log = self.open()
        log.append("s", [user("plain")], expected_seq=0)
        for i, key in enumerate(self.KEYED):
            log.append("s", [user(f"m{i}", key=key), user(f"n{i}")], expected_seq=1 + 2 * i)
        log.append("other", [user("a", key="a:1"), user("b", key="a:3")], expected_seq=0)
        reader = self.peer(log)
        stored = log.read("s")
        for prefix in (*self.PREFIXES, *self.KEYED):
            expected = [e for e in stored if e.idempotency_key is not None and e.idempotency_key.startswith(prefix)]
            found = reader.read_keyed("s", prefix)
            assert [e.idempotency_key for e in found] == [e.idempotency_key for e in expected], prefix
            assert found == expected, prefix
        assert [e.seq for e in reader.read_keyed("s", "a:")] == [2, 4, 6, 10, 26, 28, 30, 32, 34]
        assert [e.payload.text for e in reader.read_keyed("other", "a:")] == ["a", "b"]
        assert reader.read_keyed("nobody", "a") == []

    def test_keyed_read_sees_replays_and_refuses_bad_prefixes(self) -> None:
        log = self.open()
        stored = log.append("s", [user("a", key="k#1.0"), user("b", key="k#1.1")], expected_seq=0)
        log.append("s", [user("a", key="k#1.0"), user("b", key="k#1.1")], expected_seq=0)
        log.append("s", [user("c", key="k#2.0")], expected_seq=2)
        assert log.read_keyed("s", "k#1.") == stored
        assert [e.seq for e in log.read_keyed("s", "k#")] == [1, 2, 3]
        for prefix in ("", "k\n", "x" * 201):
            try:
                log.read_keyed("s", prefix)
            except InvalidIdempotencyKey:
                pass
            else:
                raise AssertionError(f"bad key prefix {prefix!r} accepted")
        try:
            log.read_keyed("", "k")
        except InvalidSessionId:
            pass
        else:
            raise AssertionError("an empty session id was accepted")

    # -- bad input -------------------------------------------------------------

    def test_bad_input_gets_typed_errors_and_changes_nothing(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        before = self.snapshot(log, "s")
        attempts: list[tuple[Callable[[], Any], type[Exception]]] = [
            (lambda: log.append("", [user("x")], expected_seq=0), InvalidSessionId),
            (lambda: log.append("x" * 201, [user("x")], expected_seq=0), InvalidSessionId),
            (lambda: log.append("bad\nid", [user("x")], expected_seq=0), InvalidSessionId),
            (lambda: log.append(7, [user("x")], expected_seq=0), InvalidSessionId),  # type: ignore[arg-type]  # wrong on purpose
            (lambda: log.append("s", [], expected_seq=1), UsageError),
            (lambda: log.append("s", [user("x")], expected_seq=-1), UsageError),
            (lambda: log.append("s", [user("x")], expected_seq="1"), UsageError),  # type: ignore[arg-type]  # wrong on purpose
            (lambda: log.append("s", user("x"), expected_seq=1), UsageError),  # type: ignore[arg-type]  # wrong on purpose
            (lambda: log.append("s", [object()], expected_seq=1), UsageError),
            (
                lambda: log.append("s", [NewEvent(type="message.user", payload={"text": float("nan")})], expected_seq=1),
                EventError,
            ),
            (lambda: log.append("s", [ToolResult(call_id="c", tool_name="t", output=3)], expected_seq=1), MalformedPayload),  # type: ignore[arg-type]  # wrong on purpose
            (lambda: log.read("s", after_seq=-1), UsageError),
        ]
        for attempt, error in attempts:
            try:
                attempt()
            except error:
                pass
            else:
                raise AssertionError(f"bad input accepted; expected {error.__name__}")
        assert self.snapshot(log, "s") == before
        assert log.sessions() == ["s"]

    # -- concurrency -----------------------------------------------------------

    def test_threads_racing_on_one_seq_have_exactly_one_winner_per_round(self) -> None:
        log = self.open()
        handles = [self.peer(log) for _ in range(self.race_writers)]
        barrier = threading.Barrier(self.race_writers)
        wins: dict[int, list[int]] = {r: [] for r in range(self.race_rounds)}
        errors: list[BaseException] = []

        def writer(index: int) -> None:
            for round_no in range(self.race_rounds):
                barrier.wait()
                try:
                    handles[index].append("race", [user(f"{index}:{round_no}")], expected_seq=round_no)
                    wins[round_no].append(index)
                except SeqConflict:
                    pass
                except BaseException as exc:  # surfaced below
                    errors.append(exc)

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(self.race_writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert all(len(w) == 1 for w in wins.values()), wins
        events = log.read("race")
        assert [e.seq for e in events] == list(range(1, self.race_rounds + 1))
        assert [e.payload.text for e in events] == [f"{wins[r][0]}:{r}" for r in range(self.race_rounds)]

    def test_processes_racing_on_one_seq_have_exactly_one_winner_per_round(self) -> None:
        log = self.open()
        url = self.store_url(log)
        if url is None:
            import pytest

            pytest.skip("optional capability: this backend cannot be opened from another process")
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(self.race_writers)
        results = ctx.Queue()
        procs = [
            ctx.Process(target=_race_in_process, args=(url, i, self.race_rounds, barrier, results))
            for i in range(self.race_writers)
        ]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failures = [o for o in outcomes if isinstance(o, str)]
        assert not failures, failures
        wins: dict[int, list[int]] = {r: [] for r in range(self.race_rounds)}
        for index, won_rounds in outcomes:
            for r in won_rounds:
                wins[r].append(index)
        assert all(len(w) == 1 for w in wins.values()), wins
        assert [e.seq for e in log.read("race")] == list(range(1, self.race_rounds + 1))

    def test_a_writer_killed_mid_stream_leaves_no_partial_batch(self) -> None:
        log = self.open()
        url = self.store_url(log)
        if url is None:
            import pytest

            pytest.skip("optional capability: this backend cannot be opened from another process")
        for attempt in range(3):
            start = log.last_seq("crash")
            proc = subprocess.Popen(
                [sys.executable, "-c", _CRASH_WRITER, url, "crash"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            assert proc.stdout is not None
            proc.stdout.readline()  # the writer says it is appending
            deadline = time.monotonic() + 60
            while log.last_seq("crash") < start + 30 + 7 * attempt and time.monotonic() < deadline:
                time.sleep(0.005)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        events = self.peer(log).read("crash")
        assert events, "the writer stored nothing before it was killed"
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert len(events) % 3 == 0, "a batch of three was stored in part"
        for i in range(0, len(events), 3):
            texts = [e.payload.text for e in events[i : i + 3]]
            batch_ids = {t.split("/")[0] for t in texts}
            assert len(batch_ids) == 1 and [t.split("/")[1] for t in texts] == ["0", "1", "2"], texts
        # The log still accepts appends after the crash.
        log.append("crash", [user("after")], expected_seq=len(events))

    # -- transactions (optional) -------------------------------------------------

    def _transactional(self) -> EventLog:
        log = self.open()
        if not log.atomic_transactions:
            import pytest

            pytest.skip("optional capability: this backend stores each write on its own")
        return log

    def test_a_transaction_stores_its_writes_together_at_its_end(self) -> None:
        log = self._transactional()
        peer = self.peer(log)
        with log.transaction():
            log.append("a", [user("one")], expected_seq=0)
            ref = log.put_artifact("the whole output")
            log.append("b", [user("two"), user("three")], expected_seq=0)
            log.append("a", [user("four", key="k4")], expected_seq=1)
            # The thread reads its own writes inside the block.
            assert [e.payload.text for e in log.read("a")] == ["one", "four"] and log.last_seq("b") == 2
            assert log.get_artifact(ref) == "the whole output"
            if peer is not log:
                assert peer.read("a") == [] and peer.last_seq("b") == 0  # not committed yet
        assert [e.payload.text for e in self.peer(log).read("a")] == ["one", "four"]
        assert [e.payload.text for e in self.peer(log).read("b")] == ["two", "three"]
        assert self.peer(log).get_artifact(ref) == "the whole output"
        # A retry of a keyed append after the commit writes nothing again.
        with log.transaction():
            assert [e.seq for e in log.append("a", [user("four", key="k4")], expected_seq=1)] == [2]
        assert log.last_seq("a") == 2

    def test_a_transaction_that_raises_stores_nothing(self) -> None:
        log = self._transactional()
        log.append("a", [user("before")], expected_seq=0)
        try:
            with log.transaction():
                log.append("a", [user("one")], expected_seq=1)
                with log.transaction():  # a nested block joins the outer one
                    log.append("b", [user("two")], expected_seq=0)
                    ref = log.put_artifact("never stored")
                raise RuntimeError("the request failed")
        except RuntimeError:
            pass
        for handle in (log, self.peer(log)):
            assert [e.payload.text for e in handle.read("a")] == ["before"] and handle.read("b") == []
            assert handle.last_seq("a") == 1 and "b" not in handle.sessions()
        try:
            log.get_artifact(ref)
        except ArtifactNotFound:
            pass
        else:
            raise AssertionError("an artifact of a rolled back transaction was stored")
        log.append("a", [user("after")], expected_seq=1)  # the log goes on as before

    def test_an_append_that_fails_inside_a_transaction_fails_alone(self) -> None:
        log = self._transactional()
        with log.transaction():
            log.append("a", [user("one")], expected_seq=0)
            try:
                log.append("a", [user("stale"), user("stale too")], expected_seq=0)
            except SeqConflict:
                pass
            else:
                raise AssertionError("a stale append inside a transaction was stored")
            try:
                log.append("a", [_result("nobody")], expected_seq=1)
            except SessionInvariantViolated:
                pass
            else:
                raise AssertionError("a result without its call was stored")
            log.append("a", [user("two")], expected_seq=1)
        assert [e.payload.text for e in self.peer(log).read("a")] == ["one", "two"]

    def test_a_writer_killed_inside_a_transaction_leaves_nothing_of_it(self) -> None:
        log = self._transactional()
        url = self.store_url(log)
        if url is None:
            import pytest

            pytest.skip("optional capability: this backend cannot be opened from another process")
        log.append("killed", [user("before")], expected_seq=0)
        proc = subprocess.Popen([sys.executable, "-c", _TRANSACTION_WRITER, url, "killed"], stdout=subprocess.PIPE)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"appended"  # two appends and an artifact, not committed
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        peer = self.peer(log)
        assert [e.payload.text for e in peer.read("killed")] == ["before"] and peer.read("killed-too") == []
        log.append("killed", [user("after")], expected_seq=1)

    # -- settings ----------------------------------------------------------------

    def test_a_setting_keeps_its_first_value(self) -> None:
        log = self.open()
        assert log.setting("secret", "first") == "first"
        assert log.setting("secret", "second") == "first"
        assert self.peer(log).setting("secret", "third") == "first"
        assert log.setting("other", "x") == "x"

    # -- artifacts ---------------------------------------------------------------

    def test_artifacts_are_content_addressed_and_idempotent(self) -> None:
        log = self.open()
        text = "full output ✓\n" * 1000
        ref = log.put_artifact(text, kind="tool_output")
        assert ref == sha256_tagged(text)
        assert log.put_artifact(text, kind="tool_output") == ref
        assert log.get_artifact(ref) == text
        assert self.peer(log).get_artifact(ref) == text
        try:
            log.get_artifact("sha256:" + "0" * 64)
        except ArtifactNotFound:
            pass
        else:
            raise AssertionError("a missing artifact was returned")

    # -- session rules (checked from the log alone) ----------------------------

    def expect_refused(self, log: EventLog, session_id: str, batch: list[Any], rule: str) -> None:
        """Append ``batch`` and check it is refused under ``rule`` with nothing written."""
        before = self.snapshot(log, session_id)
        try:
            log.append(session_id, batch, expected_seq=log.last_seq(session_id))
        except SessionInvariantViolated as exc:
            assert exc.rule == rule, f"refused as {exc.rule}, expected {rule}: {exc}"
            assert exc.session_id == session_id
        else:
            raise AssertionError(f"a batch breaking {rule} was accepted: {batch}")
        assert self.snapshot(log, session_id) == before

    def test_an_orphaned_tool_result_is_refused(self) -> None:
        log = self.open()
        log.append("s", [user("go")], expected_seq=0)
        self.expect_refused(log, "s", [_result("c1")], "orphaned_tool_result")
        self.expect_refused(log, "s", [user("more"), _result("c1")], "orphaned_tool_result")
        # Another session's call does not count.
        log.append("other", [_calls("c1")], expected_seq=0)
        self.expect_refused(self.peer(log), "s", [_result("c1")], "orphaned_tool_result")

    def test_a_result_for_an_unknown_call_is_refused(self) -> None:
        log = self.open()
        log.append("s", [user("go"), _calls("c1", "c2")], expected_seq=0)
        self.expect_refused(log, "s", [_result("c3")], "unknown_tool_call")
        self.expect_refused(self.peer(log), "s", [_result("c1"), _result("nope")], "unknown_tool_call")
        log.append("s", [_result("c2"), _result("c1")], expected_seq=2)
        assert [e.payload.call_id for e in log.read("s", after_seq=2)] == ["c2", "c1"]

    def test_a_second_result_for_one_call_is_refused(self) -> None:
        log = self.open()
        log.append("s", [user("go"), _calls("c1", "c2"), _result("c1")], expected_seq=0)
        self.expect_refused(log, "s", [_result("c1")], "second_tool_result")
        self.expect_refused(log, "s", [_result("c2"), _result("c2")], "second_tool_result")
        self.expect_refused(self.peer(log), "s", [_result("c1")], "second_tool_result")
        # A call id the model uses again later opens a new call: one result each time.
        log.append("s", [_result("c2"), _calls("c1"), _result("c1")], expected_seq=3)
        self.expect_refused(log, "s", [_result("c1")], "second_tool_result")

    def test_a_plan_for_another_session_is_refused(self) -> None:
        log = self.open()
        log.append("s", [user("go"), _plan("s", 1, "sha256:aa")], expected_seq=0)
        self.expect_refused(log, "s", [_plan("t", 2, "sha256:bb", rotated=True)], "foreign_plan")
        self.expect_refused(log, "s", [PlanCreated(epoch=1, plan={"epoch": 1}, prefix_sha256="sha256:aa")], "foreign_plan")
        log.append("s", [_plan("s", 2, "sha256:bb", rotated=True)], expected_seq=2)

    def test_a_request_for_another_session_is_refused(self) -> None:
        log = self.open()
        log.append("s", [user("go"), _plan("s", 1, "sha256:aa"), _built(0, 1, "sha256:aa")], expected_seq=0)
        # Another session's prefix, an epoch this session never planned, and an index out of order.
        self.expect_refused(log, "s", [_built(1, 1, "sha256:other")], "foreign_request")
        self.expect_refused(log, "s", [_built(1, 7, "sha256:aa")], "foreign_request")
        self.expect_refused(self.peer(log), "s", [_built(0, 1, "sha256:aa")], "foreign_request")
        self.expect_refused(log, "s", [_built(1, 1, "sha256:aa"), _built(3, 1, "sha256:aa")], "foreign_request")
        log.append(
            "s", [_built(1, 1, "sha256:aa"), _plan("s", 2, "sha256:bb", rotated=True), _built(2, 2, "sha256:bb")], expected_seq=3
        )
        assert log.last_seq("s") == 6

    def test_an_idempotent_retry_is_not_checked_twice(self) -> None:
        log = self.open()
        call = NewEvent.of(_calls("c1"), idempotency_key="k-call")
        answer = NewEvent.of(_result("c1"), idempotency_key="k-result")
        stored = log.append("s", [user("go"), call, answer], expected_seq=0)
        assert log.append("s", [answer], expected_seq=0) == stored[2:]

    # -- limits at the door ------------------------------------------------------

    def test_payloads_past_the_depth_limit_are_refused(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        before = self.snapshot(log, "s")
        # The arguments object sits at level 4 (payload, tool_calls, the call, arguments).
        for depth in (MAX_PAYLOAD_DEPTH - 2, 480, 100_000):
            deep = _nested(depth)
            for event in (
                _calls_with("c1", deep),
                NewEvent(type="message.assistant", payload={"tool_calls": [{"id": "c1", "name": "t", "arguments": deep}]}),
            ):
                try:
                    log.append("s", [event], expected_seq=1)
                except PayloadLimitExceeded as exc:
                    assert exc.limit == MAX_PAYLOAD_DEPTH and "deeper" in exc.message
                else:
                    raise AssertionError(f"arguments nested {depth} deep were accepted")
        assert self.snapshot(log, "s") == before

    def test_an_event_at_the_depth_limit_reads_back_from_a_deep_call_stack(self) -> None:
        log = self.open()
        appended = log.append("s", [_calls_with("c1", _nested(MAX_PAYLOAD_DEPTH - 3))], expected_seq=0)

        def at_depth(frames: int) -> Any:
            # Read with almost the whole recursion limit already used by the caller.
            if frames > 0:
                return at_depth(frames - 1)
            return log.read("s"), log.append("s", [_calls_with("c2", _nested(MAX_PAYLOAD_DEPTH - 3))], expected_seq=1)

        read, more = at_depth(sys.getrecursionlimit() - len(_stack()) - 25)
        assert read == appended and more[0].seq == 2
        assert log.read("s")[1].payload == more[0].payload

    def test_oversized_payloads_are_refused(self) -> None:
        log = self.open()
        for text in ("x" * (MAX_PAYLOAD_BYTES + 1), "é" * (MAX_PAYLOAD_BYTES // 2 + 8)):
            try:
                log.append("s", [user(text)], expected_seq=0)
            except PayloadLimitExceeded as exc:
                assert exc.limit == MAX_PAYLOAD_BYTES
            else:
                raise AssertionError(f"a payload of {len(text):,} characters was accepted")
        assert log.read("s") == [] and log.sessions() == []

    def test_bad_text_and_keys_get_typed_errors_on_every_backend(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        before = self.snapshot(log, "s")
        not_a_key: Any = 7  # typed as Any: a caller without a type checker can pass anything
        attempts: list[tuple[Callable[[], Any], type[Exception]]] = [
            (lambda: log.append("s", [user("bad \ud800 text")], expected_seq=1), MalformedPayload),
            (lambda: log.append("s", [_calls_with("c1", {"k\udc80": 1})], expected_seq=1), MalformedPayload),
            (lambda: log.append("s", [_calls_with("c1", {"k": ["\udfff"]})], expected_seq=1), MalformedPayload),
            (
                lambda: log.append("s", [NewEvent(type="message.user", payload={"text": "\ud83d"})], expected_seq=1),
                MalformedPayload,
            ),
            (lambda: log.append("s", [user("x", key="k\ud800")], expected_seq=1), InvalidIdempotencyKey),
            (lambda: log.append("s", [user("x", key="k\x00y")], expected_seq=1), InvalidIdempotencyKey),
            (lambda: log.append("s", [user("x", key="")], expected_seq=1), InvalidIdempotencyKey),
            (
                lambda: log.append(
                    "s", [NewEvent(type="message.user", payload={"text": "x"}, idempotency_key=not_a_key)], expected_seq=1
                ),
                InvalidIdempotencyKey,
            ),
            (
                lambda: log.append("s", [NewEvent(type="message.assistant", payload={"tool_calls": "abc"})], expected_seq=1),
                MalformedPayload,
            ),
            (lambda: log.append("s\ud800", [user("x")], expected_seq=0), InvalidSessionId),
            (lambda: log.put_artifact("half \udc00 a character"), UsageError),
        ]
        for attempt, error in attempts:
            try:
                attempt()
            except error as exc:
                assert "surrogate" in str(exc) or "character" in str(exc) or "expected" in str(exc) or "must" in str(exc), exc
            else:
                raise AssertionError(f"bad input accepted; expected {error.__name__}")
        assert self.snapshot(log, "s") == before
        # NUL and other control characters are fine inside text: JSON escapes them.
        stored = log.append("s", [user("nul \x00 here", key="k-ok")], expected_seq=1)
        assert log.read("s", after_seq=1) == stored

    # -- verify ------------------------------------------------------------------

    def test_verify_passes_a_sound_store(self) -> None:
        log = self.open()
        log.append(
            "s", [user("go"), _calls("c1"), _result("c1"), _plan("s", 1, "sha256:aa"), _built(0, 1, "sha256:aa")], expected_seq=0
        )
        log.put_artifact("full text ✓", kind="tool_output")
        report = log.verify()
        assert report.ok, report.problems
        assert (report.sessions, report.events, report.artifacts) == (1, 5, 1)

    def test_verify_finds_a_rewritten_artifact(self) -> None:
        log = self.open()
        ref = log.put_artifact("the original output\n" * 10, kind="tool_output")
        try:
            self.tamper(log, "artifact", ref=ref, content="the rewritten output\n" * 10)
        except NotImplementedError:
            import pytest

            pytest.skip("optional capability: this backend's test cannot tamper with its store")
        report = log.verify()
        assert not report.ok and any(ref in p and "hash" in p for p in report.problems), report.problems

    def test_verify_finds_a_last_seq_past_the_last_event(self) -> None:
        log = self.open()
        log.append("s", [user("a"), user("b")], expected_seq=0)
        try:
            self.tamper(log, "last_seq", session_id="s", seq=5)
        except NotImplementedError:
            import pytest

            pytest.skip("optional capability: this backend's test cannot tamper with its store")
        report = log.verify()
        assert not report.ok and any("last seq" in p for p in report.problems), report.problems

    # -- checkpoints -------------------------------------------------------------

    def test_a_checkpoint_is_kept_per_session_and_never_moved_back(self) -> None:
        log = self.open()
        log.append("s", [user("a"), user("b"), user("c")], expected_seq=0)
        assert log.checkpoint("s") is None and log.checkpoint("other") is None
        body = '{"folded":"\\u0000 ✓ 漢字"}'
        stored = log.put_checkpoint("s", seq=2, format="f1", body=body, seal="seal-2")
        assert stored.head_sha256 == log.read("s")[1].payload_sha256
        assert log.checkpoint("s") == stored and self.peer(log).checkpoint("s") == stored
        log.put_checkpoint("s", seq=3, format="f1", body="{}", seal="seal-3")
        log.put_checkpoint("s", seq=1, format="f1", body="{}", seal="late")  # a slower writer
        kept = log.checkpoint("s")
        assert kept is not None and (kept.seq, kept.seal) == (3, "seal-3")
        log.put_checkpoint("s", seq=1, format="f2", body="{}", seal="new format")  # another format replaces it
        kept = log.checkpoint("s")
        assert kept is not None and (kept.seq, kept.format) == (1, "f2")
        assert log.verify().ok, log.verify().problems

    def test_a_checkpoint_needs_its_event_and_typed_arguments(self) -> None:
        log = self.open()
        log.append("s", [user("a")], expected_seq=0)
        for seq in (2, 0, -1, True, "1"):
            try:
                log.put_checkpoint("s", seq=seq, format="f1", body="{}", seal="")  # type: ignore[arg-type]  # wrong on purpose
            except UsageError:
                continue
            raise AssertionError(f"a checkpoint at seq {seq!r} was accepted")
        for field in ("format", "body", "seal"):
            try:
                log.put_checkpoint("s", seq=1, **{"format": "f1", "body": "{}", "seal": "", field: b"x"})  # type: ignore[arg-type]  # wrong on purpose
            except UsageError:
                continue
            raise AssertionError(f"a checkpoint with a bytes {field} was accepted")
        assert log.checkpoint("s") is None

    def test_a_checkpoint_that_no_longer_matches_is_not_handed_out_and_verify_reports_it(self) -> None:
        log = self.open()
        changes = (
            ("body", '{"changed":1}', "hash"),
            ("head_sha256", "sha256:" + "0" * 64, "another event"),
            ("seq", 9, "past the last event"),
        )
        for column, value, problem in changes:
            session_id = f"s-{column}"
            log.append(session_id, [user("a"), user("b")], expected_seq=0)
            log.put_checkpoint(session_id, seq=2, format="f1", body='{"folded":1}', seal="")
            try:
                self.tamper(log, "checkpoint", session_id=session_id, column=column, value=value)
            except NotImplementedError:
                import pytest

                pytest.skip("optional capability: this backend's test cannot tamper with its store")
            assert log.checkpoint(session_id) is None, column
            problems = log.verify().problems
            assert any(session_id in p and "checkpoint" in p and problem in p for p in problems), (column, problems)
        assert len(log.verify().problems) == len(changes)

    def test_any_text_is_an_artifact_on_every_backend(self) -> None:
        log = self.open()
        for text in ("nul \x00 inside", "\x00", "controls \x01\x1f\x7f and \u2028 ✓ 漢字", "", "\\u0000 looks escaped"):
            ref = log.put_artifact(text, kind="tool_output")
            assert log.get_artifact(ref) == text and self.peer(log).get_artifact(ref) == text
        assert log.verify().ok

    # -- async twin --------------------------------------------------------------

    def test_async_twin_behaves_like_the_sync_log(self) -> None:
        log = self.open()
        alog = AsyncEventLog(log)

        async def scenario() -> None:
            stored = await alog.append("s", [user("a", key="k")], expected_seq=0)
            assert await alog.last_seq("s") == 1
            assert await alog.read("s") == stored
            assert await alog.append("s", [user("a", key="k")], expected_seq=0) == stored
            try:
                await alog.append("s", [user("b")], expected_seq=0)
            except SeqConflict:
                pass
            else:
                raise AssertionError("async append ignored expected_seq")
            assert await alog.sessions() == ["s"]

        asyncio.run(scenario())
        assert [e.payload.text for e in log.read("s")] == ["a"]


def _calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=tuple(ToolCall(id=i, name="run", arguments={}) for i in ids))


def _calls_with(call_id: str, arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=(ToolCall(id=call_id, name="run", arguments=arguments),))


def _result(call_id: str) -> ToolResult:
    return ToolResult(call_id=call_id, tool_name="run", output="ok")


def _plan(session_id: str, epoch: int, prefix: str, *, rotated: bool = False) -> PlanCreated | EpochRotated:
    plan = {"session_id": session_id, "epoch": epoch, "prefix_sha256": prefix}
    if rotated:
        return EpochRotated(
            epoch=epoch, plan=plan, prefix_sha256=prefix, reason="prefix_edited", previous_prefix_sha256="sha256:00"
        )
    return PlanCreated(epoch=epoch, plan=plan, prefix_sha256=prefix)


def _built(index: int, epoch: int, prefix: str) -> RequestBuilt:
    return RequestBuilt(
        epoch=epoch,
        request_index=index,
        prefix_sha256=prefix,
        request_sha256=f"sha256:{index:064x}",
        provider="anthropic",
        total_tokens=100,
        tokens_by_class={"history": 100},
    )


def _nested(depth: int) -> Any:
    """An object nested ``depth`` containers deep (objects and lists in turn), built without recursion."""
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 == (depth - 1) % 2 else [value]
    return value


def _stack() -> list[Any]:
    import traceback

    return traceback.extract_stack()


def _race_in_process(url: str, index: int, rounds: int, barrier: Any, results: Any) -> None:
    """Child process body: race ``rounds`` times on the same expected_seq."""
    try:
        from contextwright.log import open_log

        log = open_log(url)
        won = []
        for round_no in range(rounds):
            barrier.wait(timeout=60)
            try:
                log.append("race", [user(f"{index}:{round_no}")], expected_seq=round_no)
                won.append(round_no)
            except SeqConflict:
                pass
        log.close()
        results.put((index, won))
    except BaseException as exc:  # reported to the parent as text
        results.put(f"writer {index}: {type(exc).__name__}: {exc}")


_TRANSACTION_WRITER = textwrap.dedent(
    """
    import sys, time
    from contextwright.log import open_log
    from contextwright.events import NewEvent, UserMessage
    url, session = sys.argv[1], sys.argv[2]
    log = open_log(url)
    with log.transaction():
        log.append(session, [NewEvent.of(UserMessage(text="one"))], expected_seq=1)
        log.put_artifact("an artifact of a transaction never committed")
        log.append(session + "-too", [NewEvent.of(UserMessage(text="two"))], expected_seq=0)
        print("appended", flush=True)
        time.sleep(600)
    """
)

_CRASH_WRITER = textwrap.dedent(
    """
    import sys
    from contextwright.log import open_log
    from contextwright.events import NewEvent, UserMessage
    url, session = sys.argv[1], sys.argv[2]
    log = open_log(url)
    seq = log.last_seq(session)
    print("appending", flush=True)
    batch = seq // 3
    while True:
        events = [NewEvent.of(UserMessage(text=f"{batch}/{i}/" + "x" * 2000)) for i in range(3)]
        log.append(session, events, expected_seq=seq)
        seq += 3
        batch += 1
    """
)
