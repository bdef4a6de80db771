"""The event catalogue and registry: typed payloads, strict decoding, one place to register."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from contextwright.errors import MalformedPayload, UnknownEventType, UsageError
from contextwright.events import (
    AssistantMessage,
    NewEvent,
    ReasoningBlock,
    ToolCall,
    ToolResult,
    UserMessage,
    decode_payload,
    event_type,
    known_types,
    payload_json,
)

REQUIRED_TYPES = {
    "message.user",
    "message.assistant",
    "tool.result",
    "context.plan.created",
    "context.epoch.rotated",
    "context.request.built",
    "context.compacted",
    "context.working_state.updated",
    "model.response",
    "memory.written",
    "memory.corrected",
    "memory.erased",
    "artifact.stored",
}


def test_catalogue_has_every_required_type():
    assert REQUIRED_TYPES <= set(known_types())


def test_payloads_are_frozen():
    message = UserMessage(text="hi")
    with pytest.raises(AttributeError):
        message.text = "changed"  # type: ignore[misc]


def test_round_trip_through_canonical_json():
    message = AssistantMessage(text="ok", tool_calls=(ToolCall(id="1", name="ls", arguments={"path": "."}),))
    import json

    assert decode_payload("message.assistant", json.loads(payload_json(message))) == message


def test_decoded_nested_values_are_read_only():
    message = decode_payload("message.assistant", {"tool_calls": [{"id": "1", "name": "ls", "arguments": {"a": [1]}}]})
    with pytest.raises(TypeError):
        message.tool_calls[0].arguments["a"] = 2


@pytest.mark.parametrize(
    ("type_name", "payload", "where"),
    [
        ("message.user", {}, "missing required field 'text'"),
        ("message.user", {"text": 1}, "payload.text"),
        ("message.user", {"text": "a", "author": "root"}, "payload.author"),
        ("message.user", {"text": "a", "mood": "x"}, "unknown field(s) mood"),
        ("message.assistant", {"tool_calls": [{"id": "", "name": "x", "arguments": {}}]}, "non-empty id"),
        ("message.assistant", {"tool_calls": [{"id": "a", "name": "x", "arguments": {}}] * 2}, "unique"),
        ("tool.result", {"call_id": "c", "tool_name": "t", "output": "o", "exit_code": True}, "payload.exit_code"),
        ("tool.result", {"call_id": "c", "tool_name": "t", "output": "o", "trust": "god"}, "payload.trust"),
        # Usage counts default to 0 (one Usage type for the wires and the log); a negative one is refused.
        ("model.response", {"provider": "p", "model": "m", "usage": {"input_tokens": -1}}, "input_tokens"),
        ("message.user", ["text"], "expected an object"),
    ],
)
def test_malformed_payloads_name_the_problem(type_name, payload, where):
    with pytest.raises(MalformedPayload) as info:
        decode_payload(type_name, payload)
    assert where in str(info.value)
    assert info.value.event_type == type_name


def test_unknown_type_lists_the_known_ones():
    with pytest.raises(UnknownEventType) as info:
        decode_payload("message.usr", {"text": "x"})
    assert "message.user" in str(info.value)


def test_directly_built_payloads_are_validated_too():
    with pytest.raises(MalformedPayload):
        NewEvent.of(ToolResult(call_id="c", tool_name="t", output=b"bytes"))  # type: ignore[arg-type]


def test_registration_rules():
    with pytest.raises(UsageError):

        @event_type("message.user")
        @dataclass(frozen=True)
        class Clash:
            text: str

    with pytest.raises(UsageError):

        @event_type("test.mutable")
        @dataclass
        class Mutable:
            text: str

    assert "test.mutable" not in known_types()


def _call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="t", arguments={})


def test_assistant_message_refuses_repeated_call_ids_with_or_without_reasoning():
    block = ReasoningBlock(provider="anthropic", block={"type": "thinking"}, position=0)
    for reasoning in ((), (block,)):
        with pytest.raises(ValueError, match="unique"):
            AssistantMessage(tool_calls=(_call("a"), _call("b"), _call("a")), reasoning=reasoning)
        assert len(AssistantMessage(tool_calls=(_call("a"), _call("b")), reasoning=reasoning).tool_calls) == 2
    with pytest.raises(MalformedPayload):
        AssistantMessage(tool_calls=("a",))  # type: ignore[arg-type]  # the check under test


def test_assistant_reasoning_that_is_not_a_tuple_still_takes_the_reasoning_checks():
    with pytest.raises(TypeError):
        AssistantMessage(text="x", reasoning=None)  # type: ignore[arg-type]  # the check under test
    late = ReasoningBlock(provider="anthropic", block={"type": "thinking"}, position=3)
    with pytest.raises(ValueError, match="past the message"):
        AssistantMessage(text="x", reasoning=[late])  # type: ignore[arg-type]  # the check under test
    first = ReasoningBlock(provider="anthropic", block={"type": "thinking"}, position=0)
    second = ReasoningBlock(provider="anthropic", block={"type": "thinking"}, position=1)
    with pytest.raises(ValueError, match="order"):
        AssistantMessage(text="x", tool_calls=(_call("a"),), reasoning=(second, first))
