"""Per-key token buckets.

Each worker process keeps its own buckets: a limit protects the process that
enforces it, and nothing about a session's correctness depends on them. With N
workers behind one address a key can reach N times its rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class RateLimit:
    """A token bucket's shape: ``burst`` requests at once, refilled at ``per_second``."""

    per_second: float = 20.0
    burst: int = 60


class RateLimiter:
    """Token buckets by key id, refilled continuously from an injected monotonic clock."""

    def __init__(self, default: RateLimit, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.default = default
        self._monotonic = monotonic
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str, limit: RateLimit | None = None) -> float:
        """Take one token for ``key_id``; return 0 when allowed, else the seconds until one is free."""
        shape = limit or self.default
        now = self._monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(shape.burst), now))
            tokens = min(float(shape.burst), tokens + (now - last) * shape.per_second)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / shape.per_second


def retry_after(seconds: float) -> str:
    """A Retry-After header value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))
