"""The character census counts what it says, and classification follows the mix."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.budget._content_kinds import _SCRIPT_LEADS, CONTENT_KINDS, FEATURES, census, census_between, classify

_ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=200)
_ANY = st.text(max_size=200)


@settings(max_examples=300, deadline=None)
@given(_ASCII)
def test_run_counts_match_regex_counts(text: str) -> None:
    # Check every run count against the obvious regex definition.
    c = census(text)
    assert c["word_runs"] == len(re.findall(r"[A-Za-z]+", text))
    assert c["digit_runs"] == len(re.findall(r"[0-9]+", text))
    assert c["digit_triples"] == sum(len(r) // 3 for r in re.findall(r"[0-9]+", text))
    assert c["letters_4"] == sum(len(r) // 4 for r in re.findall(r"[A-Za-z]+", text))
    assert c["camel_humps"] == len(re.findall(r"[a-z](?=[A-Z])", text))
    punct = r"[!-/:-@\[-`{-~]"
    assert c["punct_runs"] == len(re.findall(punct + "+", text))
    assert c["space_runs"] == len(re.findall(r"[ \t]{2,}", text))
    assert c["alnum_16"] == sum(len(r) // 16 for r in re.findall(r"[A-Za-z0-9]+", text))
    assert c["controls"] == len(re.findall(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text))


@settings(max_examples=300, deadline=None)
@given(_ASCII)
def test_punct_changes_counts_unequal_neighbours(text: str) -> None:
    # Check the XOR trick against a direct scan of adjacent pairs.
    punct = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    expected = sum(1 for a, b in zip(text, text[1:]) if a in punct and b in punct and a != b)
    assert census(text)["punct_changes"] == expected


@settings(max_examples=200, deadline=None)
@given(_ANY)
def test_census_is_deterministic_and_non_negative(text: str) -> None:
    first, second = census(text), census(text)
    assert first == second
    assert len(first.counts) == len(FEATURES)
    assert all(count >= 0 for count in first.counts)
    assert first["chars"] == len(text)
    assert classify(first) in CONTENT_KINDS


def test_script_blocks_are_counted_per_character() -> None:
    c = census("Привет, 世界! ключ こんにちは 😀 — ✓")
    assert c["cyrillic"] == len("Привет") + len("ключ")
    assert c["cjk"] == 2
    assert c["kana"] == len("こんにちは")
    assert c["astral"] == 1
    assert c["symbols"] == 2


# Characters of every UTF-8 length, two-byte ones (most script blocks) the most often.
_SCRIPTS = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x80, max_codepoint=0x7FF, exclude_categories=("Cs",)),
        st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)),
        st.characters(min_codepoint=0x10000),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(_SCRIPTS)
def test_script_counts_match_the_lead_byte_of_every_character(text: str) -> None:
    # Each character of a script is counted once, by the first byte of its UTF-8 form.
    c = census(text)
    leads = [ch.encode("utf-8", "surrogatepass")[0] for ch in text]
    for name, block in _SCRIPT_LEADS.items():
        assert c[name] == sum(1 for lead in leads if lead in block), name


def test_classify_typical_payloads() -> None:
    # Check one plain example per kind.
    prose = "The build failed because the cache directory was missing. I will recreate it and retry."
    code = "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(add(i, i))\n"
    data = json.dumps({"id": 1, "name": "x", "tags": ["a", "b"], "meta": {"ok": True}}, indent=2)
    logs = "\n".join(f"2024-05-0{i} 12:3{i}:0{i} INFO worker[{i}] processed {i * 17} items" for i in range(1, 8))
    cjk = "这是一个用于测试的中文句子，包含一些常见的汉字。"
    assert classify(census(prose)) == "prose"
    assert classify(census(code)) == "code"
    assert classify(census(data)) == "json"
    assert classify(census(logs)) == "logs"
    assert classify(census(cjk)) == "non-latin"


_PIECES = st.lists(
    st.sampled_from(
        ["\n", "\n", " ", "  ", "\t", "a", "Bq", "7", "123", "-", "{", '"', '":', "é", "Дж", "ً", "中", "😀", "<", "aaaaa"]
    ),
    max_size=14,
).map("".join)
_LINE = _PIECES.map(lambda text: text.replace("\n", ""))


@settings(max_examples=500, deadline=None)
@given(_LINE, _PIECES, _LINE)
def test_census_between_equals_the_census_of_the_joined_text(head: str, body: str, tail: str) -> None:
    # Composed from the body's census, the counts must be exactly those of a full scan, including
    # newline runs and indents that cross the separators (the estimates, and so requests, depend on it).
    assert census_between(head, census(body), body, tail) == census(head + "\n" + body + "\n" + tail)


def test_census_between_refuses_a_head_or_tail_of_several_lines() -> None:
    with pytest.raises(ValueError, match="single lines"):
        census_between("a\nb", census("x"), "x", "c")


def test_stress_counts_escapes_long_letter_digit_runs_and_rare_cyrillic() -> None:
    c = census("\x1b[31mred\x1b[0m\x07 " + "aGVsbG8gd29ybGQh" * 2 + "/x " + "a" * 15 + " Щёлкните файл")
    assert c["controls"] == 3  # two ESC and a bell; tab, newline and CR are whitespace
    assert census("a\tb\nc\r")["controls"] == 0
    assert c["alnum_16"] == 2  # a 32-character run counts twice, a 15-character one not at all
    assert c["cyrillic_rare"] == 3  # Щ, ё, ф
    assert census("ПРИВЕТ мир")["cyrillic_rare"] == 0
    assert census("x" * 16)["cyrillic_rare"] == census("Щ")["alnum_16"] == 0
