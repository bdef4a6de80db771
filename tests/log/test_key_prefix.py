"""The bounds that turn "the key starts with a prefix" into an index range."""

from __future__ import annotations

import sys

from hypothesis import given
from hypothesis import strategies as st

from contextwright.log.base import MAX_IDEMPOTENCY_KEY_LENGTH, key_prefix_range

# Characters next to the bounds the range computes: the wildcards of LIKE, the neighbours of
# ":", the code points around the surrogates and the highest code point.
NEAR_BOUNDS = st.sampled_from(
    ["%", "_", ":", ";", "9", "a", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\U0010fffe", chr(sys.maxunicode)]
)
KEYS = st.text(NEAR_BOUNDS, min_size=1, max_size=6)


@given(prefix=KEYS, key=KEYS)
def test_the_range_holds_exactly_the_keys_with_the_prefix(prefix, key):
    low, high = key_prefix_range(prefix)
    assert (low <= key < high) == key.startswith(prefix)
    # Both bounds compare the same as text and as UTF-8, the order SQL indexes keep.
    assert (key < high) == (key.encode() < high.encode())


@given(suffix=KEYS)
def test_a_key_extending_the_prefix_inside_the_range(suffix):
    low, high = key_prefix_range("k:")
    assert low <= "k:" + suffix < high and (low, high) == ("k:", "k;")


def test_a_prefix_of_only_the_highest_code_point_is_bounded_above_every_key():
    top = chr(sys.maxunicode)
    low, high = key_prefix_range(top * 3)
    assert low == top * 3 and top * MAX_IDEMPOTENCY_KEY_LENGTH < high
    assert key_prefix_range("a" + top) == ("a" + top, "b")
    assert key_prefix_range("x\ud7ff") == ("x\ud7ff", "x\ue000")
