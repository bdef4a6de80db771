"""Reading a payload back: the decoder without paths answers exactly as the strict decoder does."""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Literal

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.errors import ContextwrightError
from contextwright.events import (
    AssistantMessage,
    ReasoningBlock,
    ToolCall,
    ToolResult,
    UserMessage,
    _fast_decode,
    _schema,
    event_type,
    registry,
)
from contextwright.events.registry import decode_stored_payload, encode_payload


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Inner:
    name: str
    score: float = 0.0

    def __post_init__(self) -> None:
        if self.name == "bad":
            raise ValueError("name must not be 'bad'")


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Every:
    """Every kind of field type the schema supports, defaults and a check included."""

    usd: float
    mode: Literal["a", "b"] = "a"
    either: int | str = 0
    number: float | int = 0  # an int here becomes a float: the first option takes it
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    weights: tuple[float, ...] = ()
    inner: Inner | None = None
    inners: tuple[Inner, ...] = ()
    extra: Any = None
    note: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class Plain:
    """No slots: built through its keyword ``__init__``."""

    label: str
    inner: Inner | None = None


@pytest.fixture(autouse=True, scope="module")
def test_types_are_registered():
    # Registered only while these tests run: the catalogue's own tests expect its types alone.
    event_type("test.fast_decode.every")(Every)
    event_type("test.fast_decode.plain")(Plain)
    yield
    registry._REGISTRY.pop("test.fast_decode.every")
    registry._REGISTRY.pop("test.fast_decode.plain")


texts = st.text(max_size=8)
floats = st.floats(allow_nan=False, allow_infinity=False)
# Ints nested in an Any value beyond 64 bits go the strict way by design; the junk below has some.
json_leaves = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | floats | texts
json_values = st.recursive(
    json_leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8
)
inners = st.builds(Inner, name=texts.filter(lambda t: t != "bad"), score=floats)
calls = st.builds(
    ToolCall,
    id=st.uuids().map(str),
    name=st.sampled_from(["read", "run"]),
    arguments=st.dictionaries(texts, json_values, max_size=3),
)
valid = st.one_of(
    st.builds(UserMessage, text=texts, author=st.sampled_from(["user", "operator"]), steering=st.booleans()),
    st.builds(
        AssistantMessage,
        text=texts,
        tool_calls=st.lists(calls, max_size=3, unique_by=lambda c: c.id).map(tuple),
        model=st.none() | texts,
        reasoning=st.lists(
            st.builds(ReasoningBlock, provider=st.just("anthropic"), block=st.just({"type": "thinking", "thinking": "t"})),
            max_size=2,
        ).map(tuple),
    ),
    st.builds(ToolResult, call_id=texts, tool_name=texts, output=texts, exit_code=st.none() | st.integers(-5, 300)),
    st.builds(
        Every,
        usd=floats,
        mode=st.sampled_from(["a", "b"]),
        either=st.integers() | texts,
        number=floats | st.integers(-(2**40), 2**40),
        counts=st.dictionaries(texts, st.integers(), max_size=3),
        weights=st.lists(floats, max_size=3).map(tuple),
        inner=st.none() | inners,
        inners=st.lists(inners, max_size=2).map(tuple),
        extra=json_values,
        note=st.none() | texts,
    ),
    st.builds(Plain, label=texts, inner=st.none() | inners),
)
# What a stored value may hold when it was not written by this version (or not by us at all).
junk = st.one_of(
    json_values,
    st.sampled_from(
        [
            float("nan"),
            float("inf"),
            2**70,
            10**5000,
            "\ud800",
            {"\udc00": 1},
            b"bytes",
            {1: "int key"},
            {1: "a", "b": 2},
            ["a", "list"],
            ("a", "tuple"),
            {"nested": [float("nan")]},
            {"name": "bad"},
            {"name": "x", "score": 1},
            {"name": "x", "unknown": 1},
            {"score": 1.0},
            [{"name": "x"}, {"name": "bad"}],
            types.MappingProxyType({"b": 1, "a": 2}),
            True,
            object(),
        ]
    ),
    st.lists(json_values, max_size=2).map(tuple),
)


