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


class WireMismatch(UsageError):
    """The wire format chosen (or inferred from the SDK method) does not fit the session's model."""


class StreamingRequired(UsageError):
    """The output reserve is above what the SDK allows without streaming: use ``session.stream``."""


class ThinkingBudgetInvalid(UsageError):
    """A manual thinking budget the API would refuse: below 1,024 tokens, or not below the request's ``max_tokens``."""


class StreamIncomplete(ContextwrightError):
    """A stream ended without its final event; nothing was recorded as an answer and the request can be retried."""


class SummaryUnavailable(ContextwrightError):
    """A model-backed compactor has no summary to propose: its model call failed, timed out or gave nothing usable.

    ``reason`` is ``failed``, ``timeout``, ``empty`` or ``too_long``; the session adopts the
    extractive summary instead and records why (``context.compaction.rejected``)."""

    reason: str
