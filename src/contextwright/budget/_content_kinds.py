"""Character census and content-kind classification for token estimation.

The heuristic estimator never tokenizes. It counts character classes and runs in the
UTF-8 bytes of a payload (letters, case changes, digit groups, punctuation runs,
whitespace shapes, non-ASCII characters by script block) and weighs those counts with
per-kind coefficients. Every count is a ``bytes.translate`` or ``bytes.count`` pass, so
a census costs a few linear scans in C and no Python loop over characters.

The kind of a payload (prose, code, json, logs, non-latin) is read off the same census,
so classification is deterministic and costs nothing extra.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

ContentKind = Literal["prose", "code", "json", "logs", "non-latin"]
"""The content kinds that carry their own calibration."""

CONTENT_KINDS: Final[tuple[ContentKind, ...]] = get_args(ContentKind)

# Non-ASCII characters are grouped by the lead byte of their UTF-8 encoding, which maps
# onto Unicode blocks: two-byte leads cover Latin-1 to Arabic, three-byte leads the
# rest of the BMP, four-byte leads the astral planes (emoji, rare CJK).
_SCRIPT_LEADS: Final[dict[str, range]] = {
    "latin1": range(0xC2, 0xC4),  # U+0080-00FF: accents, NBSP, ×, ·
    "latin_ext": range(0xC4, 0xCE),  # U+0100-037F: Latin Extended, IPA, combining marks
    "greek": range(0xCE, 0xD0),  # U+0380-03FF
    "cyrillic": range(0xD0, 0xD5),  # U+0400-053F
    "hebrew_armenian": range(0xD5, 0xD8),  # U+0540-05FF
    "arabic": range(0xD8, 0xE0),  # U+0600-07FF: Arabic, Syriac, Thaana, NKo
    "indic_thai": range(0xE0, 0xE1),  # U+0800-0FFF: Devanagari ... Thai, Lao, Tibetan
    "misc_scripts": range(0xE1, 0xE2),  # U+1000-1FFF: Myanmar, Georgian, Jamo, Vietnamese
    "symbols": range(0xE2, 0xE3),  # U+2000-2FFF: dashes, quotes, arrows, box drawing, ✓
    "kana": range(0xE3, 0xE4),  # U+3000-3FFF: CJK punctuation, Hiragana, Katakana
    "cjk": range(0xE4, 0xEA),  # U+4000-9FFF: CJK unified ideographs
    "hangul": range(0xEA, 0xEE),  # U+A000-DFFF: Yi, Hangul syllables
    "compat": range(0xEE, 0xF0),  # U+E000-FFFF: private use, fullwidth forms, BOM
    "astral": range(0xF0, 0xF5),  # U+10000-10FFFF: emoji, CJK extension B+
}

# Script blocks whose letters make a payload "non-latin" (symbols and Latin-1 do not).
_NON_LATIN_SCRIPTS: Final[tuple[str, ...]] = (
    "greek",
    "cyrillic",
    "hebrew_armenian",
    "arabic",
    "indic_thai",
    "misc_scripts",
    "kana",
    "cjk",
    "hangul",
)

FEATURES: Final[tuple[str, ...]] = (
    "one",  # intercept: every payload costs something
    "chars",  # code points
    "letters",  # ASCII letters
    "word_runs",  # runs of ASCII letters
    "camel_humps",  # lower-to-upper transitions (camelCase splits a word)
    "upper",  # uppercase ASCII letters
    "upper_pairs",  # non-overlapping uppercase pairs (ALLCAPS tokenizes badly)
    "letters_4",  # sum over letter runs of floor(len / 4)
    "letters_8",  # sum over letter runs of floor(len / 8)
    "letters_12",  # sum over letter runs of floor(len / 12)
    "rare_letters",  # j k q v w x y z, either case
    "consonant_triples",  # non-overlapping runs of three consonants
    "digits",
    "digit_runs",
    "digit_triples",  # sum over digit runs of floor(len / 3)
    "punct",  # ASCII punctuation characters
    "punct_runs",
    "punct_changes",  # adjacent punctuation pairs of different characters
    "quotes",  # double quotes
    "json_keys",  # '":' pairs
    "code_marks",  # {}()[]<>;=
    "newlines",
    "blank_lines",  # '\n\n'
    "indented_lines",  # newline followed by two spaces or a tab
    "space_runs",  # runs of two or more spaces/tabs
    "tabs",
    "non_ascii_runs",
    *_SCRIPT_LEADS,
    # Last, so that a payload without them sums exactly as it did before they existed.
    "arabic_marks",  # Arabic diacritics (harakat, shadda, sukun): about a token each
    "cyrillic_upper_pairs",  # non-overlapping pairs of Cyrillic capitals (all-caps words split badly)
    # Added for the "stress" calibration; the "corpus" one gives them no weight.
    "controls",  # C0 control characters but tab, newline and carriage return (ANSI escapes start with ESC)
    "alnum_16",  # sum over runs of ASCII letters and digits of floor(len / 16): base64, keys, hashes
    "cyrillic_rare",  # Cyrillic letters rare in Russian (ж ф щ э ю ъ ё ... and the Ukrainian ones): made-up words, names
)
"""Names of the census counts, in vector order."""

_INDEX: Final[dict[str, int]] = {name: i for i, name in enumerate(FEATURES)}
_CYRILLIC_AT: Final = _INDEX["cyrillic"]


def _table(classes: dict[int, bytes], default: int = 0x20) -> bytes:
    table = bytearray([default]) * 256
    for symbol, members in classes.items():
        for byte in members:
            table[byte] = symbol
    return bytes(table)


_LOWER = bytes(range(0x61, 0x7B))
_UPPER = bytes(range(0x41, 0x5B))
_DIGITS = bytes(range(0x30, 0x3A))
_PUNCT = bytes(c for c in range(0x21, 0x7F) if not (c in _LOWER or c in _UPPER or c in _DIGITS))
_VOWELS = b"aeiouAEIOU"
_RARE = b"jkqvwxyzJKQVWXYZ"
_CODE_MARKS = b"{}()[]<>;="

_T_LETTER = _table({0x61: _LOWER + _UPPER})
_T_CASE = _table({0x6C: _LOWER, 0x55: _UPPER})  # l / U
_T_CONSONANT = _table({0x63: bytes(c for c in _LOWER + _UPPER if c not in _VOWELS)})
_T_DIGIT = _table({0x64: _DIGITS})
_T_PUNCT = _table({0x70: _PUNCT})
_T_PUNCT_KEEP = bytes(c if c in _PUNCT else 0 for c in range(256))
_T_CODE = _table({0x6B: _CODE_MARKS})
_T_SPACE = _table({0x73: b" \t"}, default=0x78)  # s / x
_T_NON_ASCII = _table({0x6E: bytes(range(0x80, 0x100))})
_T_SCRIPT = _table({0x41 + i: bytes(leads) for i, leads in enumerate(_SCRIPT_LEADS.values())}, default=0x20)
# Lead bytes never occur as continuation bytes in UTF-8, so these match whole characters.
_ARABIC_MARK: Final = re.compile(rb"\xd9[\x8b-\x9f\xb0]")  # U+064B-065F, U+0670
_CYRILLIC_UPPER_PAIR: Final = re.compile(rb"\xd0[\x80-\xaf]\xd0[\x80-\xaf]")  # U+0400-042F twice
_CONTROLS: Final = bytes(c for c in (*range(0x20), 0x7F) if c not in b"\t\n\r")
_T_ALNUM = _table({0x61: _LOWER + _UPPER + _DIGITS})
_CYRILLIC_RARE: Final = re.compile("[жшюцщэфъёіїєґўЖШЮЦЩЭФЪЁІЇЄҐЎ]")
_SCRIPT_SYMBOLS: Final[tuple[bytes, ...]] = tuple(bytes([0x41 + i]) for i in range(len(_SCRIPT_LEADS)))
_NOT_SCRIPT_LEAD: Final = bytes(byte for byte in range(256) if _T_SCRIPT[byte] == 0x20)
"""Bytes that lead no counted script's character: dropped before the per-script counts, which then scan only leads."""


