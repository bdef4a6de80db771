"""A real service on loopback per test module, on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from contextwright.runtime import AgentSpec, Tool

NEEDS = 'the service needs its extras: pip install "contextwright[service,client]"'
"""Each test module here starts with ``pytest.importorskip`` of what it needs (a conftest cannot skip)."""

MAX_BODY = 64 * 1024
"""The body limit of the test services: small, so 413s are cheap to provoke."""

AGENT = AgentSpec(
    policy="You are a careful coding agent. Never push to main.",
    instructions="Run the tests before you say something works.",
    tools=[Tool("run_tests", "Run the test suite", {"type": "object", "properties": {}})],
)


@dataclass
class Running:
    """A service under test: its URL, its app (for the store), and a key per tenant."""

    url: str
    app: Any
    store_url: str

    def key(self, tenant: str, **options: Any) -> str:
        return self.app.state.store.create_key(tenant, **options)[1]


def _store_url(backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('service')}/store.db"
        return
    dsn = request.getfixturevalue("postgres_dsn")
    schema = f"cw_svc_{uuid.uuid4().hex[:12]}"
    yield f"{dsn}?schema={schema}"
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One uvicorn server for the module, on the backend of the parameter."""
    from contextwright.service import ServiceConfig, create_app
    from contextwright.service.limits import RateLimit
    from contextwright.testing.service import serving

    urls = _store_url(request.param, tmp_path_factory, request)
    store_url = next(urls)
    generous = RateLimit(per_second=1000, burst=1000)
    config = ServiceConfig(store=store_url, max_body_bytes=MAX_BODY, rate_limit=generous, auth_failure_limit=generous)
    app = create_app(config)
    with serving(app) as url:
        yield Running(url=url, app=app, store_url=store_url)
    next(urls, None)
