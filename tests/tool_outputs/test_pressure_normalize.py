"""Normalisation: what a terminal shows, one output line per input line."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given
from hypothesis import strategies as st

from contextwright.tool_outputs.compressors.normalize import normalize, normalize_lines, strip_ansi


def test_colour_cursor_and_title_sequences_are_removed():
    text = "\x1b[31m\x1b[1mZeroDivisionError\x1b[0m: boom\x1b[2K\x1b]0;title\x07 done"
    assert strip_ansi(text) == "ZeroDivisionError: boom done"


def test_carriage_return_rewrites_keep_what_the_screen_shows():
    assert normalize("Downloading 10%\rDownloading 55%\rDownloading 100%") == "Downloading 100%"
    assert normalize("long progress text\rshort") == "shortprogress text"
    assert normalize("line one\r\nline two\r\n") == "line one\nline two\n"


def test_backspaces_erase_the_previous_character():
    assert normalize("spinner |\b/\b-\b\\\bdone") == "spinner done"


@given(st.text())
def test_line_count_never_changes(text):
    assert len(normalize_lines(text)) == text.count("\n") + 1
