"""Facts read off a regex: needles every match contains, and whether every match starts a line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwright.tool_outputs.compressors import detect
from contextwright.tool_outputs.compressors.literals import required_literals, starts_lines_only, top_alternatives


@pytest.mark.parametrize(
    ("pattern", "needles"),
    [
        (r"^diff --git ", ("diff --git ",)),
        (r"\berror TS\d+: ", ("error TS",)),
        (r"^total \d+$", ("total ",)),
        (r"^(?:On branch |nothing to commit)", ("On branch ", "nothing to commit")),
        (r"^\d+ files? inspected", (" inspected",)),
        (r"^\s+[✓✕]\s", ("✓", "✕")),
        (r"(?:ab)+c", ("ab",)),
    ],
)
def test_needles_are_the_longest_literal_every_match_holds(pattern: str, needles: tuple[str, ...]) -> None:
    assert required_literals(pattern) == needles


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i)error",  # case-insensitive: a substring test would miss "ERROR"
        r"abc|\d+",  # one branch has no literal
        r"(?:abc)?\d",  # an optional part is not required
        r"(?:abc)*",
        r"[^abc]x?",
        r"(?=abc)\w",  # a lookahead's text lies outside the match
        r"(?i:abc)\d",
        r"[",  # not a pattern at all
    ],
)
def test_no_needle_is_claimed_without_proof(pattern: str) -> None:
    assert required_literals(pattern) is None


_PIECES = st.sampled_from(["a", "b", ":", "ab", "ba", r"\d", r"\s", ".", "[ab]", "[^a]", "^", "$", r"\b"])


def _regex(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, min_size=1, max_size=4).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda parts: "(?:" + "|".join(parts) + ")"),
        children.map(lambda part: f"(?:{part})?"),
        children.map(lambda part: f"(?:{part})+"),
        children.map(lambda part: f"(?:{part}){{2,3}}"),
        children.map(lambda part: f"(?i:{part})"),
        children.map(lambda part: f"(?={part})"),
        children.map(lambda part: f"({part})"),
    )


@settings(max_examples=400, deadline=None)
@given(pattern=st.recursive(_PIECES, _regex, max_leaves=8), text=st.text(alphabet="abAB: 1\n", max_size=30))
def test_every_match_contains_a_needle(pattern: str, text: str) -> None:
    needles = required_literals(pattern)
    if needles is None:
        return
    for match in re.finditer(pattern, text, re.MULTILINE):
        if match.group():
            assert any(needle in match.group() for needle in needles), (pattern, text, match.group(), needles)
        else:
            # An empty match contains no needle: such a pattern can never have been given any.
            pytest.fail(f"{pattern!r} matched empty text but claims needles {needles}")


def test_detection_reads_every_corpus_sample_the_same_with_and_without_needles(
    tool_outputs_dir, monkeypatch: pytest.MonkeyPatch
) -> None:
    samples = sorted(path for path in tool_outputs_dir.rglob("*") if path.is_file() and path.suffix != ".json")
    samples = [path for path in samples if path.name != "README.md"]
    assert samples
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in samples]
    with_needles = [detect.detect_kind(text) for text in texts]
    monkeypatch.setattr(detect, "required_literals", lambda pattern: None)
    monkeypatch.setattr(detect, "starts_lines_only", lambda pattern: False)
    detect._after_newline.cache_clear()
    detect._guarded_alternatives.cache_clear()
    assert [detect.detect_kind(text) for text in texts] == with_needles
    detect._after_newline.cache_clear()
    detect._guarded_alternatives.cache_clear()


@pytest.mark.parametrize(
    ("pattern", "starts"),
    [
        (r"^diff --git ", True),
        (r"^a|^b\d", True),
        (r"(?:^a|^b)c", True),
        (r"^\s*--> \S+", True),
        (r"Traceback|^Exception", False),  # one branch can match mid-line
        (r"a^", False),
        (r"(?<=x)^a", False),  # looks behind: the added newline would be seen
        (r"\A^a", False),
        (r"[", False),
    ],
)
def test_patterns_that_only_match_at_line_starts(pattern: str, starts: bool) -> None:
    assert starts_lines_only(pattern) is starts


_ANCHORED = st.builds(
    lambda head, tail: head + tail, st.sampled_from(["^", "^\\s*", "(?:^a|^b)"]), st.recursive(_PIECES, _regex, max_leaves=6)
)


@settings(max_examples=600, deadline=None)
@given(pattern=_ANCHORED, text=st.text(alphabet="abAB: 1\n", max_size=40))
def test_a_line_start_pattern_counts_the_same_after_a_newline(pattern: str, text: str) -> None:
    lines = detect._Sample(text.split("\n"))
    plain = len(re.findall(f"(?m)(?:{pattern}).*", lines.text))
    assert detect._count(lines, pattern) == plain, (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "parts"),
    [
        (r"^a|b", ("^a", "b")),
        (r"^(?:a|b)c", ("^(?:a|b)c",)),
        (r"[|]x|\|y|z", ("[|]x", r"\|y", "z")),
        (r"[]|]|d", ("[]|]", "d")),
        (r"[^]|]|e", ("[^]|]", "e")),
        (r"(?i:a|b)|c", ("(?i:a|b)", "c")),
        (r"(?i)a|b", None),  # the flag applies to every part
        (r"(a)|\1", None),  # a back reference counts groups
        (r"[", None),
    ],
)
def test_top_level_alternatives(pattern: str, parts: tuple[str, ...] | None) -> None:
    assert top_alternatives(pattern) == parts


@settings(max_examples=600, deadline=None)
@given(
    parts=st.lists(st.recursive(_PIECES, _regex, max_leaves=5), min_size=1, max_size=4),
    text=st.text(alphabet="abAB: 1\n", max_size=40),
)
def test_a_pattern_narrowed_to_the_alternatives_its_text_allows_counts_the_same(parts: list[str], text: str) -> None:
    pattern = "|".join(parts)
    lines = detect._Sample(text.split("\n"))
    assert detect._count(lines, pattern) == len(re.findall(f"(?m)(?:{pattern}).*", lines.text)), (pattern, text)
