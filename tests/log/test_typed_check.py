"""The per-class check of typed payloads answers exactly as the strict path (limits walk, encode, decode) does."""

from __future__ import annotations

import dataclasses
import json
import types
from dataclasses import replace
from typing import Any, Literal

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.canonical import canonical_bytes
from contextwright.errors import ContextwrightError, MalformedPayload
from contextwright.events import (
    AssistantMessage,
    ReasoningBlock,
    ToolCall,
    ToolResult,
    UserMessage,
    _typed_check,
    event_type,
    registry,
)
from contextwright.events.registry import coerce_and_encode, decode_payload, encode_payload, validate_and_encode


@dataclasses.dataclass(frozen=True, kw_only=True)
class Mixed:
    """Every kind of field type the schema supports."""

    usd: float
    mode: Literal["a", "b"] = "a"
    either: int | str = 0
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    weights: tuple[float, ...] = ()
    extra: Any = None
    note: str | None = None


@pytest.fixture(autouse=True, scope="module")
def mixed_is_registered():
    # Registered only while these tests run: the catalogue's own tests expect its types alone.
    event_type("test.typed_check")(Mixed)
    yield
    registry._REGISTRY.pop("test.typed_check")


class Text(str):
    pass


texts = st.text(max_size=12)
json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
json_values = st.recursive(
    json_leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8
)
arguments = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
calls = st.builds(
    ToolCall, id=st.uuids().map(str), name=st.sampled_from(["read", "run"]), arguments=arguments, namespace=st.none() | texts
)
valid = st.one_of(
    st.builds(UserMessage, text=texts, author=st.sampled_from(["user", "operator"]), steering=st.booleans()),
    st.builds(
        AssistantMessage,
        text=texts,
        tool_calls=st.lists(calls, max_size=3, unique_by=lambda c: c.id).map(tuple),
        model=st.none() | texts,
        phase=st.none() | texts,
        reasoning=st.lists(
            st.builds(ReasoningBlock, provider=st.just("anthropic"), block=st.just({"type": "thinking", "thinking": "t"})),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(ToolResult, call_id=texts, tool_name=texts, output=texts, exit_code=st.none() | st.integers(-5, 300)),
    st.builds(
        Mixed,
        usd=st.floats(allow_nan=False, allow_infinity=False),
        mode=st.sampled_from(["a", "b"]),
        either=st.integers() | texts,
        counts=st.dictionaries(texts, st.integers(), max_size=3),
        weights=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3).map(tuple),
        extra=json_values,
        note=st.none() | texts,
    ),
)
# What a field can hold when the constructor was not given what its type hint says.
junk = st.one_of(
    json_values,
    st.sampled_from(
        [
            float("nan"),
            float("inf"),
            2**70,
            "\ud800",
            {"\udc00": 1},
            b"bytes",
            Text("sub"),
            {1: "int key"},
            {1: "a", "b": 2},
            ["a", "list"],
            ("a", "tuple"),
            {"nested": [float("nan")]},
            types.MappingProxyType({"b": 1, "a": 2}),
            object(),
        ]
    ),
    st.lists(json_values, max_size=2).map(tuple),
)


def strict(payload: Any) -> tuple[str, Any, bytes]:
    name, typed, plain = coerce_and_encode(None, payload)
    return name, typed, canonical_bytes(encode_payload(typed) if plain is None else plain)


def outcome(fn: Any, payload: Any) -> Any:
    try:
        return ("ok", *fn(payload))
    except ContextwrightError as exc:
        return ("error", type(exc), str(exc))


@settings(max_examples=300, deadline=None)
@given(valid)
def test_a_payload_built_by_its_constructor_takes_the_compiled_check_and_gets_the_strict_answer(payload):
    # Check the fast pass answers (or this test would prove nothing), and answers as the strict path does.
    assert _typed_check.check(payload) is not None
    fast = validate_and_encode(None, payload)
    assert fast == strict(payload)
    assert type(fast[1]) is type(payload)


@settings(max_examples=500, deadline=None)
@given(valid, st.data())
def test_a_field_holding_anything_gets_the_same_answer_or_the_same_error(payload, data):
    target = payload
    if isinstance(payload, AssistantMessage) and payload.tool_calls and data.draw(st.booleans()):
        target = payload.tool_calls[0]  # a nested payload object
    name = data.draw(st.sampled_from([f.name for f in dataclasses.fields(target)]))
    object.__setattr__(target, name, data.draw(junk))
    assert outcome(lambda p: validate_and_encode(None, p), payload) == outcome(strict, payload)


def test_a_field_added_later_is_left_out_while_none_so_payloads_without_it_keep_their_bytes():
    plain = AssistantMessage(text="t", tool_calls=(ToolCall(id="c", name="n", arguments={}),))
    old = b'{"model":null,"reasoning":[],"stop_reason":null,"text":"t","tool_calls":[{"arguments":{},"id":"c","name":"n"}]}'
    assert validate_and_encode(None, plain)[2] == strict(plain)[2] == old
    labelled = replace(plain, phase="commentary", tool_calls=(replace(plain.tool_calls[0], namespace="ns"),))
    data = validate_and_encode(None, labelled)[2]
    assert data == strict(labelled)[2] and b'"phase":"commentary"' in data and b'"namespace":"ns"' in data
    assert decode_payload("message.assistant", json.loads(data)) == labelled


def test_values_are_frozen_with_their_keys_in_order_as_decoding_does():
    call = ToolCall(id="c1", name="run", arguments={"b": [1, {"y": 2, "x": 1}], "a": None})
    _, typed, _ = validate_and_encode(None, AssistantMessage(tool_calls=(call,)))
    arguments = typed.tool_calls[0].arguments
    assert isinstance(arguments, types.MappingProxyType) and list(arguments) == ["a", "b"]
    assert arguments["b"] == (1, types.MappingProxyType({"x": 1, "y": 2}))
    assert list(arguments["b"][1]) == ["x", "y"]


def test_a_payload_with_nothing_to_freeze_is_returned_as_it_is():
    message = UserMessage(text="hi")
    assert validate_and_encode(None, message)[1] is message


def test_a_read_only_view_passed_in_is_copied_so_its_dict_cannot_change_the_stored_payload():
    backing = {"k": 1}
    call = ToolCall(id="c", name="n", arguments=types.MappingProxyType(backing))  # type: ignore[arg-type]
    _, typed, data = validate_and_encode(None, AssistantMessage(tool_calls=(call,)))
    backing["k"] = 2
    assert typed.tool_calls[0].arguments == {"k": 1}
    assert b'"k":1' in data


@pytest.mark.parametrize(
    "payload",
    [
        Mixed(usd=1),  # an int in a float field: stored as a float
        Mixed(usd=1.0, weights=[1.0]),  # type: ignore[arg-type]  # a list in a tuple field
        Mixed(usd=1.0, either=True),  # a bool where a union takes an int or a str: refused
    ],
)
def test_what_only_decoding_can_convert_or_refuse_goes_the_strict_way(payload):
    assert _typed_check.check(payload) is None
    assert outcome(lambda p: validate_and_encode(None, p), payload) == outcome(strict, payload)


def test_deep_or_wide_payloads_go_the_strict_way_and_meet_its_limits():
    deep: Any = "leaf"
    for _ in range(40):
        deep = [deep]
    assert _typed_check.check(Mixed(usd=1.0, extra=deep)) is None
    assert validate_and_encode(None, Mixed(usd=1.0, extra=deep)) == strict(Mixed(usd=1.0, extra=deep))
    shared = (0,) * 1000
    wide = Mixed(usd=1.0, extra=(shared,) * 200)
    assert _typed_check.check(wide) is None
    assert outcome(lambda p: validate_and_encode(None, p), wide) == outcome(strict, wide)


def test_a_rebuilt_payload_is_built_as_its_constructor_builds_it_checks_included():
    call = ToolCall(id="c", name="n", arguments={"k": 1})
    message = AssistantMessage(text="t", tool_calls=(call,), model="m")
    _, typed, _ = validate_and_encode(None, message)
    assert typed is not message and typed == message
    assert typed == AssistantMessage(
        text="t", tool_calls=(ToolCall(id="c", name="n", arguments=typed.tool_calls[0].arguments),), model="m"
    )
    object.__setattr__(call, "id", "")  # past the constructor's check: the rebuild runs it again
    assert _typed_check.check(message) is None
    with pytest.raises(MalformedPayload, match="non-empty id"):
        validate_and_encode(None, message)
