"""Small text helpers for the markdown formats."""

from __future__ import annotations

from collections.abc import Sequence


def trim_block(lines: Sequence[str], *, separators: frozenset[str] = frozenset()) -> str:
    """Join lines, dropping blank (or separator) lines at both ends, keeping inner ones."""
    start, end = 0, len(lines)
    while start < end and (not lines[start].strip() or lines[start].strip() in separators):
        start += 1
    while end > start and (not lines[end - 1].strip() or lines[end - 1].strip() in separators):
        end -= 1
    return "\n".join(lines[start:end])
