"""A floor under a text's token count, for placing cache markers where a prefix is long enough.

A cache entry is written only when the prefix at its marker reaches the model's
minimum cacheable length, and a renderer has no tokenizer for Claude. What it can
count, without one, is pieces that byte-pair tokenizers of the GPT and Claude
families never merge: their pre-tokenizers split text before any merge, and no
pre-token holds two runs of letters separated by an ASCII non-letter (apart from an
English contraction such as ``don't``), nor more than three digits. So the number of
such runs is at most the number of tokens. The check is against o200k
(``tests/providers/test_token_floor.py``); Claude's tokenizer counts more tokens than
o200k for the same text, never fewer pieces.

Non-ASCII characters are counted as part of the run they touch, so text in other
scripts is under-counted, never over-counted: a marker placed by this floor covers
at least what the floor says.
"""

from __future__ import annotations

import re

__all__ = ["token_floor"]

# A run of ASCII letters and non-ASCII characters, with an optional contraction suffix
# (o200k keeps "'s", "'t", "'re", "'ve", "'m", "'ll", "'d" in the word's pre-token);
# or up to three ASCII digits.
_PIECE = re.compile(r"[A-Za-z\x80-\U0010ffff]+(?:'(?:[sStTmMdD]|[rR][eE]|[vV][eE]|[lL][lL]))?|[0-9]{1,3}")


def token_floor(text: str, *, enough: int | None = None) -> int:
    """At most the number of tokens of ``text``; counting stops once it reaches ``enough``."""
    if enough is None:
        return sum(1 for _ in _PIECE.finditer(text))
    count = 0
    for _ in _PIECE.finditer(text):
        count += 1
        if count >= enough:
            break
    return count
