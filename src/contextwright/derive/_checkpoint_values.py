"""Checks for the plain values read back from a checkpoint body.

A checkpoint is read from storage that another process (or a person) may have changed, so every
value is checked for its type before it is trusted; a bad one rejects the whole checkpoint.
"""

from __future__ import annotations

from typing import Any

from contextwright.errors import CheckpointRejected


def checked_count(value: Any) -> int:
    """``value`` if it is a non-negative int (not a bool); else :class:`CheckpointRejected`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CheckpointRejected(f"expected a count, got {value!r}")
    return value


def checked_text(value: Any) -> str:
    """``value`` if it is a string; else :class:`CheckpointRejected`."""
    if not isinstance(value, str):
        raise CheckpointRejected(f"expected a string, got {type(value).__name__}")
    return value
