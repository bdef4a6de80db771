"""Session checkpoints: a reopen starts from the derived state written beside the log.

Twin sessions take the same steps: one never closed, on a store without checkpoints, and
one on a store that writes a checkpoint at every request and is reopened by a fresh engine
at random points. Every request must have the same bytes. A checkpoint that cannot stand
for its log (tampered, of another format, past the log's end, folded from other events) is
set aside and the log is folded from the start, with the same bytes; a reopen on a good one
reads only the events after it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.canonical import canonical_json, parse_canonical
from contextwright.derive import _working_state as ws
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.checkpoint import SESSION_FORMAT, seal
from contextwright.runtime.engine import Engine
from contextwright.runtime.session import Session
from contextwright.testing import twins
from contextwright.testing.fakes import TEST_SECRET, open_session

OUTPUTS = ("ok", "2 passed", "FAILED test_a", "ok\n" * 40)
TOOLS = ("run_tests", "grep")

EXAMPLES = itertools.count()

step = st.one_of(
    st.tuples(st.just("turn"), st.lists(st.integers(0, 3), min_size=0, max_size=3)),
    st.tuples(st.just("steer"), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0)),
    st.tuples(st.just("crash_pending"), st.integers(0, 3)),
    st.tuples(st.just("state"), st.integers(0, 3)),
    st.tuples(st.just("memory"), st.integers(0, 2)),
    st.tuples(st.just("revoke"), st.integers(0, 1)),
)


class Twins(twins.Twins):
    """One session never closed and without checkpoints; its twin checkpointed at every request and reopened when asked."""

    def __init__(self, url: str, session_id: str) -> None:
        super().__init__(url, session_id, live_options={"checkpoint_every": 0}, stored_options={"checkpoint_every": 1})
        self.outcomes: list[tuple[bool, str]] = []

    def reopen(self) -> None:
        super().reopen()
        built = any(e.type == "context.request.built" for e in self.live.history.events)
        self.outcomes.append((built, self.reopened._core.checkpoint_outcome))


def run_turn(twins: Twins, outputs: list[int], turn: int) -> None:
    twins.advance(41)
    for session in twins.both():
        session.user(f"Turn {turn}: look at module {turn % 5}.")
    twins.request()
    if not outputs:
        return
    calls = tuple(ToolCall(id=f"c{turn}-{k}", name=TOOLS[output % 2], arguments={"k": k}) for k, output in enumerate(outputs))
    for session in twins.both():
        session.user("Run the tests.")
    twins.request(AssistantMessage(text="Running.", tool_calls=calls))
    for session in twins.both():
        for call, output in zip(calls, outputs, strict=True):
            if call.id in {c.id for c in session.pending_tool_calls()}:
                text = OUTPUTS[output]
                session.tool_result(call.id, text, exit_code=1 if text.startswith("FAILED") else 0)
    twins.request()


def take(twins: Twins, turn: int, kind: str, arg: int) -> None:
    if kind == "turn":
        run_turn(twins, list(arg) if isinstance(arg, list) else [], turn)
    elif kind == "steer":
        for session in twins.both():
            session.user(f"Keep module {arg} as it is.", steering=True)
        twins.request()
    elif kind == "compact":
        for session in twins.both():
            session.compact()
    elif kind == "reopen":
        twins.reopen()
    elif kind == "crash_pending":
        # A crash between the model's call and its result: the reopened twin must find the call pending.
        call = ToolCall(id=f"p{turn}", name="run_tests", arguments={"k": arg})
        for session in twins.both():
            session.user("One more check.")
        twins.request(AssistantMessage(text="Checking.", tool_calls=(call,)))
        twins.reopen()
        pending = [c.id for c in twins.live.pending_tool_calls()]
        assert [c.id for c in twins.reopened.pending_tool_calls()] == pending  # none when the tool was revoked
        for session in twins.both():
            if pending:
                session.tool_result(call.id, OUTPUTS[arg])
        twins.request()
    elif kind == "state":
        call = ToolCall(
            id=f"w{turn}",
            name=ws.TOOL_NAME,
            arguments={"add_facts": [f"Module {arg} is flaky."], "add_constraints": [f"Leave module {arg + 1} alone."]},
        )
        for session in twins.both():
            session.user("Note what you found.")
        twins.request(AssistantMessage(text="Noting.", tool_calls=(call,)))
        twins.request()
    elif kind == "memory":
        for session in twins.both():
            session.memories.remember(f"m{arg}", f"Remembered fact {arg}.")
            session.memories.correct(f"m{arg}", f"Remembered fact {arg}, corrected.")
    elif kind == "revoke":
        for session in twins.both():
            if TOOLS[arg] in session._core.facts().policy.revoked:
                session.tools.restore(TOOLS[arg])
            else:
                session.tools.revoke(TOOLS[arg])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_a_session_reopened_on_its_checkpoint_builds_the_requests_of_one_that_never_used_one(store_url, steps):
    twins = Twins(store_url, f"twin-{next(EXAMPLES)}")  # one store for every example: a session each
    try:
        for turn, (kind, arg) in enumerate(steps):
            take(twins, turn, kind, arg)
        # Check: both logs hold the same payloads, event for event; the working state and stats agree.
        assert [e.payload for e in twins.reopened.history.events] == [e.payload for e in twins.live.history.events]
        assert twins.reopened.working_state == twins.live.working_state
        # Check: every reopen after a request started from a checkpoint (none was ever set aside).
        assert all(outcome == ("restored" if built else "none") for built, outcome in twins.outcomes), twins.outcomes
    finally:
        twins.close()


def grow(url: str, session_id: str = "s", *, turns: int = 5, every: int = 1) -> tuple[Engine, Session]:
    """A session of ``turns`` turns with tool calls, written with a checkpoint every ``every`` events."""
    engine, session, _ = open_session(session_id, url=url, checkpoint_every=every)
    for turn in range(turns):
        session.user(f"Turn {turn}.")
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"turn": turn})
        session.adapter.record_assistant(AssistantMessage(text="Running.", tool_calls=(call,)))
        session.tool_result(call.id, f"{turn} passed\n" * (turn + 1))
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text="Done."))
    return engine, session


def copy_of(url: str) -> str:
    """A copy of the SQLite store at ``url`` (what a reader appends there leaves the original as it was)."""
    source = Path(url.removeprefix("sqlite:///"))
    target = source.with_name(f"copy-{next(COPIES)}.db")
    with sqlite3.connect(source) as conn, sqlite3.connect(target) as copy:
        conn.backup(copy)
    return f"sqlite:///{target}"


COPIES = itertools.count()


def next_bytes(url: str, session_id: str = "s", *, every: int) -> tuple[str, str]:
    """(outcome, the next request's Anthropic body) of a fresh engine reopening the session on a copy of the store."""
    engine, session, _ = open_session(session_id, url=copy_of(url), checkpoint_every=every)
    outcome = session._core.checkpoint_outcome
    session.user("Once more.")
    body = json.dumps(session.next_request().anthropic())
    engine.close()
    return outcome, body


def test_a_reopen_reads_only_the_events_after_the_checkpoint(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=1)
    checkpoint = engine.log.checkpoint("s")
    assert checkpoint is not None and checkpoint.format == SESSION_FORMAT
    last = session.history.last_seq
    engine.close()

    engine = Engine.open(url, secret=TEST_SECRET, checkpoint_every=1)
    reads: list[tuple[int, int]] = []
    read = engine.log.read

    def counting_read(session_id, *, after_seq=0, limit=None):
        events = read(session_id, after_seq=after_seq, limit=limit)
        reads.append((after_seq, len(events)))
        return events

    engine.log.read = counting_read  # type: ignore[method-assign]
    reopened = engine.session("s", agent=session.agent, model=session.model)
    assert reopened._core.checkpoint_outcome == "restored"
    reopened.user("Once more.")
    reopened.next_request()
    # Check: nothing before the checkpoint was read, and only the events after it (then the new ones).
    assert reads and all(after >= checkpoint.seq for after, _ in reads)
    assert reads[0] == (checkpoint.seq, last - checkpoint.seq)
    # Check: asking for the whole history still gives every event, read from the log once.
    assert [e.seq for e in reopened.history.events] == list(range(1, reopened.history.last_seq + 1))
    engine.close()


def test_a_checkpoint_is_written_only_after_enough_events(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=20, turns=6)
    checkpoint = engine.log.checkpoint("s")
    assert checkpoint is not None
    upto = [e.payload.inputs["upto_seq"] for e in session.history.events if e.type == "context.request.built"]
    # Check: written at a request's upto_seq, the first at least 20 events in.
    assert checkpoint.seq in upto and checkpoint.seq >= 20
    engine.close()
    engine, _ = grow(f"sqlite:///{tmp_path}/none.db", every=0, turns=2)
    assert engine.log.checkpoint("s") is None
    engine.close()


def _store_checkpoint(url: str, *, body: str | None = None, format: str = SESSION_FORMAT, reseal: bool) -> None:
    engine = Engine.open(url, secret=TEST_SECRET)
    stored = engine.log.checkpoint("s")
    assert stored is not None
    body = stored.body if body is None else body
    tag = seal(engine.secret_for("s"), session_id="s", seq=stored.seq, head_sha256=stored.head_sha256, body=body)
    engine.log.put_checkpoint("s", seq=stored.seq, format=format, body=body, seal=tag if reseal else stored.seal)
    engine.close()


def _changed_body(body: str) -> str:
    data = parse_canonical(body)
    data["facts"]["requests_built"] += 1
    return canonical_json(data)


@pytest.mark.parametrize(
    ("change", "outcome"),
    [
        ({"reseal": False, "body": "changed"}, "seal"),
        ({"reseal": True, "format": "session-0"}, "format"),
        ({"reseal": True, "body": "not json"}, "does not decode"),
        ({"reseal": True, "body": "no fold"}, "not a fold of this format"),
    ],
)
def test_a_tampered_or_unknown_checkpoint_is_set_aside_and_the_bytes_do_not_change(tmp_path, change, outcome):
    url = f"sqlite:///{tmp_path}/store.db"
    engine, _ = grow(url, every=1)
    engine.close()
    restored, expected = next_bytes(url, every=1)
    assert restored == "restored"
    assert next_bytes(url, every=0) == ("none", expected)
    stored = Engine.open(url, secret=TEST_SECRET).log.checkpoint("s")
    assert stored is not None
    bodies = {
        "changed": _changed_body(stored.body),
        "not json": "{",
        "no fold": canonical_json({**parse_canonical(stored.body), "fold": {"format": "fold-0"}}),
    }
    options = dict(change)
    if "body" in options:
        options["body"] = bodies[options["body"]]
    _store_checkpoint(url, **options)
    got, body = next_bytes(url, every=1)
    # Check: set aside with its reason, and the request is the one a fold of the whole log gives.
    assert got.startswith("rejected") and outcome in got
    assert body == expected


def test_a_checkpoint_past_a_lost_tail_or_folded_from_other_events_is_set_aside(tmp_path):
    # A crash that lost the log's tail after the checkpoint was written: the checkpoint is past the end.
    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=1, turns=2)
    engine.close()
    short_url = copy_of(url)
    short = Path(short_url.removeprefix("sqlite:///"))
    engine, session = grow(url, every=1, turns=4)  # the same first turns, then more, with a later checkpoint
    later = engine.log.checkpoint("s")
    assert later is not None
    engine.close()
    with sqlite3.connect(short) as conn:
        row = conn.execute("SELECT * FROM cw_checkpoints WHERE session_id = 's'").fetchone()
        assert row[1] < later.seq
        conn.execute(
            "UPDATE cw_checkpoints SET seq = ?, head_sha256 = ?, body = ?, body_sha256 = ?, seal = ? WHERE session_id = 's'",
            (later.seq, later.head_sha256, later.body, later.body_sha256, later.seal),
        )
    got, body = next_bytes(short_url, every=1)
    assert got == "none"  # the log does not hand out a checkpoint past its end
    assert body == next_bytes(short_url, every=0)[1]
    # The lost tail written again differently: the event at the checkpoint's seq is another one.
    engine, session, _ = open_session("s", url=short_url, checkpoint_every=0)
    while session.history.last_seq < later.seq:
        session.user(f"A different turn at {session.history.last_seq}.")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text="Other."))
    engine.close()
    with sqlite3.connect(short) as conn:
        conn.execute(
            "UPDATE cw_checkpoints SET seq = ?, head_sha256 = ?, body = ?, body_sha256 = ?, seal = ? WHERE session_id = 's'",
            (later.seq, later.head_sha256, later.body, later.body_sha256, later.seal),
        )
    got, body = next_bytes(short_url, every=1)
    assert got == "none"
    assert body == next_bytes(short_url, every=0)[1]


