"""Errors the runtime raises while running a session (a wire's SDK rules raise theirs from :mod:`contextwright.providers.wire`)."""

from __future__ import annotations

from contextwright.errors import (
    ArchiveFailed,
    ContextwrightError,
    EscalationRequired,
    OverflowNotRecovered,
    UsageError,
)
from contextwright.providers.wire import StreamingRequired, ThinkingBudgetInvalid, WireMismatch

__all__ = [
    "ArchiveFailed",
    "EscalationRequired",
    "NothingToSend",
    "OverflowNotRecovered",
    "RoundLimitExceeded",
    "StreamIncomplete",
    "StreamingRequired",
    "SummaryUnavailable",
    "ThinkingBudgetInvalid",
    "ToolCallUnknown",
    "WireMismatch",
]


class RoundLimitExceeded(ContextwrightError):
    """The run reached its hard cap on model rounds and was stopped."""


class NothingToSend(UsageError):
    """A request was asked for while the conversation does not end with something to answer."""


class ToolCallUnknown(UsageError):
    """A tool result was given for a call the model never made, or already answered."""


class StreamIncomplete(ContextwrightError):
    """A stream ended without its final event; nothing was recorded as an answer and the request can be retried."""


class SummaryUnavailable(ContextwrightError):
    """A model-backed compactor has no summary to propose: its model call failed, timed out or gave nothing usable.

    ``reason`` is ``failed``, ``timeout``, ``empty`` or ``too_long``; the session adopts the
    extractive summary instead and records why (``context.compaction.rejected``)."""

    reason: str
