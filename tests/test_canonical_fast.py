"""The fast encoder writes exactly the bytes of the pure-Python reference, or stands aside."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import uuid

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright import canonical
from contextwright.canonical import canonical_bytes, canonical_json
from contextwright.errors import CanonicalJsonError

orjson = pytest.importorskip("orjson", reason="the fast encoder is the `fast` extra; without it only the reference path exists")


class Colour(enum.Enum):
    RED = "red"


class Size(enum.IntEnum):
    SMALL = 1


class Name(str):
    pass


class Counter(dict):  # type: ignore[type-arg]
    pass


@dataclasses.dataclass
class Point:
    x: int


def reference(value):
    """What the pure-Python path writes (or the error it raises), the bytes the contract names."""
    try:
        return canonical._pure_json(value)
    except CanonicalJsonError as exc:
        return ("refused", exc.message)


def fast_path(value):
    """``canonical_json`` with the fast encoder installed (the module as imported)."""
    try:
        return canonical_json(value)
    except CanonicalJsonError as exc:
        return ("refused", exc.message)


def check_same(value):
    # Check the public function gives the reference's text or error, and that whenever orjson
    # answers by itself its bytes are the reference's.
    assert fast_path(value) == reference(value)
    fast = canonical._fast_bytes(value)
    if fast is not None:
        assert fast == canonical._pure_json(value).encode("utf-8")


floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [1e-4, 1e-5, 1.5e-7, 5e-324, 2.2250738585072014e-308, 1e15, 1e16, 1.2345678901234567e16, 1e21, 1e22, 1e300, -0.0, 0.1]
)
ints = st.integers() | st.integers(min_value=2**62, max_value=2**66) | st.integers(min_value=-(2**66), max_value=-(2**62))
# Any code point, surrogates included: orjson refuses them, the reference writes them as text.
texts = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12) | st.text(max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | ints | floats | texts,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(texts, children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=800, deadline=None)
@given(json_values)
def test_random_values_give_the_reference_bytes(value):
    check_same(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(texts, st.integers(), min_size=2, max_size=20))
def test_key_order_is_code_point_order(value):
    check_same(value)


@pytest.mark.parametrize(
    "value",
    [
        1e-5,
        {"t": 1.5e-7},
        [5e-324, 1e16, 1e22, -0.0],
        2**63,
        2**64,
        2**64 + 1,
        -(2**63) - 1,
        2**100,
        "lone \ud800 surrogate",
        {"\ud83d": 1},
        {"😀": 1, "\uffff": 2, "é": 3, "z": 4},
        '\x00\x1f\x7f\u2028\u2029\b\f\n\r\t"\\/',
        (1, 2, (3,)),
        {"a": (1, {"b": 2})},
        Size.SMALL,
        {"k": Size.SMALL},
        Name("sub"),
        {Name("key"): 1},
        Counter(a=1),
        ["text with 1e-5 in it", "0.00001"],
        [[[[[[[[[[1]]]]]]]]]],
    ],
    ids=repr,
)
def test_edge_cases_where_the_encoders_differ_give_the_reference_bytes(value):
    check_same(value)


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        uuid.UUID(int=1),
        Colour.RED,
        dt.datetime(2026, 1, 1),
        dt.date(2026, 1, 1),
        Point(x=1),
        {1: "int key"},
        {None: 1},
        {"s": {1, 2}},
        b"bytes",
        object(),
    ],
    ids=repr,
)
def test_what_has_no_canonical_form_is_refused_on_the_fast_path_too(bad):
    with pytest.raises(CanonicalJsonError):
        canonical_json({"v": bad})
    with pytest.raises(CanonicalJsonError):
        canonical_bytes([bad])


def test_nesting_deeper_than_orjson_allows_falls_back():
    value: list = []
    for _ in range(300):
        value = [value]
    assert canonical._fast_bytes(value) is None
    assert canonical_json(value) == "[" * 300 + "[]" + "]" * 300


def test_orjson_fragments_are_not_passed_through():
    with pytest.raises(CanonicalJsonError):
        canonical_json({"raw": orjson.Fragment(b"[1,2]")})


def test_without_the_extra_every_value_takes_the_reference_path(monkeypatch):
    body = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "temperature": 0.2, "tiny": 1e-9}
    fast = canonical_bytes(body)
    monkeypatch.setattr(canonical, "_orjson", None)
    assert not canonical.fast_encoder_available()
    assert canonical._fast_bytes(body) is None
    assert canonical_bytes(body) == fast
    assert canonical_json(body) == fast.decode("utf-8")


def test_the_fast_encoder_answers_ordinary_bodies_itself():
    # The speed-up is real only if ordinary request bodies do not fall back.
    body = {"model": "m", "max_tokens": 1024, "temperature": 0.5, "messages": [{"role": "user", "content": "é 1e5"}]}
    assert canonical._fast_bytes(body) == canonical._pure_json(body).encode("utf-8")
