"""The renderer's run finders give the runs a line-by-line walk gives."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from contextwright.tool_outputs.compressors import render


def _runs_by_walking(show: list[bool]) -> list[tuple[int, int]]:
    runs = []
    position = 0
    for shown, group in itertools.groupby(show):
        length = len(list(group))
        if not shown:
            runs.append((position, position + length - 1))
        position += length
    return runs


@given(st.lists(st.booleans(), max_size=60))
def test_hidden_runs_are_the_runs_of_false(show: list[bool]) -> None:
    assert render._hidden_runs(show) == _runs_by_walking(show)


@given(st.lists(st.sampled_from(["a", "b", "", "a b"]), max_size=40))
def test_repeat_starts_are_the_lines_equal_to_one_within_a_period(texts: list[str]) -> None:
    expected = [
        i
        for i in range(len(texts))
        if any(i + p < len(texts) and texts[i + p] == texts[i] for p in range(1, render._MAX_PERIOD + 1))
    ]
    assert render._repeat_starts(texts) == expected