@dataclass(frozen=True, kw_only=True, slots=True)
class CharCensus:
    """Character-class and run counts of one payload, aligned with :data:`FEATURES`."""

    counts: tuple[int, ...]
    """One count per name in :data:`FEATURES`."""

    def __getitem__(self, name: str) -> int:
        """Return the count called ``name``."""
        return self.counts[_INDEX[name]]


def census(text: str) -> CharCensus:
    """Count the character classes and runs of ``text`` (linear, no tokenizer)."""
    raw = text.encode("utf-8")
    # A leading sentinel makes "start of a run" a two-byte pattern that never overlaps
    # itself, so bytes.count gives exact run counts.
    letters = b" " + raw.translate(_T_LETTER)
    case = raw.translate(_T_CASE)
    digits = b" " + raw.translate(_T_DIGIT)
    punct = b" " + raw.translate(_T_PUNCT)
    spaces = b"x" + raw.translate(_T_SPACE)
    n_punct = punct.count(b"p")
    punct_runs = punct.count(b" p")
    counts = [
        1,
        len(text),
        letters.count(b"a"),
        letters.count(b" a"),
        case.count(b"lU"),
        case.count(b"U"),
        case.count(b"UU"),
        letters.count(b"aaaa"),
        letters.count(b"aaaaaaaa"),
        letters.count(b"aaaaaaaaaaaa"),
        len(raw) - len(raw.translate(None, _RARE)),
        raw.translate(_T_CONSONANT).count(b"ccc"),
        digits.count(b"d"),
        digits.count(b" d"),
        digits.count(b"ddd"),
        n_punct,
        punct_runs,
        _punct_changes(raw, n_punct, punct_runs),
        raw.count(b'"'),
        raw.count(b'":'),
        raw.translate(_T_CODE).count(b"k"),
        raw.count(b"\n"),
        raw.count(b"\n\n"),
        raw.count(b"\n  ") + raw.count(b"\n\t"),
        spaces.count(b"xss"),
        raw.count(b"\t"),
    ]
    if text.isascii():
        counts.extend([0] * (3 + len(_SCRIPT_LEADS)))
    else:
        counts.append((b" " + raw.translate(_T_NON_ASCII)).count(b" n"))
        scripts = raw.translate(_T_SCRIPT, _NOT_SCRIPT_LEAD)
        counts.extend(scripts.count(symbol) for symbol in _SCRIPT_SYMBOLS)
        counts.append(len(_ARABIC_MARK.findall(raw)) if b"\xd9" in raw else 0)
        counts.append(len(_CYRILLIC_UPPER_PAIR.findall(raw)) if b"\xd0" in raw else 0)
    counts.append(len(raw) - len(raw.translate(None, _CONTROLS)))
    counts.append(raw.translate(_T_ALNUM).count(b"a" * 16))
    counts.append(len(_CYRILLIC_RARE.findall(text)) if counts[_CYRILLIC_AT] else 0)
    return CharCensus(counts=tuple(counts))