def test_a_crash_after_the_checkpoint_reads_the_events_it_missed(tmp_path):
    # Events appended after the last checkpoint (a process that died before its next one): read and folded.
    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=1, turns=3)
    engine.close()
    engine, session, _ = open_session("s", url=url, checkpoint_every=0)  # writes none
    session.user("An extra turn the checkpoint never saw.")
    session.next_request()
    call = ToolCall(id="late", name="run_tests", arguments={})
    session.adapter.record_assistant(AssistantMessage(text="Running.", tool_calls=(call,)))
    engine.close()
    restored, body = next_bytes_after_result(url, every=1)
    assert restored == "restored"
    assert body == next_bytes_after_result(url, every=0)[1]


def next_bytes_after_result(url: str, *, every: int) -> tuple[str, str]:
    engine, session, _ = open_session("s", url=copy_of(url), checkpoint_every=every)
    outcome = session._core.checkpoint_outcome
    assert [c.id for c in session.pending_tool_calls()] == ["late"]
    session.tool_result("late", "3 passed")
    body = json.dumps(session.next_request().anthropic())
    engine.close()
    return outcome, body


def test_checkpoint_every_must_be_a_count():
    from contextwright.errors import UsageError
    from contextwright.log import open_log

    with pytest.raises(UsageError, match="checkpoint_every"):
        Engine(open_log("memory://"), secret=TEST_SECRET, checkpoint_every=-1)


