"""An append encodes each event once; the bytes stored are those of the typed payload it returns."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.canonical import parse_canonical, sha256_tagged
from contextwright.events import AssistantMessage, NewEvent, ToolCall, ToolResult, UserMessage, _schema
from contextwright.events.registry import decode_stored_payload, payload_json
from contextwright.log import InMemoryEventLog
from contextwright.log.base import prepare_events

texts = st.text(max_size=40)
json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
arguments = st.dictionaries(st.text(max_size=8), st.recursive(json_leaves, lambda c: st.lists(c, max_size=3), max_leaves=6))
payloads = st.one_of(
    st.builds(UserMessage, text=texts),
    st.builds(
        AssistantMessage,
        text=texts,
        tool_calls=st.lists(
            st.builds(ToolCall, id=st.uuids().map(str), name=st.sampled_from(["read", "run"]), arguments=arguments), max_size=3
        ).map(tuple),
    ),
    st.builds(ToolResult, call_id=texts, tool_name=texts, output=texts, exit_code=st.none() | st.integers(-5, 300)),
)


@settings(max_examples=200, deadline=None)
@given(payloads)
def test_prepared_bytes_are_the_canonical_json_of_the_payload_the_log_returns(payload):
    (prepared,) = prepare_events([payload])
    # Check the stored text is exactly the canonical JSON of the typed payload, and its hash is of those bytes.
    assert prepared.payload_json == payload_json(prepared.payload)
    assert prepared.payload_sha256 == sha256_tagged(prepared.payload_json)
    # Check reading the bytes back gives the payload the append hands out.
    assert decode_stored_payload(prepared.type, parse_canonical(prepared.payload_json)) == prepared.payload


@settings(max_examples=100, deadline=None)
@given(payloads)
def test_a_raw_mapping_and_its_typed_payload_store_the_same_bytes(payload):
    raw = _schema.encode(payload)
    (typed,) = prepare_events([payload])
    (mapped,) = prepare_events([NewEvent(type=typed.type, payload=raw)])
    assert mapped.payload_json == typed.payload_json


def test_append_returns_the_events_a_read_returns():
    log = InMemoryEventLog()
    written = log.append("s", [UserMessage(text="hi"), AssistantMessage(text="ok")], expected_seq=0)
    assert written == log.read("s")


@dataclasses.dataclass(frozen=True)
class Cost:
    usd: float


@dataclasses.dataclass(frozen=True)
class Wrapped:
    costs: tuple[Cost, ...]
    note: str | None = None


def test_a_float_field_makes_the_encoding_be_redone_after_decoding():
    # An int in a float field is stored as a float, so its first encoding cannot be reused.
    assert not _schema.decoding_keeps_json(Cost)
    assert not _schema.decoding_keeps_json(Wrapped)
    assert _schema.decoding_keeps_json(ToolResult)
    assert _schema.encode(_schema.decode(Cost, {"usd": 1})) == {"usd": 1.0}


def test_events_an_append_builds_equal_those_the_constructor_builds():
    import datetime as dt

    from contextwright.events import Event
    from contextwright.log.base import new_events

    at = dt.datetime(2026, 3, 1, 9, 0, 0, 1234, tzinfo=dt.UTC)
    prepared = prepare_events([UserMessage(text="a"), NewEvent.of(UserMessage(text="b"), idempotency_key="k")])
    built = new_events("s", prepared, expected_seq=4, at=at)
    expected = [
        Event(
            session_id="s",
            seq=5 + i,
            type=p.type,
            payload=p.payload,
            at=at,
            payload_sha256=p.payload_sha256,
            idempotency_key=p.idempotency_key,
        )
        for i, p in enumerate(prepared)
    ]
    assert built == expected and all(type(e) is Event for e in built)
    assert [dataclasses.asdict(e) for e in built] == [dataclasses.asdict(e) for e in expected]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].seq = 9  # type: ignore[misc]


def test_prepared_events_equal_those_the_constructor_builds():
    from contextwright.log.base import PreparedEvent

    prepared = prepare_events([UserMessage(text="a"), NewEvent.of(UserMessage(text="b"), idempotency_key="k")])
    expected = [
        PreparedEvent(
            type=p.type,
            payload_json=p.payload_json,
            payload_sha256=p.payload_sha256,
            idempotency_key=p.idempotency_key,
            payload=p.payload,
        )
        for p in prepared
    ]
    assert prepared == expected and all(type(p) is PreparedEvent for p in prepared)
    assert [(p.idempotency_key, p.payload) for p in prepared] == [(None, UserMessage(text="a")), ("k", UserMessage(text="b"))]
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared[0].type = "x"  # type: ignore[misc]
