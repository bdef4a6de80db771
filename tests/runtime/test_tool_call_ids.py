"""Empty or repeated tool-call ids are refused with a typed error that names the id, and nothing is written."""

from __future__ import annotations

import pytest

from contextwright.errors import InvalidToolCallId, MalformedPayload, UsageError
from contextwright.events import AssistantMessage, ToolCall, decode_payload
from contextwright.testing.fakes import open_session


def _anthropic_answer(*ids: str) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "tool_use", "id": i, "name": "grep", "input": {}} for i in ids],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _chat_answer(*ids: str) -> dict:
    calls = [{"id": i, "type": "function", "function": {"name": "grep", "arguments": "{}"}} for i in ids]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-5.4",
        "choices": [
            {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": calls}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def test_an_empty_id_is_a_typed_error():
    with pytest.raises(InvalidToolCallId) as info:
        ToolCall(id="", name="grep", arguments={})
    assert info.value.call_id == "" and "grep" in str(info.value)
    # Still a ValueError, so callers that caught the bare one keep working; and a misuse, not a run failure.
    assert isinstance(info.value, ValueError) and isinstance(info.value, UsageError)


def test_a_repeated_id_in_one_message_names_the_id():
    calls = (
        ToolCall(id="a", name="grep", arguments={}),
        ToolCall(id="toolu_7", name="grep", arguments={}),
        ToolCall(id="toolu_7", name="ls", arguments={}),
    )
    with pytest.raises(InvalidToolCallId) as info:
        AssistantMessage(tool_calls=calls)
    assert info.value.call_id == "toolu_7" and "'toolu_7'" in str(info.value)


@pytest.mark.parametrize(
    ("response", "call_id"),
    [
        (_anthropic_answer("toolu_1", "toolu_1"), "toolu_1"),
        (_anthropic_answer(""), ""),
        (_chat_answer("call_9", "call_9"), "call_9"),
    ],
)
def test_a_provider_answer_with_a_bad_id_is_refused_before_anything_is_written(response, call_id):
    _, session, _ = open_session()
    session.user("Find the failing test.")
    before = [e.seq for e in session.history.events]
    with pytest.raises(InvalidToolCallId) as info:
        session.record(response)
    assert info.value.call_id == call_id
    # Check nothing was stored: neither the answer nor its usage.
    assert [e.seq for e in session.history.events] == before
    assert session.pending_tool_calls() == []


def test_a_stored_payload_with_a_repeated_id_still_reads_as_malformed():
    with pytest.raises(MalformedPayload, match="'c'"):
        decode_payload("message.assistant", {"tool_calls": [{"id": "c", "name": "x", "arguments": {}}] * 2})
