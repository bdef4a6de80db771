"""Per-key token buckets.

Each worker process keeps its own buckets: a limit protects the process that
enforces it, and nothing about a session's correctness depends on them. With N
workers behind one address a key can reach N times its rate.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class RateLimit:
    """A token bucket's shape: ``burst`` requests at once, refilled at ``per_second``."""

    per_second: float = 20.0
    burst: int = 60


class RateLimiter:
    """Token buckets by key, refilled continuously from an injected monotonic clock.

    At most ``max_keys`` buckets are kept, the least recently used dropped first: keys
    come from clients (key ids, addresses), and their number must not grow the worker
    without bound. A dropped bucket starts full again, which can only be more lenient.
    """

    def __init__(self, default: RateLimit, *, monotonic: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        self.default = default
        self.max_keys = max_keys
        self._monotonic = monotonic
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key_id: str, limit: RateLimit | None = None) -> float:
        """Take one token for ``key_id``; return 0 when allowed, else the seconds until one is free."""
        return self._use(key_id, limit, take=True)

    def wait(self, key_id: str, limit: RateLimit | None = None) -> float:
        """The seconds until ``key_id`` has a token (0 when it has one now), taking none."""
        return self._use(key_id, limit, take=False)

    def _use(self, key_id: str, limit: RateLimit | None, *, take: bool) -> float:
        shape = limit or self.default
        now = self._monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(shape.burst), now))
            tokens = min(float(shape.burst), tokens + (now - last) * shape.per_second)
            if not take and key_id not in self._buckets:
                return 0.0
            wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) / shape.per_second
            if take and wait == 0.0:
                tokens -= 1.0
            self._buckets[key_id] = (tokens, now)
            self._buckets.move_to_end(key_id)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return wait

    def __len__(self) -> int:
        """How many buckets are kept."""
        return len(self._buckets)


def retry_after(seconds: float) -> str:
    """A Retry-After header value: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(seconds)))
