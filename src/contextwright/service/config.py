"""How a service instance is set up, in one value that also travels through the environment.

``uvicorn --workers N`` starts each worker by importing an app factory, so the
settings go to the workers as ``CONTEXTWRIGHT_SERVICE_*`` variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from contextwright.errors import UsageError
from contextwright.service.limits import RateLimit

_ENV = "CONTEXTWRIGHT_SERVICE_"


@dataclass(frozen=True, kw_only=True, slots=True)
class ServiceConfig:
    """The store, the size limit and the rate limits of one service."""

    store: str = "sqlite:///contextwright.db"
    """The store URL, as for the CLI: a SQLite file (default) or ``postgresql://...``."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest request body accepted; larger ones get a 413 before anything is read into the engine."""
    rate_limit: RateLimit = field(default_factory=RateLimit)
    """Token bucket per key, for keys that do not carry their own."""
    auth_failure_limit: RateLimit = field(default_factory=lambda: RateLimit(per_second=1.0, burst=20))
    """Token bucket per client address for requests without a valid key: each one costs a
    lookup in the store, so past the burst they get a 429 without one."""
    cache_events: int = 30_000
    """Events the sessions a worker keeps between requests may hold between them (a few KiB each):
    the bound on that cache's memory, however long sessions grow (it also keeps 256 sessions at most)."""
    console: bool = True
    """Serve the web console at ``/console``."""
    pool_size: int = 8
    """PostgreSQL connections per worker for the event log (the service tables get a quarter, at least 2).

    Size it so that workers x (pool_size + pool_size // 4 + 2 for leases) stays under the
    server's ``max_connections`` minus what other clients need."""

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024:
            raise UsageError(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        if self.cache_events < 0:
            raise UsageError(f"cache_events must be at least 0, not {self.cache_events}")
        if self.pool_size < 1:
            raise UsageError(f"pool_size must be at least 1, not {self.pool_size}")
        for limit in (self.rate_limit, self.auth_failure_limit):
            if not limit.per_second > 0 or limit.burst < 1:
                raise UsageError("a rate limit needs a rate above 0 and a burst of at least 1")

    def to_env(self) -> dict[str, str]:
        """The settings as environment variables for worker processes."""
        return {
            _ENV + "STORE": self.store,
            _ENV + "MAX_BODY_BYTES": str(self.max_body_bytes),
            _ENV + "RATE": repr(self.rate_limit.per_second),
            _ENV + "BURST": str(self.rate_limit.burst),
            _ENV + "AUTH_FAILURE_RATE": repr(self.auth_failure_limit.per_second),
            _ENV + "AUTH_FAILURE_BURST": str(self.auth_failure_limit.burst),
            _ENV + "CACHE_EVENTS": str(self.cache_events),
            _ENV + "CONSOLE": "1" if self.console else "0",
            _ENV + "POOL_SIZE": str(self.pool_size),
        }

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ServiceConfig:
        """Inverse of :meth:`to_env` (missing variables take the defaults)."""
        env = os.environ if env is None else env
        defaults = cls()
        try:
            return cls(
                store=env.get(_ENV + "STORE", defaults.store),
                max_body_bytes=int(env.get(_ENV + "MAX_BODY_BYTES", defaults.max_body_bytes)),
                rate_limit=RateLimit(
                    per_second=float(env.get(_ENV + "RATE", defaults.rate_limit.per_second)),
                    burst=int(env.get(_ENV + "BURST", defaults.rate_limit.burst)),
                ),
                auth_failure_limit=RateLimit(
                    per_second=float(env.get(_ENV + "AUTH_FAILURE_RATE", defaults.auth_failure_limit.per_second)),
                    burst=int(env.get(_ENV + "AUTH_FAILURE_BURST", defaults.auth_failure_limit.burst)),
                ),
                cache_events=int(env.get(_ENV + "CACHE_EVENTS", defaults.cache_events)),
                console=env.get(_ENV + "CONSOLE", "1") != "0",
                pool_size=int(env.get(_ENV + "POOL_SIZE", defaults.pool_size)),
            )
        except ValueError as exc:
            raise UsageError(f"bad {_ENV}* setting: {exc}") from exc
