"""Errors the runtime raises while running a session."""

from __future__ import annotations

from contextwright.errors import ContextwrightError, UsageError


class RoundLimitExceeded(ContextwrightError):
    """The run reached its hard cap on model rounds and was stopped."""


class EscalationRequired(ContextwrightError):
    """Pressure could not be relieved within the summary-depth cap: continue in a child run."""


class NothingToSend(UsageError):
    """A request was asked for while the conversation does not end with something to answer."""


class ToolCallUnknown(UsageError):
    """A tool result was given for a call the model never made, or already answered."""


class ArchiveFailed(ContextwrightError):
    """A manual compaction refused to run because its archive could not be written."""
