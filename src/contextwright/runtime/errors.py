"""Errors the runtime raises while running a session."""

from __future__ import annotations

from contextwright.errors import (
    ArchiveFailed,
    ContextwrightError,
    EscalationRequired,
    OverflowNotRecovered,
    UsageError,
)

__all__ = [
    "ArchiveFailed",
    "EscalationRequired",
    "NothingToSend",
    "OverflowNotRecovered",
    "RoundLimitExceeded",
    "ToolCallUnknown",
]


class RoundLimitExceeded(ContextwrightError):
    """The run reached its hard cap on model rounds and was stopped."""


class NothingToSend(UsageError):
    """A request was asked for while the conversation does not end with something to answer."""


class ToolCallUnknown(UsageError):
    """A tool result was given for a call the model never made, or already answered."""
