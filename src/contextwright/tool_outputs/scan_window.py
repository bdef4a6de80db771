"""The part of a long tool output that the compressor reads.

The compressor analyses an output line by line, and its working set is several times
the text it reads: a Python string per line and marks per line, so short lines cost
the most. So an output longer than :data:`WHOLE_CHARS` is read through a view of at most
a :data:`VIEW_SHARE` of its length, never more than :data:`COMPRESS_WINDOW_CHARS`, and of
at most one line per :data:`VIEW_CHARS_PER_LINE` characters of that: its head, its tail,
and up to :data:`MIDDLE_FAILURE_LINES` lines of the middle that mention a failure. The
view is built from slices, and the middle is scanned once, a chunk at a time, so memory
stays a fraction of the output and time stays linear whatever a tool prints. The
artifact keeps every character.
"""

from __future__ import annotations

import re

from contextwright.tool_outputs.cap import MARKER_PREFIX, MARKER_SUFFIX, MARKER_TEMPLATE

WHOLE_CHARS = 256_000
"""Outputs up to this many characters are compressed whole: the working set, several times
the text, is then a few megabytes at most."""
VIEW_SHARE = 0.1
"""A longer output is compressed from a view of at most this share of its characters..."""
COMPRESS_WINDOW_CHARS = 1_000_000
"""...and of at most this many characters (head and tail; the middle's failure lines come on top)..."""
VIEW_CHARS_PER_LINE = 100
"""...and of at most one line per this many of those characters (a line costs more than its text)."""
MIDDLE_FAILURE_LINES = 200
"""At most this many lines from the middle of a long output that mention a failure are kept..."""
MIDDLE_SHARE = 0.25
"""...taking at most this share of the view's head and tail characters."""
_MIDDLE_LINE_CHARS = 500
_FAILURE_WORDS = ("error", "fail", "exception", "traceback", "panic", "fatal")
_FAILURE_WORD = re.compile("|".join(_FAILURE_WORDS), re.IGNORECASE)
_LONGEST_WORD = max(map(len, _FAILURE_WORDS))
_SCAN_CHUNK_CHARS = 1 << 16


def view_chars(total: int) -> int:
    """Head and tail characters of the view of a ``total``-character output; ``total`` when it is read whole."""
    if total <= WHOLE_CHARS:
        return total
    return min(COMPRESS_WINDOW_CHARS, int(total * VIEW_SHARE))


def bounded_view(output: str, *, ref: str) -> str:
    """``output`` itself if it is read whole; else its head, the failure lines of its middle, and its tail."""
    window = view_chars(len(output))
    if window >= len(output):
        return output
    half = window // 2
    half_lines = max(1, window // VIEW_CHARS_PER_LINE // 2)
    head_end = output.rfind("\n", 0, half) + 1 or half
    head_end = min(head_end, _after_lines(output, half_lines, head_end))
    tail_start = output.find("\n", len(output) - half) + 1 or len(output) - half
    tail_start = max(tail_start, _before_lines(output, half_lines, tail_start))
    failures = _middle_failure_lines(output, head_end, tail_start, max_chars=int(window * MIDDLE_SHARE))
    marker = MARKER_TEMPLATE.format(
        omitted=tail_start - head_end,
        first=head_end + 1,
        last=tail_start,
        total=len(output),
        ref=f"; full output: {ref}",
    )
    parts = [output[:head_end], marker, "\n"]
    if failures:
        parts.append(f"{MARKER_PREFIX}{len(failures)} lines of the omitted part mention a failure{MARKER_SUFFIX}\n")
        parts += [line + "\n" for line in failures]
    parts.append(output[tail_start:])
    return "".join(parts)


def _after_lines(text: str, count: int, stop: int) -> int:
    """Where the line after the first ``count`` lines of ``text`` starts (``stop`` if that is sooner)."""
    position = 0
    for _ in range(count):
        position = text.find("\n", position, stop) + 1
        if not position:
            return stop
    return position


def _before_lines(text: str, count: int, start: int) -> int:
    """Where the last ``count`` lines of ``text`` start (``start`` if that is later)."""
    end = len(text) - 1 if text.endswith("\n") else len(text)  # the final newline ends the last line
    begin = len(text)
    for _ in range(count):
        found = text.rfind("\n", start, end)
        if found < 0:
            return start
        begin, end = found + 1, found
    return begin


def _middle_failure_lines(output: str, start: int, end: int, *, max_chars: int) -> list[str]:
    # Each line that mentions a failure word, once, cut to _MIDDLE_LINE_CHARS, in order.
    lines: list[str] = []
    spent = 0
    scanner = _FailureScanner(output, end)
    found = scanner.next_from(start)
    while found >= 0 and len(lines) < MIDDLE_FAILURE_LINES:
        line_start = output.rfind("\n", start, found) + 1 or start
        line_end = output.find("\n", found, end)
        line_end = end if line_end < 0 else line_end
        line = output[line_start : min(line_end, line_start + _MIDDLE_LINE_CHARS)]
        spent += len(line) + 1
        if spent > max_chars:
            break
        lines.append(line)
        found = scanner.next_from(line_end + 1)
    return lines


class _FailureScanner:
    """Finds the next failure word (any case) in ``text[:end]``, one lowered chunk at a time.

    ``str.find`` on lowered text is many times faster than a case-blind regex; a chunk
    whose length lowering changes is searched with the regex.
    """

    def __init__(self, text: str, end: int) -> None:
        self.text = text
        self.end = end
        self.chunk_start = self.chunk_stop = 0
        self.low: str | None = None
        self.upcoming: dict[str, int] = {}

    def next_from(self, position: int) -> int:
        """Where the first failure word at or after ``position`` starts; -1 if none."""
        while position < self.end:
            if not self.chunk_start <= position < self.chunk_stop:
                self._load(position)
            found = self._in_chunk(position)
            if found >= 0:
                return found
            position = self.chunk_stop
        return -1

    def _load(self, position: int) -> None:
        self.chunk_start = position
        self.chunk_stop = min(position + _SCAN_CHUNK_CHARS, self.end)
        # The piece reaches a word's length past the chunk, so a word across the seam is found.
        piece = self.text[position : min(self.chunk_stop + _LONGEST_WORD - 1, self.end)]
        low = piece.lower()
        # Lowering keeps offsets unless a character expands ("İ" → "i̇"); then the regex reads the chunk.
        self.low = low if len(low) == len(piece) else None
        self.upcoming = dict.fromkeys(_FAILURE_WORDS, -1)

    def _in_chunk(self, position: int) -> int:
        limit = min(self.chunk_stop + _LONGEST_WORD - 1, self.end)
        if self.low is None:
            match = _FAILURE_WORD.search(self.text, position, limit)
            return match.start() if match is not None and match.start() < self.chunk_stop else -1
        offset = position - self.chunk_start
        for word, at in self.upcoming.items():
            if at < offset and at != -2:  # -2: the word does not occur again in this chunk
                at = self.low.find(word, offset)
                self.upcoming[word] = at if at >= 0 else -2
        found = min((at for at in self.upcoming.values() if at >= 0), default=-1)
        return self.chunk_start + found if 0 <= found < self.chunk_stop - self.chunk_start else -1
