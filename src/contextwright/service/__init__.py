"""The HTTP service (``[service]`` extra): sessions over HTTP with tenants and API keys, and a web console.

``create_app(ServiceConfig(store=...))`` returns the FastAPI application;
``contextwright serve`` runs it under uvicorn.
"""

from __future__ import annotations

from contextwright._optional import require

require("fastapi", extra="service", feature="the HTTP service")

from contextwright.service.app import create_app  # noqa: E402
from contextwright.service.config import ServiceConfig  # noqa: E402

__all__ = ["ServiceConfig", "create_app"]
