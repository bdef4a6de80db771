"""A Contextwright session's own log becomes a neutral transcript that baselines can replay."""

from __future__ import annotations

import datetime as dt

import pytest

from contextwright.clock import FixedClock
from contextwright.compare import compare_transcript
from contextwright.demo._drive import drive
from contextwright.demo.script import demo_script
from contextwright.errors import UsageError
from contextwright.events.catalog import AssistantMessage, ToolCall
from contextwright.importers._from_log import FORMAT, transcript_from_events, transcript_from_log
from contextwright.models import anthropic, with_window
from contextwright.runtime.engine import Engine
from contextwright.runtime.ports import InMemoryMemory
from contextwright.testing.fakes import TEST_SECRET, sample_agent
from contextwright.testing.provider import ScriptedProvider

BIG_OUTPUT = "\n".join(f"line {i}: value={i * 7919 % 1000} status={'ok' if i % 3 else 'FAILED'}" for i in range(4_000))


def _engine(clock: FixedClock) -> Engine:
    return Engine.open("memory://", clock=clock, secret=TEST_SECRET)


def _small_session(engine: Engine):
    session = engine.session("s-1", agent=sample_agent(), model=with_window(anthropic("claude-sonnet-4-6"), 32_000))
    session.user("Fix the failing billing tests. Never push to main.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(
            text="Running them.",
            tool_calls=(ToolCall(id="c1", name="run_tests", arguments={"path": "tests"}),),
            model="claude-sonnet-4-6",
        )
    )
    session.tool_result("c1", BIG_OUTPUT, exit_code=1)
    session.user("Only touch billing/.", author="operator")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="Done: the rounding was wrong."))
    return session


def test_full_tool_outputs_come_back_from_the_artifact_store():
    clock = FixedClock("2026-03-01T10:00:00+00:00", step=1)
    engine = _engine(clock)
    session = _small_session(engine)
    shown = next(e.payload.output for e in session.history.events if e.type == "tool.result")
    assert len(shown) < len(BIG_OUTPUT)  # the engine capped what the model saw

    transcript = transcript_from_log(engine.log, "s-1")

    assert transcript.format == FORMAT and transcript.session_id == "s-1"
    assert [m.role for m in transcript.messages] == [
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    [result] = transcript.messages[2].tool_results
    assert result.output == BIG_OUTPUT and result.call_id == "c1" and result.is_error and result.exit_code == 1
    assert transcript.task == "Fix the failing billing tests. Never push to main."
    assert transcript.messages[3].meta  # the operator's note came from the harness, not the user
    assert transcript.messages[1].tool_calls[0].arguments == {"path": "tests"}
    assert transcript.messages[1].model == "claude-sonnet-4-6"
    assert transcript.system == sample_agent().instructions
    assert {t["name"] for t in transcript.tools} == {t.name for t in sample_agent().tools}  # no control tools


def test_without_an_artifact_reader_the_bounded_output_is_kept():
    engine = _engine(FixedClock(step=1))
    session = _small_session(engine)
    shown = next(e.payload.output for e in session.history.events if e.type == "tool.result")
    transcript = transcript_from_events(session.history.events, session_id="s-1")
    assert transcript.messages[2].tool_results[0].output == shown


def test_times_are_the_event_times():
    clock = FixedClock("2026-03-01T10:00:00+00:00", step=1)
    engine = _engine(clock)
    session = _small_session(engine)
    transcript = transcript_from_log(engine.log, "s-1")
    by_seq = {e.seq: e for e in session.history.events}
    for message in transcript.messages:
        assert message.at is not None
        event_at = by_seq[message.source_line].at
        assert dt.datetime.fromisoformat(message.at) == event_at
    stamps = [m.at for m in transcript.messages]
    assert stamps == sorted(stamps)


def test_events_of_another_session_are_refused():
    engine = _engine(FixedClock(step=1))
    session = _small_session(engine)
    with pytest.raises(UsageError, match="belongs to session 's-1'"):
        transcript_from_events(session.history.events, session_id="other")
    with pytest.raises(UsageError, match="no events"):
        transcript_from_log(engine.log, "never-opened")


def test_a_call_left_without_a_result_is_dropped_and_counted():
    engine = _engine(FixedClock(step=1))
    session = engine.session("s-2", agent=sample_agent(), model=anthropic("claude-sonnet-4-6"))
    session.user("List the files.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(text="Listing.", tool_calls=(ToolCall(id="c9", name="read_file", arguments={}),))
    )
    transcript = transcript_from_log(engine.log, "s-2")
    assert transcript.dropped_tool_calls == 1
    assert transcript.messages[-1].tool_calls == ()


def test_the_demo_session_replays_through_every_strategy():
    clock = FixedClock("2026-03-01T23:35:00+00:00")
    engine = _engine(clock)
    memory = InMemoryMemory({"mem-style": "Billing code uses Decimal for money amounts."})
    session = engine.session(
        "demo",
        agent=sample_agent(),
        model=with_window(anthropic("claude-sonnet-4-6"), 32_000),
        memory=memory,
        recall=memory,
    )
    report = drive(
        session,
        demo_script(turns=6, seed=7),
        clock=clock,
        provider=ScriptedProvider(provider="anthropic", clock=clock),
    )

    transcript = transcript_from_log(engine.log, "demo")

    assert any(m.usage for m in transcript.messages if m.role == "assistant")  # provider usage came along
    assert any(c.name == "context_update_working_state" for m in transcript.messages for c in m.tool_calls)
    results = {r.name: r for r in compare_transcript(transcript, window=32_000)}
    # The same model calls as the original session, for every strategy.
    assert {r.requests for r in results.values()} == {len(report.requests)}
    assert results["contextwright"].overflows == 0
    assert results["contextwright"].task_visible == 1.0
