"""A fold that removes entries (a compaction) keeps a waiting tool call answerable."""

from __future__ import annotations

from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session


def call(session, call_id: str):
    message = AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id=call_id, name="run_tests", arguments={}),))
    return session.adapter.record_assistant(message)


def test_a_manual_compaction_while_a_tool_call_waits_leaves_the_call_open():
    _, session, _ = open_session()
    for turn in range(4):
        session.user(f"Turn {turn}: run the tests of module {turn}.")
        session.next_request()
        call(session, f"c{turn}")
        session.tool_result(f"c{turn}", "12 passed")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text=f"Module {turn} is green."))
    session.user("Now module 9.")
    session.next_request()
    call(session, "c9")
    # Another client compacts while the tool runs.
    assert session.compact() is not None
    # Check: the result still finds its call, and the next request builds and rebuilds.
    assert [c.id for c in session.pending_tool_calls()] == ["c9"]
    session.tool_result("c9", "3 passed")
    built = session.next_request()
    assert session.inspect(built.index).sha256() == built.neutral.sha256()
