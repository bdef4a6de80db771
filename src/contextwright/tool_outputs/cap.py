"""Cap a tool result at call time: bounded head, one fixed omission marker, bounded tail.

Whatever a tool returns, the model sees at most ``max_chars`` characters of it. The
head and the tail both survive (a failed build's verdict is at the end; what was run
is at the start), cuts fall on line boundaries where that costs less than half of a
side's allowance, and the marker between them says exactly which characters were
left out and names the pointer under which the full output is stored. The marker has
one fixed format so that other code (history masking, inspection) can find it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextwright.errors import UsageError

MARKER_PREFIX = "[... "
"""Every omission marker (character or line) starts with this."""
MARKER_SUFFIX = " ...]"
"""Every omission marker ends with this."""
MARKER_TEMPLATE = "[... {omitted:,} chars omitted (chars {first}-{last} of {total}){ref} ...]"
"""The character-omission marker; ``ref`` is ``"; full output: <pointer>"`` or empty."""
MARKER_RE = re.compile(
    r"^\[\.\.\. (?P<omitted>[\d,]+) chars omitted \(chars (?P<first>\d+)-(?P<last>\d+) of (?P<total>\d+)\)"
    r"(?:; full output: (?P<pointer>\S+))? \.\.\.\]$"
)
"""Matches a whole character-omission marker line."""

DEFAULT_MAX_CHARS = 50_000


@dataclass(frozen=True, kw_only=True, slots=True)
class Capped:
    """A capped text and what was cut out of it."""

    text: str
    """Head, marker line and tail; the input itself when it already fitted."""
    original_chars: int
    """Characters in the input."""
    head_chars: int
    """Characters of the input kept at the start."""
    tail_chars: int
    """Characters of the input kept at the end."""
    omitted: tuple[int, int] | None
    """The omitted characters of the input, 1-based and inclusive; ``None`` when nothing was."""
    pointer: str | None
    """The pointer the marker names, if any."""

    @property
    def capped(self) -> bool:
        """True when something was cut."""
        return self.omitted is not None


@dataclass(frozen=True, kw_only=True, slots=True)
class MarkerInfo:
    """What one character-omission marker says."""

    omitted_chars: int
    """How many characters were left out."""
    first: int
    """First omitted character, 1-based."""
    last: int
    """Last omitted character, 1-based and inclusive."""
    total: int
    """Length of the original text."""
    pointer: str | None
    """Where the full text is stored, if the marker names it."""


def omission_marker(*, first: int, last: int, total: int, pointer: str | None = None) -> str:
    """The marker line for characters ``first..last`` (1-based, inclusive) of ``total``."""
    if pointer is not None and (not pointer or any(c.isspace() for c in pointer)):
        raise UsageError(f"pointer must be a non-empty string without whitespace, got {pointer!r}")
    ref = f"; full output: {pointer}" if pointer else ""
    return MARKER_TEMPLATE.format(omitted=last - first + 1, first=first, last=last, total=total, ref=ref)


def parse_marker(line: str) -> MarkerInfo | None:
    """Read a character-omission marker line; ``None`` if ``line`` is not one."""
    match = MARKER_RE.match(line.strip())
    if match is None:
        return None
    return MarkerInfo(
        omitted_chars=int(match["omitted"].replace(",", "")),
        first=int(match["first"]),
        last=int(match["last"]),
        total=int(match["total"]),
        pointer=match["pointer"],
    )


def is_marker(line: str) -> bool:
    """True for any omission marker line, from ``cap_output`` or from a compressor."""
    stripped = line.strip()
    return stripped.startswith(MARKER_PREFIX) and stripped.endswith(MARKER_SUFFIX)


def _head_cut(text: str, allowance: int) -> int:
    # End the head just after a newline if one lies in the second half of the allowance.
    if allowance <= 0:
        return 0
    newline = text.rfind("\n", 0, allowance)
    if newline + 1 >= allowance // 2 and newline >= 0:
        return newline + 1
    return allowance


def _tail_cut(text: str, allowance: int) -> int:
    # Start the tail just after a newline if one lies in the first half of the allowance.
    start = len(text) - allowance
    if allowance <= 0:
        return len(text)
    newline = text.find("\n", start - 1, start + allowance // 2)
    if newline >= 0 and newline + 1 < len(text):
        return newline + 1
    return start


def cap_output(
    text: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    head_share: float = 0.4,
    pointer: str | None = None,
) -> Capped:
    """Bound ``text`` to ``max_chars``: head, a marker naming ``pointer``, tail.

    The result is never longer than ``max_chars`` (marker included), both ends of the
    input survive, and text that already fits comes back unchanged. ``head_share`` is
    the share of the room left after the marker that goes to the head.
    """
    if not isinstance(text, str):
        raise UsageError(f"text must be a str, not {type(text).__name__}")
    if not 0.0 < head_share < 1.0:
        raise UsageError(
            f"head_share must be between 0 and 1 (exclusive), got {head_share}",
            head_share=head_share,
        )
    total = len(text)
    if total <= max_chars:
        return Capped(
            text=text,
            original_chars=total,
            head_chars=total,
            tail_chars=0,
            omitted=None,
            pointer=pointer,
        )
    # The widest marker this text can need: every number at full width.
    omission_marker(first=1, last=1, total=1, pointer=pointer)  # validates the pointer
    ref = f"; full output: {pointer}" if pointer else ""
    widest = MARKER_TEMPLATE.format(omitted=total, first=total, last=total, total=total, ref=ref)
    room = max_chars - len(widest) - 2  # the marker sits on its own line
    if room < 2:
        raise UsageError(
            f"max_chars={max_chars} leaves no room for the head, the tail and the {len(widest)}-char marker",
            max_chars=max_chars,
        )
    head_allowance = max(1, int(room * head_share))
    tail_allowance = max(1, room - head_allowance)
    head_end = _head_cut(text, head_allowance)
    tail_start = _tail_cut(text, tail_allowance)
    if tail_start <= head_end:  # cannot happen while room < total, kept as a guard
        tail_start = head_end + 1
    head, tail = text[:head_end], text[tail_start:]
    marker = omission_marker(first=head_end + 1, last=tail_start, total=total, pointer=pointer)
    joined = head + ("" if not head or head.endswith("\n") else "\n") + marker + "\n" + tail
    return Capped(
        text=joined,
        original_chars=total,
        head_chars=len(head),
        tail_chars=len(tail),
        omitted=(head_end + 1, tail_start),
        pointer=pointer,
    )
