"""How a gateway is set up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from contextwright.errors import UsageError

Mode = Literal["observe", "manage"]
MODES: tuple[Mode, ...] = ("observe", "manage")

ANTHROPIC_API = "https://api.anthropic.com"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The service's default body limit (``ServiceConfig.max_body_bytes``), the same for the gateway."""
OPENAI_API = "https://api.openai.com"
ANSWER_WAIT = 15.0
"""The default of :attr:`GatewayConfig.answer_wait`: an answer is recorded milliseconds after its last
byte, so this only runs out when that worker died in between (or the store stalls for that long)."""
_TENANT = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
"""A service tenant's name (``contextwright.service.store`` checks the same)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GatewayConfig:
    """The store, the mode, the providers' addresses and the limits of one gateway."""

    store: str = "sqlite:///contextwright.db"
    """Where sessions are recorded: a SQLite file or ``postgresql://...``, as for every command."""
    mode: Mode = "manage"
    """``observe``: requests and answers pass unchanged and are recorded. ``manage``: the same
    recording, and the engine builds what goes upstream from the log (its request for the
    client's wire, with the client's other options)."""
    anthropic_upstream: str = ANTHROPIC_API
    """Where Anthropic requests go (``/v1/messages``, ``count_tokens`` and the rest of the API)."""
    openai_upstream: str = OPENAI_API
    """Where OpenAI requests go (``/v1/responses``, ``/v1/chat/completions`` and the rest); a base ending
    in ``/v1`` works too."""
    gateway_key: str | None = None
    """When set, every request must carry it in ``x-contextwright-key`` (for a gateway others reach)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Largest request body accepted (the service's limit); larger ones get 413 before anything is read."""
    upstream_timeout: float = 600.0
    """Seconds to wait for the provider to connect, or between two chunks of its answer."""
    answer_wait: float = ANSWER_WAIT
    """Seconds a worker waits for another worker on the store to record an answer the client already
    holds, before it records that answer from the client's copy (see :mod:`~contextwright.gateway.workers`)."""
    tenant: str = "gateway"
    """The HTTP service's tenant the sessions are listed under, when a service shares the store: that
    tenant's API keys see them in ``GET /v1/sessions`` and the console (see :mod:`~contextwright.gateway.tenancy`)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"mode must be observe or manage, not {self.mode!r}")
        if not self.answer_wait >= 0:
            raise UsageError(f"answer_wait must be a number of seconds >= 0, not {self.answer_wait!r}")
        if self.max_body_bytes < 1024:
            raise UsageError(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        for name in ("anthropic_upstream", "openai_upstream"):
            url = getattr(self, name)
            if not url.startswith(("http://", "https://")):
                raise UsageError(f"{name} must be an http:// or https:// URL, not {url!r}")
        if not _TENANT.match(self.tenant):
            raise UsageError(f"tenant must be 1-63 lowercase letters, digits and dashes, not {self.tenant!r}")
        if self.gateway_key is not None and len(self.gateway_key) < 16:
            raise UsageError("a gateway key must be at least 16 characters long")
