"""19.3: bad input built in Python gets a typed error naming the problem, before any log sees it."""

from __future__ import annotations

import sys
import traceback

import pytest

from contextwright.errors import ContextwrightError, MalformedPayload, PayloadLimitExceeded
from contextwright.events import AssistantMessage, NewEvent, ToolCall, UserMessage
from contextwright.events.limits import MAX_PAYLOAD_DEPTH, MAX_PAYLOAD_VALUES, check_payload, with_fresh_stack


@pytest.mark.parametrize("calls", ["abc", ("abc",), [ToolCall(id="c", name="t", arguments={})], None])
def test_assistant_message_with_calls_that_are_not_tool_calls(calls):
    with pytest.raises(MalformedPayload) as info:
        AssistantMessage(tool_calls=calls)
    assert isinstance(info.value, ContextwrightError) and info.value.path == "payload.tool_calls"
    assert "tuple of ToolCall" in info.value.message


def test_the_depth_walk_needs_no_recursion():
    value: object = "leaf"
    for _ in range(200_000):
        value = [value]
    with pytest.raises(PayloadLimitExceeded) as info:
        check_payload("message.assistant", {"tool_calls": [{"id": "c", "name": "t", "arguments": {"a": value}}]})
    assert info.value.limit == MAX_PAYLOAD_DEPTH
    with pytest.raises(PayloadLimitExceeded):
        NewEvent.of(AssistantMessage(tool_calls=(ToolCall(id="c", name="t", arguments={"a": value}),)))


def test_lone_surrogates_are_named_with_their_place():
    with pytest.raises(MalformedPayload) as info:
        NewEvent.of(UserMessage(text="ok \udc9f"))
    assert info.value.path == "payload.text" and "U+DC9F at character 3" in info.value.message


def test_a_fresh_stack_lets_a_deep_caller_run_what_needs_a_few_hundred_frames():
    def needs(frames: int) -> int:
        return 0 if frames == 0 else needs(frames - 1)

    def at_depth(frames: int) -> int:
        return at_depth(frames - 1) if frames > 0 else with_fresh_stack(needs, 300)

    assert at_depth(sys.getrecursionlimit() - len(traceback.extract_stack()) - 20) == 0


def test_a_fresh_stack_reraises_the_callers_errors_unchanged():
    def fails() -> None:
        raise MalformedPayload("message.user", "boom")

    with pytest.raises(MalformedPayload, match="boom"):
        with_fresh_stack(fails)


def test_shared_references_cannot_make_the_walk_explode():
    # Ten levels of a 100-fold shared list: 10**20 leaves if walked in full.
    value: object = 0
    for _ in range(10):
        value = [value] * 100
    with pytest.raises(PayloadLimitExceeded) as info:
        check_payload("message.assistant", {"tool_calls": [{"id": "c", "name": "t", "arguments": {"a": value}}]})
    assert info.value.limit == MAX_PAYLOAD_VALUES


def test_a_payload_of_many_values_at_the_limit_is_accepted():
    check_payload(
        "message.assistant", {"tool_calls": [{"id": "c", "name": "t", "arguments": {"a": [0] * (MAX_PAYLOAD_VALUES - 20)}}]}
    )