def deep_shape(value: Any) -> Any:
    """The value with every type spelled out, so 1, 1.0 and True, or a dict and a read-only view, differ."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value), tuple((f.name, deep_shape(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, (dict, types.MappingProxyType)):
        return (type(value), tuple((k, deep_shape(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(deep_shape(v) for v in value))
    if isinstance(value, float):
        return (type(value), value.hex())  # tells 0.0 from -0.0
    return (type(value), value)


def strict_outcome(name: str, data: Any) -> Any:
    """What reading the payload gave before the fast decoder: the strict decoder and its typed error."""
    try:
        value = _schema.decode(registry.payload_class(name), data)
    except _schema.SchemaViolation as exc:
        return ("error", exc.path, exc.problem)
    except Exception as exc:  # an untyped failure must stay the same one too
        return ("raised", type(exc))
    return ("ok", deep_shape(value))


def read_outcome(name: str, data: Any) -> Any:
    try:
        value = decode_stored_payload(name, data)
    except ContextwrightError as exc:
        fields = exc.fields
        return ("error", fields["path"], fields["problem"])
    except Exception as exc:
        return ("raised", type(exc))
    return ("ok", deep_shape(value))


def mutate(plain: Any, data: st.DataObject) -> Any:
    """A copy of ``plain`` with one value (at any depth), one key or one field changed."""
    if isinstance(plain, dict):
        plain = dict(plain)
        action = data.draw(st.sampled_from(["replace", "drop", "add", "descend"] if plain else ["add"]))
        if action == "add":
            plain[data.draw(st.sampled_from(["unknown", "name", "text", "usd", "extra"]))] = data.draw(junk)
            return plain
        key = data.draw(st.sampled_from(sorted(plain)))
        if action == "drop":
            del plain[key]
        elif action == "replace" or not isinstance(plain[key], (dict, list)) or not plain[key]:
            plain[key] = data.draw(junk)
        else:
            plain[key] = mutate(plain[key], data)
        return plain
    if isinstance(plain, list) and plain:
        plain = list(plain)
        index = data.draw(st.integers(0, len(plain) - 1))
        plain[index] = mutate(plain[index], data) if data.draw(st.booleans()) else data.draw(junk)
        return plain
    return data.draw(junk)


@settings(max_examples=300, deadline=None)
@given(valid)
def test_a_valid_payload_takes_the_fast_decoder_and_gets_the_strict_result(payload):
    name = registry.type_of(payload)
    plain = encode_payload(payload)
    # The fast decoder must answer (or reading would be no cheaper), and answer as the strict one does.
    fast = _fast_decode.decode(type(payload), plain)
    assert ("ok", deep_shape(fast)) == strict_outcome(name, plain)
    assert read_outcome(name, plain) == strict_outcome(name, plain)


@settings(max_examples=1000, deadline=None)
@given(valid, st.data())
def test_any_change_to_a_stored_payload_gets_the_same_result_or_the_same_error(payload, data):
    name = registry.type_of(payload)
    changed = mutate(encode_payload(payload), data)
    assert read_outcome(name, changed) == strict_outcome(name, changed)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["test.fast_decode.every", "test.fast_decode.plain", "message.assistant"]), junk)
def test_anything_at_all_as_a_payload_gets_the_strict_answer(name, value):
    assert read_outcome(name, value) == strict_outcome(name, value)


@pytest.mark.parametrize(
    ("plain", "path"),
    [
        ({"usd": "1"}, "payload.usd"),
        ({"usd": 1.0, "inners": [{"name": "x"}, {"name": 3}]}, "payload.inners[1].name"),
        ({"usd": 1.0, "inner": {"name": "bad"}}, "payload.inner"),
        ({"usd": 1.0, "counts": {"a": 1, "b": "2"}}, "payload.counts.b"),
        ({"usd": 1.0, "extra": {"k": [float("nan")]}}, "payload.extra"),
        ({"usd": 1.0, "surplus": 1}, "payload"),
        ({"mode": "a"}, "payload"),
    ],
)
def test_an_error_names_the_path_the_strict_decoder_names(plain, path):
    assert strict_outcome("test.fast_decode.every", plain)[:2] == ("error", path)
    assert read_outcome("test.fast_decode.every", plain) == strict_outcome("test.fast_decode.every", plain)


def test_what_only_the_strict_decoder_converts_is_converted_as_before():
    typed = decode_stored_payload("test.fast_decode.every", {"usd": 1, "number": 2, "weights": [3], "extra": [{"b": 1, "a": 2}]})
    assert typed.usd == 1.0 and type(typed.usd) is float
    assert typed.number == 2.0 and type(typed.number) is float
    assert typed.weights == (3.0,) and type(typed.weights[0]) is float
    assert list(typed.extra[0]) == ["a", "b"] and isinstance(typed.extra[0], types.MappingProxyType)
