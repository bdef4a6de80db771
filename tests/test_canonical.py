"""The byte contract: what must change a hash and what must not."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given
from hypothesis import strategies as st

from contextwright.canonical import (
    _pure_json,
    canonical_bytes,
    canonical_json,
    canonical_str,
    content_hash,
    is_tagged_hash,
    parse_canonical,
    plain_canonical_bytes,
    sha256_tagged,
)
from contextwright.errors import CanonicalJsonError

BASE = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "n": 1, "t": 0.5, "ok": True, "x": None}


def test_known_bytes():
    assert canonical_json({"b": 1, "a": [1, 2, {"d": None, "c": "é"}]}) == '{"a":[1,2,{"c":"é","d":null}],"b":1}'
    assert canonical_bytes({"a": "é"}) == b'{"a":"\xc3\xa9"}'
    assert sha256_tagged(b"") == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize(
    "variant",
    [
        {"messages": [{"role": "user", "content": "héllo"}], "model": "m", "n": 1, "t": 0.5, "ok": True, "x": None},
        dict(reversed(list(BASE.items()))),
    ],
    ids=["key order", "reversed key order"],
)
def test_changes_that_must_not_alter_the_hash(variant):
    assert content_hash(variant) == content_hash(BASE)


def test_whitespace_in_the_source_text_does_not_matter():
    pretty = '{\n  "n": 1, "model": "m",\n "messages": [ {"content": "héllo", "role": "user"} ], "t": 0.5, "ok": true, "x": null}'
    assert content_hash(parse_canonical(pretty)) == content_hash(BASE)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(model="m2"),
        lambda d: d["messages"][0].update(content="hello"),  # é → e
        lambda d: d["messages"][0].update(content="héllo "),  # trailing space
        lambda d: d.update(n=2),
        lambda d: d.update(n="1"),  # type change
        lambda d: d.update(t=0.25),
        lambda d: d.update(ok=False),
        lambda d: d.update(x=0),
        lambda d: d.update(extra=None),
        lambda d: d["messages"].append({"role": "user", "content": "héllo"}),
        lambda d: d["messages"].reverse() or d["messages"].insert(0, {}),
    ],
    ids=[
        "value",
        "accent",
        "whitespace in value",
        "number",
        "type",
        "float",
        "bool",
        "null vs 0",
        "new key",
        "list length",
        "list order",
    ],
)
def test_changes_that_must_alter_the_hash(change):
    import copy

    changed = copy.deepcopy(BASE)
    change(changed)
    assert content_hash(changed) != content_hash(BASE)


def test_list_order_matters():
    assert content_hash([1, 2]) != content_hash([2, 1])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1: "int key"}, {"s": {1, 2}}, b"bytes", object()])
def test_values_without_a_canonical_form_are_rejected(bad):
    with pytest.raises(CanonicalJsonError):
        canonical_json({"v": bad} if not isinstance(bad, dict) else bad)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, float("1e400")], ids=repr)
@pytest.mark.parametrize("encode", [canonical_bytes, plain_canonical_bytes, content_hash], ids=lambda f: f.__name__)
def test_non_finite_numbers_are_refused_by_every_encoder_never_written_as_null(encode, bad):
    # A payload that also holds a real null: the fast encoder writes NaN as null too.
    with pytest.raises(CanonicalJsonError, match="not allowed") as caught:
        encode({"arguments": {"x": bad}, "model": None})
    assert caught.value.path == "$.arguments.x"


@pytest.mark.parametrize("encode", [canonical_bytes, plain_canonical_bytes, content_hash], ids=lambda f: f.__name__)
def test_a_lone_surrogate_is_refused_with_the_typed_error_naming_where(encode):
    with pytest.raises(CanonicalJsonError, match="U\\+D800") as caught:
        encode(["tool_result", {"output": "ok \ud800", "call_id": "c1"}])
    assert caught.value.path == "$[1].output"
    # A surrogate pair decodes to one character and is valid text.
    assert encode({"output": parse_canonical('"\\ud83d\\ude00"')})


def test_nan_literals_are_rejected_when_parsing():
    with pytest.raises(CanonicalJsonError):
        parse_canonical('{"a": NaN}')
    with pytest.raises(CanonicalJsonError):
        parse_canonical("{not json")


def test_tagged_hash_shape():
    digest = content_hash({"a": 1})
    assert is_tagged_hash(digest)
    assert not is_tagged_hash(digest.replace("sha256:", "md5:"))
    assert not is_tagged_hash(digest[:-1])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_is_a_fixed_point(value):
    text = canonical_json(value)
    assert canonical_json(parse_canonical(text)) == text
    assert " " not in text.replace('" "', "") or isinstance(value, (str, dict, list))


@given(st.text())
def test_a_string_alone_encodes_as_the_general_encoder_writes_it(text):
    assert canonical_str(text) == canonical_json(text) == _pure_json(text)


def test_strings_with_escapes_encode_as_the_general_encoder_writes_them():
    for text in ("", 'quote " back \\', "nul \x00 \x01\x1f\x7f", "\t\n\r\b\f", "\u2028 漢字 🙂", "lone \ud800"):
        assert canonical_str(text) == canonical_json(text) == _pure_json(text)