_BLANK_LINES: Final = _INDEX["blank_lines"]
_INDENTED_LINES: Final = _INDEX["indented_lines"]
_NEWLINES: Final = _INDEX["newlines"]
_CHARS: Final = _INDEX["chars"]


def census_between(head: str, body: CharCensus, body_text: str, tail: str) -> CharCensus:
    """The census of ``head + "\n" + body_text + "\n" + tail`` from ``body``, the census of ``body_text``.

    ``head`` and ``tail`` hold no newline (the first and the last line). A newline belongs
    to no class that forms runs, so every count of the three pieces adds up; only the
    newline shapes that cross a separator (blank and indented lines) and the fixed first
    count need a correction. Only ``head`` and ``tail`` are scanned.
    """
    if "\n" in head or "\n" in tail:
        raise ValueError("head and tail must be single lines")
    counts = [a + b + c for a, b, c in zip(census(head).counts, body.counts, census(tail).counts, strict=True)]
    counts[0] = 1
    counts[_CHARS] += 2
    counts[_NEWLINES] += 2
    # Non-overlapping "\n\n" counts floor(run / 2) per newline run; a separator lengthens the body's
    # leading and trailing runs by one (the whole body, when it is only newlines, by two).
    if body_text.strip("\n"):
        lead = len(body_text) - len(body_text.lstrip("\n"))
        trail = len(body_text) - len(body_text.rstrip("\n"))
        counts[_BLANK_LINES] += lead % 2 + trail % 2
    else:
        counts[_BLANK_LINES] += 1
    counts[_INDENTED_LINES] += body_text.startswith(("  ", "\t")) + tail.startswith(("  ", "\t"))
    return CharCensus(counts=tuple(counts))


def _punct_changes(raw: bytes, n_punct: int, punct_runs: int) -> int:
    # Runs of one repeated mark ("-----", "=====") are single tokens up to dozens of
    # characters, while mixed runs ("});", "\"},{") split; so count adjacent punctuation
    # pairs that differ. XOR of the byte string with itself shifted by one is zero
    # exactly where neighbours are equal; big-int XOR keeps this a C-level scan.
    if n_punct < 2:
        return 0
    # The punctuation with a zero byte on either side: as a big-endian number, the leading zero
    # adds nothing and the trailing one is a shift, so one conversion gives both neighbours.
    punct = int.from_bytes(raw.translate(_T_PUNCT_KEEP), "big")
    equal_pairs = (punct ^ (punct << 8)).to_bytes(len(raw) + 1, "big").count(0)
    zeros = len(raw) + 2 - n_punct
    equal_zero_pairs = zeros - (punct_runs + 1)  # the zero runs sit between punctuation runs
    equal_punct_pairs = equal_pairs - equal_zero_pairs
    return (n_punct - punct_runs) - equal_punct_pairs


def classify(counts: CharCensus) -> ContentKind:
    """Pick the content kind of a payload from its character mix."""
    chars = max(1, counts["chars"])
    script = sum(counts[name] for name in _NON_LATIN_SCRIPTS)
    if script and script >= 0.25 * (script + counts["letters"]):
        return "non-latin"
    if counts["json_keys"] >= 2 and counts["quotes"] >= 0.04 * chars:
        return "json"
    lines = counts["newlines"] + 1
    if lines >= 3 and counts["digits"] >= 0.06 * chars:
        return "logs"
    if counts["code_marks"] >= 0.025 * chars or counts["indented_lines"] >= 0.3 * lines:
        return "code"
    return "prose"
