"""Bounded views of oversized history items, so that no single input can outgrow every request.

The log keeps every message whole. When one item (a user message, the model's own
text, a tool call's arguments, a correction line) would take more than
:data:`ITEM_SHARE` of the history budget, the request shows its head, one marker
line and its tail instead, from the first request the item appears in (a view decided
later, when the window fills, would rewrite every cached block after it); the marker
names the event under which the whole text is kept, which ``context_read_artifact``
pages back in. Pinned items (the task statement, steering notes) are never compacted,
so relief can always make room around them: they are shown this way only as the last
resort, when nothing else gives way (``oversized_pinned``), since a bounded view is then
the only way a huge one leaves room for the rest of the session.

The view depends only on the text, the budget, the reference and the estimator, so
a rebuild from the log gives the same bytes. The runtime sizes views with the
uncorrected estimate: a view sized with the reconciled one would change size
whenever a provider report moved the correction factor, and with it every cached
block after it.
"""

from __future__ import annotations

from collections.abc import Callable

from contextwright.items.region_a import READ_TOOL_NAME

ITEM_SHARE = 0.25
"""The most of the history budget one item may take before it is shown bounded."""
MIN_ITEM_TOKENS = 256
MIN_VIEW_CHARS = 400
_HEAD_SHARE = 0.6
# Cheap first check: no estimator counts more than two tokens per character.
_MAX_TOKENS_PER_CHAR = 2


def item_cap(history_tokens: int) -> int:
    """The most tokens one history item may take in a request with ``history_tokens`` of history budget."""
    return max(MIN_ITEM_TOKENS, int(history_tokens * ITEM_SHARE))


def bounded_view(text: str, *, cap_tokens: int, estimate: Callable[[str], int], ref: str | None) -> str:
    """``text`` itself when it fits ``cap_tokens``; else its head, a marker and its tail.

    The marker names the read tool with ``ref``; with no ``ref`` (the prefix pins no read tool, or
    the text has no event of its own) it says only that the whole text is kept."""
    if len(text) * _MAX_TOKENS_PER_CHAR <= cap_tokens or estimate(text) <= cap_tokens:
        return text
    room = cap_tokens * 3
    while True:
        view = _cut(text, room, ref)
        if room <= MIN_VIEW_CHARS or estimate(view) <= cap_tokens:
            return view
        room //= 2


def _cut(text: str, room: int, ref: str | None) -> str:
    head = int(room * _HEAD_SHARE)
    tail = max(0, room - head)
    omitted = len(text) - head - tail
    where = f"; the whole text: {READ_TOOL_NAME} ref={ref}" if ref else "; the whole text is kept in the log"
    marker = f"[... {omitted:,} of {len(text):,} characters not shown here{where} ...]"
    return f"{text[:head]}\n{marker}\n{text[len(text) - tail :] if tail else ''}"
