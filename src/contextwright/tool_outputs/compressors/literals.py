"""Substrings that every match of a regular expression contains.

A regex scan over a whole text costs a step per character even when it cannot match;
``needle in text`` costs far less. :func:`required_literals` reads a pattern's parse
tree and returns strings of which every match contains at least one, so a caller can
skip the scan when none of them occurs. It only ever answers with what the tree
proves (a literal run outside any optional part, on every branch); anything it does
not understand (case-insensitive parts, unknown nodes) gives no needle for that part,
and a pattern with no provable needle gives None: never a false "cannot match".
"""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any

# The stdlib's own regex parser (private, but what ``re.compile`` itself runs since 3.11).
sre_parse = importlib.import_module("re._parser")
sre = importlib.import_module("re._constants")

_REPEATS = frozenset(op for op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)) if op)
_MAX_CLASS = 4
"""A character class of at most this many literals counts as that many one-character needles."""


@functools.cache
def required_literals(pattern: str) -> tuple[str, ...] | None:
    """Strings of which every match of ``pattern`` contains one, or None when none can be proved."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    needles = _sequence(list(parsed))
    return tuple(sorted(needles)) if needles else None


def _sequence(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    # Every item of a sequence is in every match: the best single item's needles serve
    # (the longest shortest needle, then the fewest). Consecutive literals join into one run.
    candidates: list[frozenset[str]] = []
    run: list[str] = []
    for op, argument in items:
        if op is sre.LITERAL:
            run.append(chr(argument))
            continue
        if run:
            candidates.append(frozenset(("".join(run),)))
            run = []
        found = _item(op, argument)
        if found:
            candidates.append(found)
    if run:
        candidates.append(frozenset(("".join(run),)))
    if not candidates:
        return None
    return max(candidates, key=lambda needles: (min(map(len, needles)), -len(needles)))


def _item(op: Any, argument: Any) -> frozenset[str] | None:
    if op is sre.SUBPATTERN:
        _group, add_flags, _del_flags, body = argument
        if add_flags & re.IGNORECASE:
            return None
        return _sequence(list(body))
    if op is sre.BRANCH:
        needles: set[str] = set()
        for branch in argument[1]:
            found = _sequence(list(branch))
            if not found:
                return None  # a branch without a needle can match anywhere
            needles |= found
        return frozenset(needles)
    if op in _REPEATS:
        low, _high, body = argument
        return _sequence(list(body)) if low >= 1 else None
    if op is getattr(sre, "ATOMIC_GROUP", None):
        return _sequence(list(argument))
    if op is sre.IN and 0 < len(argument) <= _MAX_CLASS and all(member is sre.LITERAL for member, _ in argument):
        return frozenset(chr(code) for _, code in argument)
    return None


@functools.cache
def starts_lines_only(pattern: str) -> bool:
    """True when every match of ``pattern`` (read with ``re.MULTILINE``) starts where a line starts.

    Such a pattern can be searched as ``\\n(?:pattern)`` in the text after a newline: the
    engine then jumps from newline to newline instead of trying every character. Patterns
    that look behind or anchor at the start of the text are never said to qualify, since
    the added newline would change what they see.
    """
    if "(?<" in pattern or "\\A" in pattern:
        return False
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return False
    return _starts_line(list(parsed))


def _starts_line(items: list[tuple[Any, Any]]) -> bool:
    if not items:
        return False
    op, argument = items[0]
    if op is sre.AT:
        return argument is sre.AT_BEGINNING
    if op is sre.BRANCH:
        return all(_starts_line(list(branch)) for branch in argument[1])
    if op is sre.SUBPATTERN:
        return _starts_line(list(argument[3]))
    return False


@functools.cache
def top_alternatives(pattern: str) -> tuple[str, ...] | None:
    """The alternatives of ``pattern`` at its top level, as pattern strings joined back by ``|`` to ``pattern``.

    None when splitting could change what a part means: inline flags (which apply to
    the whole pattern), back references and conditionals (which count groups), or a
    pattern the parser rejects.
    """
    if "(?P=" in pattern or "(?(" in pattern or re.search(r"\\[1-9]", pattern):
        return None
    try:
        if sre_parse.parse(pattern).state.flags & ~sre.SRE_FLAG_UNICODE:
            return None
    except (re.error, RecursionError):
        return None
    parts: list[str] = []
    depth = 0
    start = 0
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # A "]" right after the opening bracket (or after "^") is a member, not the end.
            if pattern[index + 1 : index + 2] == "^":
                index += 1
            if pattern[index + 1 : index + 2] == "]":
                index += 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:index])
            start = index + 1
        index += 1
    parts.append(pattern[start:])
    for part in parts:
        try:
            re.compile(part)
        except re.error:
            return None
    return tuple(parts)
