"""``contextwright serve``: the HTTP service and its web console under uvicorn."""

from __future__ import annotations

import os

import typer

from contextwright.cli._common import console, friendly_errors
from contextwright.cli._keys import STORE_OPTION
from contextwright.cli._store import NewStore, check_reachable, describe_store


def serve(
    store: str = STORE_OPTION,
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8700, "--port", help="Port to listen on."),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes (each serves any session)."),
    max_body_bytes: int = typer.Option(4 * 1024 * 1024, "--max-body-bytes", help="Largest request body; larger ones get 413."),
    rate: float = typer.Option(20.0, "--rate", help="Default requests per second per key (token bucket refill)."),
    burst: int = typer.Option(60, "--burst", help="Default burst per key (token bucket size)."),
    pool_size: int = typer.Option(
        8, "--pool-size", min=1, help="PostgreSQL connections per worker for the log (keep workers x pool under max_connections)."
    ),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn's log level."),
) -> None:
    """Serve sessions over HTTP (/v1, OpenAPI at /openapi.json) and the console (/console)."""
    from contextwright._optional import require

    with friendly_errors():
        uvicorn = require("uvicorn", extra="service", feature="contextwright serve")
        require("fastapi", extra="service", feature="contextwright serve")
        from contextwright.service.config import ServiceConfig
        from contextwright.service.limits import RateLimit
        from contextwright.service.store import open_service_store

        config = ServiceConfig(
            store=store,
            max_body_bytes=max_body_bytes,
            rate_limit=RateLimit(per_second=rate, burst=burst),
            pool_size=pool_size,
        )
        # Migrate once here, so N workers starting together find the tables ready.
        from contextwright.log import open_log

        check_reachable(store)  # one line with the cause, not the pool's retries
        new = NewStore(store)
        open_log(store).close()
        new.announce()
        with open_service_store(store) as keys:
            no_keys = not keys.keys()
    os.environ.update(config.to_env())
    # Keys live in the store: name it, so a key created in another one is not a mystery.
    console.print(f"Store: {describe_store(store)}", markup=False, highlight=False)
    if no_keys:
        console.print(
            f"No API keys yet: create one with [bold]contextwright keys create TENANT --store {store}[/]", highlight=False
        )
    console.print(
        f"Contextwright on http://{host}:{port}  (console: /console, API: /v1, OpenAPI: /openapi.json)", highlight=False
    )
    uvicorn.run(
        "contextwright.service.app:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
    )
