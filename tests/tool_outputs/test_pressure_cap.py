"""cap_output: bounded head + fixed marker + bounded tail, never over max_chars."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.errors import UsageError
from contextwright.tool_outputs.cap import (
    MARKER_RE,
    cap_output,
    is_marker,
    omission_marker,
    parse_marker,
)

POINTER = "cw://artifact/sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


def _numbered(lines: int) -> str:
    return "".join(f"line {n:05d} of the build log\n" for n in range(lines))


def test_text_within_the_cap_comes_back_unchanged():
    text = _numbered(10)
    capped = cap_output(text, max_chars=len(text))
    assert capped.text == text
    assert not capped.capped and capped.omitted is None


def test_long_text_keeps_head_and_tail_and_names_the_pointer():
    text = _numbered(5_000)
    capped = cap_output(text, max_chars=2_000, pointer=POINTER)
    # Check the bound, then that both ends are the original's ends.
    assert len(capped.text) <= 2_000
    assert text.startswith(capped.text[: capped.head_chars])
    assert capped.text.endswith(text[-capped.tail_chars :])
    assert "line 00000" in capped.text and "line 04999" in capped.text
    marker_lines = [line for line in capped.text.split("\n") if is_marker(line)]
    assert len(marker_lines) == 1
    info = parse_marker(marker_lines[0])
    assert info is not None and info.pointer == POINTER and info.total == len(text)
    assert (info.first, info.last) == capped.omitted
    assert info.omitted_chars == len(text) - capped.head_chars - capped.tail_chars


def test_cuts_fall_on_line_boundaries_when_lines_are_short():
    text = _numbered(2_000)
    capped = cap_output(text, max_chars=3_000)
    head = capped.text[: capped.head_chars]
    tail = text[len(text) - capped.tail_chars :]
    assert head.endswith("\n")
    assert tail.startswith("line ")


def test_a_single_huge_line_is_cut_mid_line_but_still_bounded():
    text = "x" * 100_000
    capped = cap_output(text, max_chars=1_000)
    assert len(capped.text) <= 1_000
    assert capped.head_chars > 0 and capped.tail_chars > 0


def test_head_share_moves_room_between_the_ends():
    text = _numbered(3_000)
    small_head = cap_output(text, max_chars=4_000, head_share=0.2)
    big_head = cap_output(text, max_chars=4_000, head_share=0.8)
    assert small_head.head_chars < big_head.head_chars
    assert small_head.tail_chars > big_head.tail_chars


def test_marker_format_round_trips():
    marker = omission_marker(first=101, last=2_000, total=5_000, pointer=POINTER)
    assert MARKER_RE.match(marker)
    info = parse_marker(marker)
    assert info is not None
    assert (info.first, info.last, info.total, info.omitted_chars) == (101, 2_000, 5_000, 1_900)
    assert parse_marker("just a line") is None


@pytest.mark.parametrize("bad", [{"head_share": 0.0}, {"head_share": 1.0}, {"max_chars": 10}])
def test_bad_arguments_raise_usage_errors(bad):
    with pytest.raises(UsageError):
        cap_output(_numbered(1_000), **bad)


def test_a_pointer_with_whitespace_is_refused():
    with pytest.raises(UsageError):
        cap_output(_numbered(1_000), max_chars=500, pointer="two words")


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=4_000)
    | st.lists(st.text(max_size=60), max_size=300).map("\n".join),
    max_chars=st.integers(min_value=200, max_value=3_000),
    head_share=st.floats(min_value=0.05, max_value=0.95),
    pointer=st.none() | st.just(POINTER),
)
def test_cap_invariants(text, max_chars, head_share, pointer):
    capped = cap_output(text, max_chars=max_chars, head_share=head_share, pointer=pointer)
    # Check the bound and determinism.
    assert len(capped.text) <= max_chars
    assert capped == cap_output(text, max_chars=max_chars, head_share=head_share, pointer=pointer)
    if len(text) <= max_chars:
        assert capped.text == text and capped.omitted is None
        return
    # Check that both ends survive and that the accounting adds up.
    assert capped.head_chars >= 1 and capped.tail_chars >= 1
    assert capped.text.startswith(text[: capped.head_chars])
    assert capped.text.endswith(text[len(text) - capped.tail_chars :])
    first, last = capped.omitted
    assert first == capped.head_chars + 1 and last == len(text) - capped.tail_chars
    assert capped.head_chars + (last - first + 1) + capped.tail_chars == len(text)
    info = [parse_marker(line) for line in capped.text.split("\n") if MARKER_RE.match(line)]
    assert any(i is not None and (i.first, i.last, i.pointer) == (first, last, pointer) for i in info)
