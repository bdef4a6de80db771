"""The gateway: Contextwright in front of agents people already run (the ``[gateway]`` extra).

``contextwright gateway --store agent.db --mode observe`` serves the providers' own
endpoints; a client pointed at it with one environment variable
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``OPENAI_API_BASE``) talks to its provider
as before, and each conversation is recorded as an engine session. One module per job:

* :mod:`~contextwright.gateway.app`: the HTTP app and its routing;
* :mod:`~contextwright.gateway.identity`: which session a request belongs to;
* :mod:`~contextwright.gateway.wires`: a request body read as a conversation, per wire;
* :mod:`~contextwright.gateway.reconcile`: an incoming history against the runs in the log;
* :mod:`~contextwright.gateway.recorder`: recording requests, answers and usage;
* :mod:`~contextwright.gateway.upstream`: forwarding, with the answer streamed through;
* :mod:`~contextwright.gateway.answers`: the answer rebuilt from the bytes that passed.
"""

from __future__ import annotations

from contextwright._optional import require

require("starlette", extra="gateway", feature="the gateway")
require("aiohttp", extra="gateway", feature="the gateway")

from contextwright.gateway.app import create_gateway_app  # noqa: E402
from contextwright.gateway.config import GatewayConfig  # noqa: E402

__all__ = ["GatewayConfig", "create_gateway_app"]
