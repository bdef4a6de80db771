"""Reopening a session: the first request after it is the one a process that never closed builds.

A reopened session reads and folds its log once. The first request after a reopen needs
the last recorded request (for cache markers); it is rebuilt on the session's own fold,
kept as it passed the request's ``upto_seq``, so the history is folded once, not twice,
and what the rebuild rendered is reused by the new build. These tests drive two twin
sessions with the same steps, one never closed (in memory) and one reopened from its
store at random points by a fresh engine, and compare every request's rendered bytes.
"""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.derive._surface import fold
from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session
from contextwright.testing.twins import Twins

OUTPUTS = ("ok", "2 passed", "FAILED test_a", "ok\n" * 40)

EXAMPLES = itertools.count()

step = st.one_of(
    st.tuples(st.just("turn"), st.lists(st.integers(0, 3), min_size=0, max_size=3)),
    st.tuples(st.just("steer"), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0)),
    st.tuples(st.just("crash_pending"), st.integers(0, 3)),
)


def run_turn(twins: Twins, outputs: list[int], turn: int) -> None:
    twins.advance(41)
    for session in twins.both():
        session.user(f"Turn {turn}: look at module {turn % 5}.")
    twins.request()
    if not outputs:
        return
    calls = tuple(ToolCall(id=f"c{turn}-{k}", name="run_tests", arguments={"k": k}) for k in range(len(outputs)))
    for session in twins.both():
        session.user("Run the tests.")
    twins.request(AssistantMessage(text="Running.", tool_calls=calls))
    for session in twins.both():
        for call, output in zip(calls, outputs, strict=True):
            text = OUTPUTS[output]
            session.tool_result(call.id, text, exit_code=1 if text.startswith("FAILED") else 0)
    twins.request()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_a_session_reopened_anywhere_builds_the_requests_of_one_never_closed(store_url, steps):
    twins = Twins(store_url, f"twin-{next(EXAMPLES)}")  # one store for every example: a session each
    try:
        for turn, (kind, arg) in enumerate(steps):
            if kind == "turn":
                run_turn(twins, arg, turn)
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
                assert [c.id for c in twins.reopened.pending_tool_calls()] == [call.id]
                for session in twins.both():
                    session.tool_result(call.id, OUTPUTS[arg])
                twins.request()
        # Check: both logs hold the same payloads, event for event.
        assert [e.payload for e in twins.reopened.history.events] == [e.payload for e in twins.live.history.events]
    finally:
        twins.close()


def test_the_first_request_after_a_reopen_rebuilds_the_last_one_on_the_session_s_own_fold(tmp_path):
    url = f"sqlite:///{tmp_path}/store.db"
    engine, session, clock = open_session("s", url=url)
    for turn in range(6):
        session.user(f"Turn {turn}.")
        session.next_request()
        call = ToolCall(id=f"c{turn}", name="run_tests", arguments={"turn": turn})
        session.adapter.record_assistant(AssistantMessage(text="Running.", tool_calls=(call,)))
        session.tool_result(call.id, f"{turn} passed")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text="Done."))
    engine.close()
    engine, reopened, _ = open_session("s", url=url, clock=clock)
    reopened.user("Once more.")
    last = reopened._core.facts().last_built
    assert last is not None
    upto = last.inputs["upto_seq"]
    built = reopened.next_request()
    core = reopened._core
    kept = core.surface_at(upto)
    # Check: the fold kept its surface at the last request's upto_seq, equal to a fold of the log up to there.
    assert kept is not None and kept.upto_seq == upto
    assert kept == fold("s", [e for e in reopened.history.events if e.seq <= upto])
    # Check: the entries the two requests share are the same objects (folded once), and the previous
    # request handed to the renderer is the one recorded.
    now = core.surface()
    assert kept.entries[0] is now.entries[0]
    assert built.previous is not None and built.previous.sha256() == last.request_sha256
    engine.close()
