"""D4: a request with an orphaned half never leaves the builder."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import Message, TextPart, ToolCallPart, ToolResultPart
from contextwright.assembly.validate import validate
from contextwright.errors import BuildError, OrphanedToolPair
from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.fakes import open_session


@pytest.fixture
def built():
    _, session, _ = open_session()
    session.user("go")
    session.next_request()
    session.adapter.record_assistant(
        AssistantMessage(
            tool_calls=(ToolCall(id="a", name="run_tests", arguments={}), ToolCall(id="b", name="grep", arguments={}))
        )
    )
    session.tool_result("a", "ok")
    session.tool_result("b", "ok")
    return session.next_request()


def _without(request, predicate):
    messages = tuple(replace(m, parts=tuple(p for p in m.parts if not predicate(p))) for m in request.messages)
    return replace(request, messages=tuple(m for m in messages if m.parts))


def test_a_valid_request_passes(built):
    validate(built.neutral, built.plan)


def test_a_missing_result_is_an_orphan(built):
    broken = _without(built.neutral, lambda p: isinstance(p, ToolResultPart) and p.call_id == "b")
    with pytest.raises(OrphanedToolPair) as info:
        validate(broken, built.plan)
    assert info.value.call_ids == ("b",)


def test_a_result_without_its_call_is_an_orphan(built):
    broken = _without(built.neutral, lambda p: isinstance(p, ToolCallPart) and p.id == "a")
    with pytest.raises(OrphanedToolPair):
        validate(broken, built.plan)


def test_a_different_prefix_is_refused(built):
    with pytest.raises(BuildError):
        validate(replace(built.neutral, prefix_sha256="sha256:" + "0" * 64), built.plan)


def test_must_start_and_end_with_the_user(built):
    extra = Message(
        role="assistant",
        parts=(TextPart(text="x", trust="assistant", source="assistant", ref="r", budget_class="history", layer="live"),),
    )
    with pytest.raises(BuildError):
        validate(replace(built.neutral, messages=built.neutral.messages + (extra,)), built.plan)


def test_messages_shared_with_a_request_that_passed_are_not_a_way_around_the_checks(built):
    memo = RenderMemo()
    validate(built.neutral, built.plan, memo)
    messages = built.neutral.messages
    answer = next(i for i, m in enumerate(messages) if m.role == "assistant")
    # Check: the same history with one result gone after the shared answer is still refused.
    results = messages[answer + 1]
    dropped = replace(results, parts=tuple(p for p in results.parts if getattr(p, "call_id", None) != "b"))
    broken = replace(built.neutral, messages=(*messages[: answer + 1], dropped, *messages[answer + 2 :]))
    with pytest.raises(OrphanedToolPair) as info:
        validate(broken, built.plan, memo)
    assert info.value.call_ids == ("b",)
    # Check: a second answer appended while the first one's calls are open is refused too.
    open_answer = Message(role="assistant", parts=(ToolCallPart(id="c", name="grep", arguments={}, ref="x", layer="live"),))
    extended = replace(built.neutral, messages=(*messages[:-1], open_answer, messages[-1]))
    with pytest.raises(OrphanedToolPair):
        validate(extended, built.plan, memo)
