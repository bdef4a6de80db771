"""Fuzzing every door an outsider's bytes come through: payload decoding, log.append, importers, escaping.

Bounded: each test runs a fixed number of examples (seconds in all). A longer run uses
atheris: ``python bench/fuzz_atheris.py --help``.
"""

from __future__ import annotations

import tempfile

import pytest
from fuzz_targets import TYPES, dumps, envelope_escape, importer, log_append, new_log, payload_decoder

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwright.log.sqlite import SQLiteEventLog

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text with lone surrogates, controls, NUL and look-alikes mixed in.
nasty_text = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(["\ud800", "\udfff", "\x00", "\u200b", "<", "/", "\uff1c", "\u2571", "&", "\n"]),
    ),
    max_size=40,
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), nasty_text),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.one_of(nasty_text, st.integers()), children, max_size=4)
    ),
    max_leaves=30,
)


def deep(depth: int, leaf: object) -> object:
    value = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


payloads = st.one_of(
    json_values,
    st.dictionaries(
        st.sampled_from(["text", "tool_calls", "call_id", "tool_name", "output", "id", "name", "arguments"]), json_values
    ),
    st.builds(
        lambda depth, text: {"tool_calls": [{"id": "c", "name": "t", "arguments": {"a": deep(depth, text)}}]},
        st.integers(0, 3000),
        nasty_text,
    ),
)


@FAST
@given(st.sampled_from(TYPES), payloads)
def test_payload_decoder(type_name, data):
    payload_decoder(type_name, data)


@FAST
@given(st.sampled_from(["message.user", "message.assistant", "tool.result", *TYPES]), payloads, st.one_of(st.none(), nasty_text))
def test_log_append_in_memory(type_name, data, key):
    log_append(new_log(), "s", type_name, data, key)


_SQLITE = SQLiteEventLog(tempfile.mkdtemp(prefix="cw-fuzz-") + "/fuzz.db")


@settings(max_examples=60, deadline=None)
@given(
    nasty_text, st.sampled_from(["message.user", "message.assistant", "tool.result"]), payloads, st.one_of(st.none(), nasty_text)
)
def test_log_append_on_sqlite(session_id, type_name, data, key):
    log_append(_SQLITE, session_id or "s", type_name, data, key)


records = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["user", "assistant", "system", "summary", "message", "action", "observation"]),
        "uuid": nasty_text,
        "parentUuid": st.one_of(st.none(), nasty_text),
        "sessionId": nasty_text,
        "role": st.sampled_from(["user", "assistant", "tool", "system"]),
        "content": json_values,
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant"]), "content": json_values}, optional={"id": nasty_text}
        ),
        "messages": st.lists(
            st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": json_values}), max_size=3
        ),
        "tool_calls": json_values,
        "history": json_values,
        "trajectory": json_values,
        "timestamp": nasty_text,
    },
)
files = st.one_of(
    st.lists(records, max_size=5).map(lambda rs: b"\n".join(dumps(r) for r in rs)),
    st.lists(records, max_size=3).map(dumps),
    records.map(dumps),
    json_values.map(dumps),
    st.binary(max_size=200),
    nasty_text.map(lambda t: ("#### User\n\n" + t + "\n\n#### Assistant\n\n" + t).encode("utf-8", "surrogatepass")),
    st.integers(1, 20_000).map(lambda n: b"[" * n + b"]" * n),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(files, st.sampled_from([".jsonl", ".json", ".traj", ".md"]))
def test_every_importer(content, suffix):
    importer(content, suffix)


@FAST
@given(nasty_text)
def test_envelope_escaping(text):
    envelope_escape(text)


@pytest.mark.parametrize("size", [1, 95, 96, 97, 10_000])
def test_envelope_escaping_with_long_gaps(size):
    for gap in (" ", "\u200b", "\u2060\t", "-"):
        envelope_escape("<" + gap * size + '/cw-data id="x">')


@pytest.mark.parametrize("type_name", ["message.assistant", "tool.result", "message.user"])
def test_deep_raw_payloads_are_refused_at_the_decoder_without_recursion(type_name):
    # Found by this suite: arguments 500 deep used to raise RecursionError in decode_payload.
    from contextwright.errors import PayloadLimitExceeded
    from contextwright.events import decode_payload

    data = {"tool_calls": [{"id": "c", "name": "t", "arguments": {"a": deep(3000, "x")}}], "text": "x"}
    with pytest.raises(PayloadLimitExceeded):
        decode_payload(type_name, data)
