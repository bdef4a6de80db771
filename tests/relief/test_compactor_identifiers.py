"""The identifiers a summary line mentions: the run-start anchor finds what the unanchored pattern found."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.relief import compactor

UNANCHORED = re.compile(
    r"[\w./-]+\.(?:py|ts|js|go|rs|java|md|json|toml|yaml|yml|cfg|txt)\b|\b[A-Z][A-Za-z]+(?:Error|Exception)\b"
)
PIECES = ["a", "b", "x9", "_", ".", "/", "-", " ", "\n", "é", "Ω", "py", ".py", ".json", ".ts", "txt", "Error", "Exception"]
PIECES += ["Value", "KeyError", "src/app.py", "a.py.py", "x.tsx", "(", ")", ":"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_identifiers_are_found_as_the_unanchored_pattern_finds_them(text):
    assert compactor._IDENTIFIER.findall(text) == UNANCHORED.findall(text)


def test_a_long_run_of_path_characters_is_scanned_once():
    text = "a/" * 20_000 + "b.py and ValueError"
    assert compactor._IDENTIFIER.findall(text) == UNANCHORED.findall(text) == [text.split()[0], "ValueError"]
