"""Gateway sessions in the service's registry, under one tenant: the console and ``GET /v1/sessions`` list them.

The HTTP service lists and serves the sessions of its registry, per tenant. The gateway
registers each run it opens there, under the tenant of its configuration (``--tenant``,
``gateway`` by default), when the store holds the service's tables (the ``[service]``
extra is installed). A service on the same store then shows them to that tenant's API
keys like the sessions opened through its API: listed, inspected, in the console.

A run keeps its log id (``claude-code/<id>``, ``openai/<key>``, ``anon/<hash>``, ``...~2``),
which ``contextwright inspect`` and ``stats`` take. The service's id for it is that log
id with each ``/`` written ``:`` (a service session id holds no slash): ``claude-code:<id>``.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

from contextwright.canonical import canonical_json, content_hash
from contextwright.errors import ContextwrightError, MissingDependencyError, UsageError
from contextwright.models import ResolvedModel
from contextwright.runtime.spec import AgentSpec

logger = logging.getLogger("contextwright.gateway")

DEFAULT_TENANT = "gateway"
MAX_SERVICE_ID = 128
"""The service's longest client session id (``MAX_CLIENT_SESSION_ID``)."""


class _Store(Protocol):
    def register_session(
        self, tenant: str, session_id: str, *, agent: str, model: str, spec_sha256: str, log_id: str | None = None
    ) -> Any: ...

    def close(self) -> None: ...


def service_session_id(log_id: str) -> str:
    """The service's id for a run whose log id is ``log_id``: slashes written ``:``, within the service's length."""
    found = log_id.replace("/", ":")
    if len(found) <= MAX_SERVICE_ID:
        return found
    return found[: MAX_SERVICE_ID - 25] + "#" + content_hash(log_id).split(":", 1)[1][:24]


def agent_document(agent: AgentSpec) -> dict[str, Any]:
    """The agent as the service's registry keeps it (the body of ``POST /v1/sessions``, defaults spelled out)."""
    return {
        "policy": agent.policy,
        "instructions": agent.instructions,
        "tools": [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in agent.tools],
        "control_tools": agent.control_tools,
        "framing": agent.framing,
    }


class Registry:
    """Registers the gateway's runs under one tenant; a failure is logged, never raised."""

    def __init__(self, store: _Store, tenant: str) -> None:
        self.store = store
        self.tenant = tenant

    def register(self, log_id: str, agent: AgentSpec, model: ResolvedModel) -> None:
        """Register the run ``log_id`` (again: the same spec finds the same row)."""
        try:
            agent_json = canonical_json(agent_document(agent))
            model_json = canonical_json(model.to_dict())
            self.store.register_session(
                self.tenant,
                service_session_id(log_id),
                agent=agent_json,
                model=model_json,
                spec_sha256=content_hash([agent_json, model_json]),
                log_id=log_id,
            )
        except Exception as exc:
            logger.warning("gateway: session %s is not listed for tenant %s: %s", log_id, self.tenant, exc)

    def close(self) -> None:
        """Release the store's connections."""
        self.store.close()


def open_registry(url: str | os.PathLike[str], tenant: str) -> Registry | None:
    """The registry of the store at ``url``, or None when the store or the install has none (said in the log)."""
    try:
        from contextwright.service.store import check_tenant, open_service_store
    except MissingDependencyError:
        logger.warning(
            "gateway: sessions are not listed for the HTTP service (tenant %s): install contextwright[service]", tenant
        )
        return None
    check_tenant(tenant)
    try:
        return Registry(open_service_store(url), tenant)
    except UsageError:
        return None  # an in-memory store: no service can share it
    except ContextwrightError as exc:
        logger.warning("gateway: sessions are not listed for the HTTP service: %s", exc)
        return None
