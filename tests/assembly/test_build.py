"""D1, D2, D6, D8: the builder is pure, ordered, and keeps volatile content at the tail."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.assembly.assemble import BudgetExceeded, Correction, VolatileTail, build
from contextwright.assembly.request import TextPart, ToolCallPart, ToolResultPart
from contextwright.budget.allocator import allocate
from contextwright.derive._surface import fold
from contextwright.derive._working_state import WorkingState
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.ports import InMemoryMemory
from contextwright.testing.fakes import open_session


def _session_with_history(turns: int = 3, *, memory=None, window: int = 200_000):
    engine, session, clock = open_session(memory=memory, window=window)
    for turn in range(turns):
        session.user(f"Turn {turn}: please fix billing rounding and run the tests.")
        session.next_request()
        calls = tuple(ToolCall(id=f"c{turn}-{i}", name="read_file", arguments={"path": f"src/f{i}.py"}) for i in range(3))
        session.adapter.record_assistant(AssistantMessage(text="Reading files.", tool_calls=calls))
        for call in reversed(calls):  # results arrive out of order
            session.tool_result(call.id, f"contents of {call.arguments['path']}\n" * 20, exit_code=0)
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Done with turn {turn}."))
        clock.advance(600)
    return engine, session, clock


def _inputs(session, tail=VolatileTail()):
    plan = session.setup.plan
    return dict(
        plan=plan,
        allocation=allocate(plan),
        surface=fold(session.id, session.history.events),
        tail=tail,
        secret=session.setup.secret,
        estimate=lambda text: session.setup.estimator.estimate(text, model=plan.model.id),
    )


def test_same_inputs_same_bytes():
    _, session, _ = _session_with_history()
    session.user("One more thing.")
    first = build(**_inputs(session))
    second = build(**_inputs(session))
    assert first.request.canonical() == second.request.canonical()
    assert first.request.sha256() == second.request.sha256()


def test_assembly_order_prefix_then_history_then_tail():
    memory = InMemoryMemory({"billing": "Billing totals use Decimal rounding half-even."})
    _, session, _ = _session_with_history(2, memory=memory)
    session.user("Now check billing rounding again.")
    session.next_request()  # records the turn's frame
    tail = VolatileTail(
        nudges=("Re-read the task.",), corrections=(Correction(evidence_id="billing", text="Billing uses half-up."),)
    )
    request = build(**_inputs(session, tail)).request
    assert [b.budget_class for b in request.system] == ["policy", "framing", "instructions", "memory_snapshot"]
    assert [t.name for t in request.tools][-2:] == ["context_update_working_state", "context_read_artifact"]
    last = request.messages[-1]
    assert last.role == "user" and all(p.volatile for p in last.parts)
    assert [p.budget_class for p in last.parts] == ["corrections", "nudges"]
    assert request.stable_messages == len(request.messages) - 1
    # The frame (runtime metadata, recall) precedes the user's text within the turn.
    turn = request.messages[-2]
    classes = [p.budget_class for p in turn.parts]
    assert classes[0] == "runtime" and classes[-1] == "history" and "recall" in classes


def test_parallel_results_follow_their_calls_in_call_order():
    _, session, _ = _session_with_history(1)
    session.user("again")
    request = build(**_inputs(session)).request
    for index, message in enumerate(request.messages):
        calls = [p.id for p in message.parts if isinstance(p, ToolCallPart)]
        if calls:
            following = request.messages[index + 1]
            assert [p.call_id for p in following.parts if isinstance(p, ToolResultPart)] == calls


def test_no_timestamp_or_volatile_text_in_the_prefix():
    _, session, clock = _session_with_history(1)
    session.user("later")
    clock.advance(86_400)
    session.next_request()
    requests = [e.payload for e in session.history.events if e.type == "context.request.built"]
    assert len({r.prefix_sha256 for r in requests}) == 1
    system_text = "".join(b.text for b in build(**_inputs(session)).request.system)
    assert "2026" not in system_text and "UTC" not in system_text


def test_non_platform_text_is_enveloped():
    _, session, _ = _session_with_history(1)
    session.user("hello")
    request = build(**_inputs(session)).request
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, (TextPart, ToolResultPart)) and part.trust not in ("platform", "assistant"):
                assert part.text.startswith("<cw-data id=") and part.text.endswith('">'), part


def test_the_body_over_budget_raises_with_numbers():
    engine, session, _ = open_session(window=40_000)
    # Many messages, each small enough to be shown whole (one oversized item is shown bounded instead).
    for n in range(12):
        session.user(f"{n} " + "x " * 2_500)
    session._pin_plan()
    with pytest.raises(BudgetExceeded) as info:
        build(**_inputs(session))
    assert info.value.body_tokens > info.value.body_limit


def test_erased_evidence_disappears_and_is_counted():
    memory = InMemoryMemory({"billing": "Billing totals use Decimal rounding."})
    _, session, _ = _session_with_history(1, memory=memory)
    session.user("billing totals again")
    session.next_request()
    tail = VolatileTail(erased_evidence=frozenset({"billing"}))
    result = build(**_inputs(session, tail))
    assert result.evidence_removed >= 1
    assert "Decimal rounding" not in "".join(
        p.text for m in result.request.messages for p in m.parts if isinstance(p, TextPart) and p.budget_class == "recall"
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=6),
    state=st.lists(st.text(min_size=1, max_size=40).filter(str.strip), max_size=4),
    nudges=st.lists(st.text(min_size=1, max_size=60), max_size=2),
)
def test_property_identical_inputs_give_identical_bytes(texts, state, nudges):
    _, session, _ = open_session()
    for text in texts:
        if text.strip():
            session.user(text)
    if not any(t.strip() for t in texts):
        session.user("fallback")
    session._pin_plan()
    tail = VolatileTail(working_state=WorkingState(constraints=tuple(s.strip() for s in state)), nudges=tuple(nudges))
    a, b = build(**_inputs(session, tail)), build(**_inputs(session, tail))
    assert a.request.canonical() == b.request.canonical()
    assert a.tokens_by_class == b.tokens_by_class


def test_evidence_found_during_the_turn_rides_the_tail_and_yields_first():
    from contextwright.events.catalog import Evidence

    _, session, _ = _session_with_history(1, window=40_000)
    session.user("Where does billing deploy?")
    session.next_request()
    small = VolatileTail(evidence=(Evidence(id="deploy", text="Billing deploys on Tuesdays.", trust="user", source="memory"),))
    result = build(**_inputs(session, small))
    tail = result.request.messages[-1]
    assert any(p.volatile and p.budget_class == "recall" and "Tuesdays" in p.text for p in tail.parts)
    assert result.request.stable_messages == len(result.request.messages) - 1
    # In-turn recall yields first (R4): a tail too large to fit is dropped, not the history.
    huge = VolatileTail(evidence=(Evidence(id="dump", text="deploy log line\n" * 12_000, trust="user", source="memory"),))
    result = build(**_inputs(session, huge))
    assert "recall" in result.yields
    assert not any("deploy log line" in getattr(p, "text", "") for m in result.request.messages for p in m.parts)
