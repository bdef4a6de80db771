"""The event envelope: what the log stores around every payload."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from contextwright.events.registry import coerce_payload


@dataclass(frozen=True, kw_only=True, slots=True)
class Event:
    """One stored event. ``seq`` is gapless per session, starting at 1."""

    session_id: str
    seq: int
    type: str
    payload: Any
    """The typed payload (a frozen dataclass from the catalogue)."""
    at: _dt.datetime
    """When the log accepted the event, from the log's injected clock (UTC)."""
    payload_sha256: str
    """Tagged SHA-256 of the payload's canonical JSON, as stored."""
    idempotency_key: str | None = None

    @property
    def ref(self) -> str:
        """A stable reference to this event: ``<session_id>#<seq>``."""
        return f"{self.session_id}#{self.seq}"


@dataclass(frozen=True, kw_only=True, slots=True)
class NewEvent:
    """An event to append: a typed payload and an optional idempotency key."""

    type: str
    payload: Any
    idempotency_key: str | None = None

    @classmethod
    def of(cls, payload: Any, *, idempotency_key: str | None = None) -> NewEvent:
        """Wrap a typed payload."""
        name, typed = coerce_payload(None, payload)
        return cls(type=name, payload=typed, idempotency_key=idempotency_key)
