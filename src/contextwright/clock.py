"""Time, injected. No other module in Contextwright reads the wall clock.

Every component that needs "now" takes a :class:`Clock`. Production uses
:class:`SystemClock`; tests use :class:`FixedClock`, which only moves when told to,
so that logs, requests and reports are identical on every run; replays use
:class:`TranscriptClock`, which follows the times a transcript recorded.
"""

from __future__ import annotations

import datetime as _dt
import time as _time
from typing import Protocol, runtime_checkable

UTC = _dt.UTC


@runtime_checkable
class Clock(Protocol):
    """A source of timezone-aware UTC datetimes."""

    def now(self) -> _dt.datetime:
        """Return the current time as an aware UTC datetime."""
        ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(_time.time(), tz=UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class FixedClock:
    """A clock that stands still until :meth:`advance` or :meth:`set` moves it.

    ``step`` makes every :meth:`now` call advance by that much afterwards, which
    is handy for giving each recorded event a distinct, predictable time.
    """

    def __init__(
        self,
        start: _dt.datetime | str = "2026-01-01T00:00:00+00:00",
        *,
        step: _dt.timedelta | float = 0,
    ) -> None:
        self._now = _coerce(start)
        self._step = step if isinstance(step, _dt.timedelta) else _dt.timedelta(seconds=step)

    def now(self) -> _dt.datetime:
        current = self._now
        self._now = current + self._step
        return current

    def advance(self, delta: _dt.timedelta | float) -> _dt.datetime:
        """Move forward by ``delta`` (a timedelta or seconds) and return the new time."""
        if not isinstance(delta, _dt.timedelta):
            delta = _dt.timedelta(seconds=delta)
        if delta < _dt.timedelta(0):
            raise ValueError("a FixedClock never moves backwards")
        self._now += delta
        return self._now

    def set(self, when: _dt.datetime | str) -> None:
        """Jump to ``when`` (never backwards)."""
        target = _coerce(when)
        if target < self._now:
            raise ValueError("a FixedClock never moves backwards")
        self._now = target

    def __repr__(self) -> str:
        return f"FixedClock({self._now.isoformat()!r})"


class TranscriptClock:
    """A clock that follows the times a recorded transcript gives, one millisecond per reading in between.

    Replays use it so that the engine sees the transcript's own pauses, as a live loop sees
    real ones (a pause longer than a provider's cache lifetime changes what relief costs).
    """

    def __init__(self, start: _dt.datetime | str) -> None:
        self._now = _coerce(start)
        self._step = _dt.timedelta(milliseconds=1)

    def now(self) -> _dt.datetime:
        """The current time; the next call is one millisecond later."""
        current = self._now
        self._now = current + self._step
        return current

    def restart(self, at: str | None) -> None:
        """Start a new transcript at its first recorded time (or where the previous one ended)."""
        if at is not None:
            self._now = parse_instant(at)

    def follow(self, at: str) -> None:
        """Move to a message's recorded time; times out of order never move it back."""
        when = parse_instant(at)
        if when > self._now:
            self._now = when

    def __repr__(self) -> str:
        return f"TranscriptClock({self._now.isoformat()!r})"


def format_instant(when: _dt.datetime) -> str:
    """Return the canonical text of an instant: UTC, ISO-8601, microseconds, ``Z``."""
    if when.tzinfo is None:
        raise ValueError("naive datetimes are ambiguous; give the clock a timezone")
    # isoformat writes the same text as strftime("%Y-%m-%dT%H:%M:%S.%fZ") at a fraction of the
    # cost, and pads years before 1000 to four digits, which strftime does not on every platform.
    if when.tzinfo is not UTC:
        when = when.astimezone(UTC)
    return when.isoformat(timespec="microseconds")[:-6] + "Z"


def parse_instant(text: str) -> _dt.datetime:
    """Parse the text written by :func:`format_instant` (or any ISO-8601 instant)."""
    when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        raise ValueError(f"instant {text!r} has no timezone")
    return when.astimezone(UTC)


def _coerce(value: _dt.datetime | str) -> _dt.datetime:
    when = parse_instant(value) if isinstance(value, str) else value
    if when.tzinfo is None:
        raise ValueError("naive datetimes are ambiguous; give the clock a timezone")
    return when.astimezone(UTC)
