"""Facts followed through the log one event at a time equal a scan of the whole log, at every step."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.errors import ContextwrightError
from contextwright.events import AssistantMessage, ToolCall
from contextwright.policy.tools import ToolPolicy
from contextwright.runtime.facts import LogFacts
from contextwright.runtime.limits import FORCED_REVOCATION
from contextwright.runtime.memory_rules import corrected_memory, erased_memory_ids
from contextwright.testing.fakes import open_session

TOOLS = ("read_file", "run_tests", "search_code")

step = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(TOOLS)),
    st.tuples(st.just("revoke"), st.sampled_from(TOOLS)),
    st.tuples(st.just("restore"), st.sampled_from(TOOLS)),
    st.tuples(st.just("remember"), st.integers(0, 2)),
    st.tuples(st.just("correct"), st.integers(0, 2)),
    st.tuples(st.just("forget"), st.integers(0, 2)),
    st.tuples(st.just("force"), st.sampled_from(TOOLS)),
)


def scanned(events):
    """The facts as a scan of every event gives them."""
    built = [e.payload for e in events if e.type == "context.request.built"]
    return {
        "last_built": built[-1] if built else None,
        "requests_built": len(built),
        "erased": erased_memory_ids(events),
        "corrected": dict(corrected_memory(events)),
        "policy": ToolPolicy.from_events(events),
        "forced": [e.payload.tool for e in events if e.type == "tool.revoked" and e.payload.reason == FORCED_REVOCATION],
        "called": {c.name for e in events if e.type == "message.assistant" for c in e.payload.tool_calls},
        "answers": [sum(1 for e in events if e.seq > seq and e.type == "message.assistant") for seq in range(len(events) + 1)],
    }


def followed(facts, events):
    return {
        "last_built": facts.last_built,
        "requests_built": facts.requests_built,
        "erased": facts.erased_memory,
        "corrected": dict(facts.corrected_memory()),
        "policy": facts.policy,
        "forced": list(facts.forced_revocations),
        "called": set(facts.called_names),
        "answers": [facts.answers_after(seq) for seq in range(len(events) + 1)],
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=15))
def test_followed_facts_equal_a_scan_of_the_log(steps):
    engine, session, _ = open_session("facts")
    facts = LogFacts()
    calls = 0
    for kind, arg in steps:
        if kind == "turn":
            calls += 1
            session.user("Go on.")
            session.next_request()
            session.adapter.record_assistant(
                AssistantMessage(text="On it.", tool_calls=(ToolCall(id=f"c{calls}", name=arg, arguments={}),))
            )
            for call in session.pending_tool_calls():
                session.tool_result(call.id, "done")
            session.next_request()
            session.adapter.record_assistant(AssistantMessage(text="Done."))
        elif kind == "revoke":
            session.tools.revoke(arg)
        elif kind == "restore":
            session.tools.restore(arg)
        elif kind == "remember":
            session.memories.remember(f"m{arg}", f"Fact number {arg}.")
        elif kind == "correct":
            session.memories.correct(f"m{arg}", f"Fact number {arg}, corrected.")
        elif kind == "forget":
            session.memories.forget(f"m{arg}")
        elif kind == "force":
            with contextlib.suppress(ContextwrightError):  # a tool already out of the prefix cannot leave it again
                session.tools.force_revoke(arg)
        # Check: followed in steps of any size, the facts are the scan's.
        events = session.history.events
        facts.follow(events)
        assert followed(facts, events) == scanned(events)
    assert followed(LogFacts().follow(session.history.events), session.history.events) == scanned(session.history.events)
    engine.close()