def test_the_token_counts_of_the_last_request_come_back_only_for_the_estimator_that_counted_them(tmp_path):
    from contextwright.budget.estimator import HeuristicEstimator
    from contextwright.runtime.estimates import estimator_fingerprint, text_digest

    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=1)
    model = session.model.id
    engine.close()
    engine, reopened, _ = open_session("s", url=copy_of(url), checkpoint_every=1)
    core = reopened._core
    # Check: the restored seed holds a count for every text of the last request (none counted again).
    last, _ = reopened.history.rebuild(core.facts().requests_built - 1)
    seeded = core._estimates._seeds[model]
    texts = [part.text for message in last.messages for part in message.parts if hasattr(part, "text")]
    assert texts and all(text_digest(t) in seeded for t in texts)
    engine.close()
    # Check: another estimator (or model) has another fingerprint, and one that is not pure has none.
    heuristic = HeuristicEstimator()
    assert estimator_fingerprint(heuristic, model) == estimator_fingerprint(HeuristicEstimator(), model)
    assert estimator_fingerprint(heuristic, model) != estimator_fingerprint(heuristic, "gpt-4o")

    class Custom:
        def estimate(self, text, *, model):
            return len(text)

    assert estimator_fingerprint(Custom(), model) is None  # type: ignore[arg-type]


