"""The per-line hint flags answer the shape tests' word tests exactly, so gating on them changes no verdict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from unseen_samples import UNSEEN

from contextwright.tool_outputs.compressors import generic
from contextwright.tool_outputs.compressors.literals import required_literals
from contextwright.tool_outputs.compressors.normalize import normalize_lines

_TRICKY_LINES = [
    "",
    "İstanbul FAILED: test_x",  # lower-casing lengthens "İ"
    "ſegmentation FAULT in K-module",  # characters that case-fold onto ASCII letters
    "ERROR: 3 tests failed, 1 passed",
    "Could not resolve host",
    "  WARN deprecated: x@1.0",
    "error[E0308]: mismatched types",
    "ΣΑΣ error Σ",
    "Ran 12 tests in 0.003s",
    "could not open file: no such file or directory",
    '  File "a.py", line 3, in <module>',
    "BUILD SUCCESSFUL in 4s",
    "x.py:3:1: E302 expected 2 blank lines",
    "teh ==> the",
    "  (12, 5): bad",
    "pkg.mod:[12:40]",
    "  ^-- SC2086 (info): Double quote",
    "L:   3 | P:  10 | LT01 | x",
]


def _sample_lines() -> list[str]:
    lines = list(_TRICKY_LINES)
    for build in UNSEEN.values():
        lines += normalize_lines(build()[0])
    return lines


def _agrees(lines: list[str]) -> None:
    view = generic.view_of(lines)
    for index, line in enumerate(view.lines):
        assert view.is_failure(index) == generic.is_failure_line(line), line
        assert view.is_summary(index) == generic.is_summary_line(line), line
        assert view.is_warning(index) == generic.is_warning_line(line), line
        assert view.says_failure_word(index) == (generic._FAILURE_WORDS.search(line) is not None), line


def test_flag_gated_answers_match_the_plain_tests_on_real_shapes() -> None:
    _agrees(_sample_lines())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([*"erofailwnspytcdEROFAILWNSPK: 0123456789\t/.()İſΣ", "error", "failed", "warn", "test"])).map(
            "".join
        ),
        max_size=8,
    )
)
def test_flag_gated_answers_match_the_plain_tests_on_any_text(lines: list[str]) -> None:
    _agrees(lines)


def test_every_failure_word_holds_a_needle_that_is_also_a_hint_word() -> None:
    # Read case-sensitively, the pattern's literals are what every match holds on a lower-cased ASCII line.
    literals = required_literals(generic._FAILURE_WORDS.pattern.replace("(?i)", "").replace("(?i:", "(?:"))
    assert literals
    for literal in literals:
        assert any(needle in literal for needle in generic._FAILURE_WORD_NEEDLES), literal
    assert set(generic._FAILURE_WORD_NEEDLES) <= set(generic._WORD_HINTS)


@pytest.mark.parametrize(("needle", "pattern"), generic._GATED_FINDING_SHAPES)
def test_each_finding_shape_has_a_needle(needle: str, pattern: object) -> None:
    assert needle, pattern


def _failure_by_every_pattern(line: str) -> bool:
    # The failure test as a plain search of every pattern in turn, with no hint or word gates.
    return (
        ("error" in line and generic._ERROR_AT.search(line) is not None)
        or (generic._EXCEPTION.search(line) is not None and generic.is_exception_line(line))
        or any(pattern.search(line) for _, pattern in generic._FAILURE_PATTERNS)
    )


def test_failure_patterns_behind_one_anchor_answer_as_each_pattern_does() -> None:
    merged = {pattern.pattern for _, pattern in generic._FAILURE_PATTERNS_ELSEWHERE}
    assert len(merged) < len(generic._FAILURE_PATTERNS)  # some were merged
    for line in _sample_lines():
        if generic._has(line, generic._FAILURE_HINTS):
            assert generic._failure_shape(line) == _failure_by_every_pattern(line), line
