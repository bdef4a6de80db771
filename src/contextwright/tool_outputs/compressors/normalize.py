"""Normalise raw terminal output before anything reads it.

Terminal colour codes and carriage-return progress rewrites are presentation, not
content: a progress bar that redraws itself a hundred times is one line on screen.
Normalising keeps the line count unchanged (only ``\\n`` separates lines), so line
numbers in omission markers point at the same lines of the original output.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections import Counter
from collections.abc import Sequence

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and the
# remaining two-byte escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[@-Z\\-_]"
)
_BACKSPACE = re.compile(r"[^\x08\n]\x08")


def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (colours, cursor control, OSC titles)."""
    if "\x1b" not in text:
        return text
    return _ANSI.sub("", text)


def _resolve_carriage_returns(line: str) -> str:
    # Each \r moves the cursor to column 0 and the following text overwrites the
    # line, so the visible result is an overlay of the segments.
    if line.endswith("\r"):
        line = line.rstrip("\r")
    if "\r" not in line:
        return line
    screen = ""
    for segment in line.split("\r"):
        screen = segment + screen[len(segment) :]
    return screen


def _resolve_backspaces(line: str) -> str:
    while "\x08" in line:
        reduced = _BACKSPACE.sub("", line)
        if reduced == line:
            return line.replace("\x08", "")
        line = reduced
    return line


def normalize_lines(text: str) -> list[str]:
    """Split ``text`` into display lines: ANSI stripped, ``\\r`` and backspace resolved.

    The result has exactly ``text.count("\\n") + 1`` entries (the last one is empty when
    the text ends with a newline).
    """
    lines = strip_ansi(text).split("\n")
    if "\r" in text or "\x08" in text:
        lines = [_resolve_backspaces(_resolve_carriage_returns(line)) for line in lines]
    return lines


PROBE_CHARS = 1_000
"""Rules look at this many characters of a line: enough for any verdict, and a bound
on regex time when a line is a megabyte of minified code or base64."""


def probe_lines(lines: Sequence[str]) -> list[str]:
    """``lines`` with each line cut to ``PROBE_CHARS`` characters, for classification only."""
    return [line if len(line) <= PROBE_CHARS else line[:PROBE_CHARS] for line in lines]


def normalize(text: str) -> str:
    """The display form of ``text``: what a terminal would show, one line per line."""
    return "\n".join(normalize_lines(text))


REPEAT_MIN = 3
"""A line repeated at least this many times in a row is shown once, with a counted marker."""
_BLANK_RUN = 2
NUMBERED_RUN = 3
"""Lines numbered one after another, in one right-aligned column, that make a numbered view."""
_NUMBERED = re.compile(r" +(\d+)[\t\u2192]")
"""A line of a numbered view (``cat -n``, ``nl``, an editor's file view): the number right-aligned in a
padded column, then a tab or an arrow, then the line as the file holds it."""


def unpad_numbers(lines: Sequence[str]) -> list[str]:
    """``lines`` with the padding before the numbers of a numbered view dropped.

    Only lines in the view's column (the width most numbered lines share) lose their
    leading spaces; the number, the tab or arrow after it and the line itself stay as
    they were, so nothing the view says is lost, only its alignment. Lines are a view's
    when at least :data:`NUMBERED_RUN` of them count up one by one; any other text is
    returned as it is.
    """
    found: list[tuple[int, int, int]] = []
    for index, line in enumerate(lines):
        match = _NUMBERED.match(line) if line[:1] == " " else None
        if match is not None:
            found.append((index, match.end(1), int(match.group(1))))
    if len(found) < NUMBERED_RUN:
        return list(lines)
    column = Counter(end for _, end, _ in found).most_common(1)[0][0]
    numbered = [(index, number) for index, end, number in found if end == column]
    counting = sum(1 for (_, a), (_, b) in zip(numbered, numbered[1:]) if b == a + 1)
    if counting < NUMBERED_RUN - 1:
        return list(lines)
    out = list(lines)
    for index, _ in numbered:
        out[index] = out[index].lstrip(" ")
    return out


def lossless(text: str, *, pointer: str | None = None) -> str:
    """``text`` with what carries no content removed: colour codes, carriage-return redraws,
    trailing blanks, blank runs beyond two lines, the padding of a numbered view's line
    numbers (:func:`unpad_numbers`), and a line repeated in a row (shown once, with a marker
    that counts the repeats and names their lines). ``text`` itself when nothing changes."""
    lines = unpad_numbers(list(map(str.rstrip, normalize_lines(text))))
    if not any(map(operator.eq, lines, itertools.islice(lines, 1, None))):
        # No line repeats the one before it: no run to fold, and nothing below changes a line.
        reduced = "\n".join(lines)
        return text if reduced == text or len(reduced) >= len(text) else reduced
    out: list[str] = []
    ref = f"; full output: {pointer}" if pointer else ""
    index = 0
    while index < len(lines):
        line = lines[index]
        end = index + 1
        while end < len(lines) and lines[end] == line:
            end += 1
        run = end - index
        if not line:
            out += [""] * min(run, _BLANK_RUN) if end < len(lines) else [""] * run
        else:
            out.append(line)
            if run >= REPEAT_MIN:
                times = run - 1
                marker = f"[... previous line repeated {times:,} more times (lines {index + 2}-{end}){ref} ...]"
                if len(marker) < len(line) * times:
                    out.append(marker)
                else:
                    out += [line] * times
            else:
                out += [line] * (run - 1)
        index = end
    reduced = "\n".join(out)
    return text if reduced == text or len(reduced) >= len(text) else reduced