def test_a_count_seed_of_another_estimator_is_not_used_and_the_bytes_do_not_change(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    engine, _ = grow(url, every=1)
    engine.close()
    _, expected = next_bytes(url, every=0)
    stored = Engine.open(url, secret=TEST_SECRET).log.checkpoint("s")
    assert stored is not None
    data = parse_canonical(stored.body)
    data["counts"]["fingerprint"] = "0" * 32
    # Every count doubled: used, they would size the request differently.
    data["counts"]["raw"] = [[digest, raw * 2 + 1] for digest, raw in data["counts"]["raw"]]
    _store_checkpoint(url, body=canonical_json(data), reseal=True)
    engine, session, _ = open_session("s", url=copy_of(url), checkpoint_every=1)
    assert session._core.checkpoint_outcome == "restored" and not session._core._estimates._seeds
    engine.close()
    assert next_bytes(url, every=1) == ("restored", expected)


def test_events_after_a_seq_are_read_without_the_history_before_the_checkpoint(tmp_path):
    from contextwright.errors import UsageError

    url = f"sqlite:///{tmp_path}/store.db"
    engine, session = grow(url, every=1)
    everything = session.history.events
    engine.close()
    engine, reopened, _ = open_session("s", url=url, checkpoint_every=1)
    base = reopened._core.base_seq
    assert base > 2
    # Check: after the checkpoint, from memory; before it, read from the log without keeping the history.
    assert reopened.history.after(base) == everything[base:]
    assert reopened.history.after(2) == everything[2:]
    assert reopened._core.base_seq == base
    with pytest.raises(UsageError):
        reopened.history.after(-1)
    # Check: the request count and the last request come from the facts, as a scan gives them.
    built = [e.payload for e in everything if e.type == "context.request.built"]
    assert reopened.history.requests_built == len(built) and reopened.history.last_request == built[-1]
    assert reopened._core.base_seq == base
    engine.close()
