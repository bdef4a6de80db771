"""The session internals the adapters use, in one place.

Adapters sit between a caller and the session and need a little more than the public
session API: appending their own bookkeeping events, recording usage a framework parsed
already, and the overflow recovery that ``send`` uses. If the runtime moves these, this
module is the one to change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextwright.events.envelope import Event
from contextwright.providers.usage import Usage
from contextwright.runtime.session import BuiltRequest, Session
from contextwright.runtime.spec import AgentSpec


def append(session: Session, payloads: Sequence[Any]) -> list[Event]:
    """Append events to the session's log (after reading its tail)."""
    return session._core.append(payloads)


def record_usage(session: Session, usage: Usage, *, model: str | None) -> list[Event]:
    """Record usage against the last built request (and tune the estimator), as ``record`` does."""
    return session._sender._record_usage(usage, model=model)


def after_send_error(session: Session, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
    """Translate a send error; on a first overflow relieve once and return the rebuilt request (as ``send`` does)."""
    return session._sender.after_send_error(exc, request, attempt)


def has_history(session: Session) -> bool:
    """True once the session's surface shows anything (a system note after that is an operator message)."""
    session._sync()
    return bool(session._core.surface().entries)


def set_agent(session: Session, agent: AgentSpec) -> None:
    """Take ``agent`` as the session's setup without an edit (its prefix is the one the session's plan holds)."""
    session._core.agent = agent
