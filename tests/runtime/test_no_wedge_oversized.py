"""Issue 19 item 1: no single oversized input wedges a session.

Each input kind is stored whole and shown bounded (see ``assembly/bounded.py``), or
kept out of the one place it cannot fit (a memory item too large for the snapshot):
after it, the next requests build within the window and the session carries on.
"""

from __future__ import annotations

import pytest

from contextwright.assembly.request import TextPart, ToolCallPart
from contextwright.errors import PrefixOverBudget
from contextwright.events import AssistantMessage, ToolCall
from contextwright.runtime.ports import InMemoryMemory
from contextwright.testing.fakes import open_session, sample_agent, sample_model

WINDOW = 64_000
HUGE = "The build log line that repeats.\n" * 45_000  # ~1.5 MB of log lines


def _input_limit(request):
    return request.plan.model.context_window - request.plan.model.output_reserve


def carry_on(session, *, rounds: int = 3, start: int = 0):
    """Run a few ordinary rounds; every request must build within the window."""
    for n in range(start, start + rounds):
        request = session.next_request()
        assert request.result.total_tokens <= _input_limit(request)
        session.adapter.record_assistant(
            AssistantMessage(text=f"Running tests ({n}).", tool_calls=(ToolCall(id=f"run{n}", name="run_tests", arguments={}),))
        )
        session.tool_result(f"run{n}", f"{n} passed")
        request = session.next_request()
        assert request.result.total_tokens <= _input_limit(request)
        session.adapter.record_assistant(AssistantMessage(text=f"All green ({n})."))
        session.user(f"Next step {n}, please.")
    return session.next_request()


def visible(request):
    return "\n".join(p.text for m in request.neutral.messages for p in m.parts if isinstance(p, TextPart))


def test_a_huge_first_message_is_shown_bounded_and_paged_back_whole():
    _, session, _ = open_session(window=WINDOW)
    task = session.user("Fix the failing build.\n" + HUGE + "The end of the task.")
    request = session.next_request()
    text = visible(request)
    # Check both ends of the task survive, with a marker naming the event that keeps it whole.
    assert "Fix the failing build." in text and "The end of the task." in text
    assert f"context_read_artifact ref={task.ref}" in text
    assert request.result.total_tokens <= _input_limit(request)
    # Check the model can page the whole text back, and the session carries on.
    session.adapter.record_assistant(
        AssistantMessage(
            tool_calls=(ToolCall(id="r1", name="context_read_artifact", arguments={"ref": task.ref, "grep": "end of"}),)
        )
    )
    [read] = [e.payload for e in session.history.events if e.type == "tool.result" and e.payload.call_id == "r1"]
    assert not read.is_error and "The end of the task." in read.output and read.trust == "user"
    last = carry_on(session)
    assert "Fix the failing build." in visible(last)  # the task stays pinned, bounded
    # Check a rebuild from the log gives the same bytes.
    assert session.inspect(0).sha256() == request.neutral.sha256()


def test_a_huge_later_user_message_does_not_wedge_the_run():
    _, session, _ = open_session(window=WINDOW)
    session.user("Fix the failing build.")
    carry_on(session, rounds=1)
    session.adapter.record_assistant(AssistantMessage(text="What does the log say?"))
    session.user("Here is the log:\n" + HUGE)
    carry_on(session, start=1)


def test_huge_assistant_text_does_not_wedge_the_run():
    _, session, _ = open_session(window=WINDOW)
    session.user("Explain the build.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(text="Here is everything. " + HUGE, tool_calls=(ToolCall(id="c0", name="run_tests", arguments={}),))
    )
    session.tool_result("c0", "ok")
    carry_on(session)


def test_huge_tool_arguments_are_shown_bounded_and_the_caller_still_gets_them_whole():
    _, session, _ = open_session(window=WINDOW)
    session.user("Write the fixture file.")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(tool_calls=(ToolCall(id="w1", name="edit_file", arguments={"path": "f.txt", "content": HUGE}),))
    )
    # The caller runs the tool with what the model asked for, whole.
    assert session.pending_tool_calls()[0].arguments["content"] == HUGE
    session.tool_result("w1", "written")
    request = session.next_request()
    [part] = [p for m in request.neutral.messages for p in m.parts if isinstance(p, ToolCallPart)]
    assert set(part.arguments) == {"arguments_view"} and "context_read_artifact ref=" in part.arguments["arguments_view"]
    carry_on(session)


def test_a_huge_memory_correction_is_bounded_in_the_tail():
    memory = InMemoryMemory({"py": "The project supports Python 3.10."})
    _, session, _ = open_session(window=WINDOW, memory=memory)
    session.user("Which Python does the project support?")
    session.next_request()
    session.adapter.record_assistant(AssistantMessage(text="3.10."))
    session.memories.correct("py", "Python support notes. " + HUGE)
    session.user("And now?")
    carry_on(session)


def test_a_memory_snapshot_over_its_cap_is_refused_at_the_door():
    # B3: the prefix never yields and nothing is silently truncated. A snapshot over its cap
    # is refused when the session opens, with the class named, before anything is logged.
    memory = InMemoryMemory({"big": HUGE, "py": "The project supports Python 3.10."})
    engine, _, _ = open_session(window=WINDOW)
    with pytest.raises(PrefixOverBudget, match="memory_snapshot"):
        engine.session("remembers-too-much", agent=sample_agent(), model=sample_model(WINDOW), memory=memory)
    assert engine.log.last_seq("remembers-too-much") == 0


def test_huge_recall_evidence_and_working_state_writes_do_not_wedge():
    memory = InMemoryMemory({"big": "Python notes. " + HUGE, "py": "Python 3.10 is supported."})
    engine, _, _ = open_session(window=WINDOW)
    # Recall only: the huge item reaches the turn through recall, not the frozen snapshot.
    session = engine.session("recalls", agent=sample_agent(), model=sample_model(WINDOW), recall=memory)
    # Recall reads both items for a question about Python; the huge one must not block the turn.
    session.user("Python question: which version?")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(tool_calls=(ToolCall(id="ws", name="context_update_working_state", arguments={"add_facts": [HUGE]}),))
    )
    carry_on(session)
