"""The detector's and the hint flags' shortcuts answer as the plain tests they stand for.

A sample's words rule needles out without a scan of the text, the diagnostic lines of a
sample are counted with their hint words found at once, and the place shapes are tried on
the few lines no hint word marked: each must give exactly what a substring test per needle,
:func:`is_diagnostic_line` per line and a search of the whole text per shape give.
"""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.tool_outputs.compressors import detect, generic
from contextwright.tool_outputs.compressors.generic import count_diagnostic_lines, is_diagnostic_line

_CHARS = "abeilorstwxyzABEFKTW :-_/.()[]!#\té\u212a\u0130"
"""Letters, separators, an accented letter, the Kelvin sign and a dotted capital I (both lower to ASCII)."""
_WORDS = ["error", "Error", "FAIL", "warn", "Traceback", "test", "K", "İ", "x.py:3:", "=== RUN", "a b", "!", ""]


@settings(max_examples=300, deadline=None)
@given(
    chunk=st.text(alphabet=_CHARS, min_size=1, max_size=60),
    extra=st.lists(st.sampled_from(_WORDS), max_size=6),
    needles=st.lists(
        st.lists(st.text(alphabet=_CHARS, max_size=8) | st.sampled_from(_WORDS), min_size=1, max_size=5), max_size=12
    ),
)
def test_a_long_samples_needles_are_found_as_by_substring_tests(chunk: str, extra: list[str], needles: list[list[str]]) -> None:
    text = (chunk * (detect._WORDS_MIN_CHARS // len(chunk) + 2)) + "\n".join(extra)
    sample = detect._Sample(text.split("\n"))
    sample.by_words = True
    for group in needles:
        assert sample.holds_any(tuple(group)) == any(needle in sample.text for needle in group), (group, text[:80])
        assert sample.nonblank.holds_any(tuple(group)) == any(needle in sample.nonblank.text for needle in group)


_LINES = [
    "src/app.py:12:5: error: bad",
    "warning: unused x",
    "ERROR failed to open",
    '  File "x.py", line 3',
    "ok 1 - adds",
    "E501 line too long",
    "teh ==> the",
    "plain text",
    "İSTANBUL FAİL",
    "",
    "✕ broken",
]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(_LINES) | st.text(alphabet=_CHARS, max_size=30), max_size=60))
def test_diagnostic_lines_are_counted_as_line_by_line(lines: list[str]) -> None:
    expected = sum(1 for line in lines if is_diagnostic_line(line))
    assert count_diagnostic_lines(lines, 10**6) == expected
    assert count_diagnostic_lines(lines, 2) == min(2, expected)


def _hinted_by_full_scans(lines: list[str]) -> bytearray:
    # Every place shape searched over the whole text, as the flags were first computed.
    flags = bytearray(len(lines))
    if not lines:
        return flags
    low, starts = generic._flag_hint_words(flags, lines)
    flags[0] |= generic.HINTED
    for pattern in generic._PATTERN_HINTS:
        for match in pattern.finditer(low):
            flags[bisect.bisect_right(starts, match.start() + 1) - 1] |= generic.HINTED
    return flags


_PLACE_PIECES = [
    "test ok", "a.py:3", "x.Py(12", "/bin/x:1", "Dockerfile:9", "main.tf line 4", "-->", "[12, 3]:", "  [4",
    "Header:", "Header: \t", "line 3:", "LINE 12: x", "  l12 |<div>", "l3|", "in deploy.sh line 12", "In x line 1",
    "", " ", "\t", ":", "plain", "x:1", "İ", "error", "a.py:3:", "\u212a.py:3",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(
        st.lists(st.sampled_from(_PLACE_PIECES), max_size=3).map(" ".join) | st.sampled_from(_PLACE_PIECES), max_size=50
    )
)
def test_hint_flags_match_a_search_of_the_whole_text_for_every_place_shape(lines: list[str]) -> None:
    assert generic._hinted(lines) == _hinted_by_full_scans(lines), lines
    # A long line that says "test" makes the text long enough for the lines without a hint word to be tried one by one.
    padded = ["test " * (generic._CHARS_PER_TRIED_LINE * 12), *lines]
    assert generic._hinted(padded) == _hinted_by_full_scans(padded), lines


def test_hint_flags_of_lines_with_newlines_of_their_own_match_the_whole_search() -> None:
    lines = ["test a:", "\n  l12 |", "test", "x:1\nline 3:", "test"]
    assert generic._hinted(lines) == _hinted_by_full_scans(lines)
