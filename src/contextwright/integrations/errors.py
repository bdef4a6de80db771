"""Errors the framework and client adapters raise.

::

    UsageError
    └── IntegrationError                     an adapter cannot do what it was asked
        ├── FrameworkSessionClosed (also RuntimeError)   the session was closed
        ├── ConflictingCacheMiddleware       another middleware also places cache markers
        ├── ConflictingContextMiddleware     another middleware rewrites the history the adapter records
        ├── HistoryRewritten                 the caller's history changes what is already recorded
        └── PrefixMismatch                   the caller's system prompt or tools differ from the pinned prefix
"""

from __future__ import annotations

from contextwright.errors import UsageError


class IntegrationError(UsageError):
    """An adapter was asked to do something it cannot do faithfully."""


class FrameworkSessionClosed(IntegrationError, RuntimeError):
    """The session was closed; it accepts no more reads or writes."""


class ConflictingCacheMiddleware(IntegrationError):
    """Another middleware places prompt-cache markers on requests the engine already marks."""


class ConflictingContextMiddleware(IntegrationError):
    """Another middleware rewrites the conversation the adapter records (LangChain's ``SummarizationMiddleware``)."""


class HistoryRewritten(IntegrationError):
    """The caller's message history differs from what the session already recorded."""


class PrefixMismatch(IntegrationError):
    """A drop-in caller passed a system prompt or tools that differ from the session's prefix.

    ``differences`` names each one (the tool, the side it is missing on, or the system text)."""

    differences: tuple[str, ...]
