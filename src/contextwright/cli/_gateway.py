"""``contextwright gateway``: the providers' own endpoints on a local port, conversations recorded on the way."""

from __future__ import annotations

import ctypes
import gc
import os
import platform

import typer

from contextwright.cli._common import console, friendly_errors
from contextwright.cli._store import STORE_HELP, NewStore, check_reachable, describe_store

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The service's default body limit, the same for the gateway (``gateway.config`` holds it too, behind its extra)."""
ANSWER_WAIT = 15.0
"""``GatewayConfig.answer_wait``'s default (``gateway.config`` holds it too, behind its extra)."""
YOUNG_COLLECTION_THRESHOLD = 50_000
"""Net new containers between two collections of the youngest generation in the gateway's process (Python's default is 700)."""
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's <malloc.h>
HEAP_SETTINGS = {_M_MMAP_THRESHOLD: 8 << 20, _M_TRIM_THRESHOLD: 32 << 20, _M_TOP_PAD: 8 << 20}
"""glibc ``mallopt`` settings of the gateway's process (see :func:`keep_heap_pages`)."""


def gateway(
    store: str = typer.Option("sqlite:///contextwright.db", "--store", help=STORE_HELP),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (loopback by default; set --gateway-key before opening it wider)."
    ),
    port: int = typer.Option(8787, "--port", help="Port to listen on."),
    mode: str = typer.Option(
        "manage",
        "--mode",
        help="observe: requests and answers pass unchanged and are recorded. manage: recorded the same way, and the "
        "engine's request goes upstream instead of the client's.",
    ),
    anthropic_upstream: str = typer.Option(
        "https://api.anthropic.com", "--anthropic-upstream", help="Where Anthropic requests go."
    ),
    openai_upstream: str = typer.Option("https://api.openai.com", "--openai-upstream", help="Where OpenAI requests go."),
    gateway_key: str | None = typer.Option(
        None,
        "--gateway-key",
        envvar="CONTEXTWRIGHT_GATEWAY_KEY",
        help="Require this key in the x-contextwright-key header of every request (for a gateway others reach).",
    ),
    max_body_bytes: int = typer.Option(
        DEFAULT_MAX_BODY_BYTES, "--max-body-bytes", help="Largest request body; larger ones get 413."
    ),
    answer_wait: float = typer.Option(
        ANSWER_WAIT,
        "--answer-wait",
        help="Seconds a worker waits for another worker on the store to record an answer the client already holds.",
    ),
    tenant: str = typer.Option(
        "gateway",
        "--tenant",
        help="The HTTP service's tenant whose API keys see these sessions (GET /v1/sessions, the console) when "
        "`contextwright serve` runs on the same store; the service names each one by its log id with / written : "
        "(claude-code:<id>). Needs the service extra here.",
    ),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn's log level."),
) -> None:
    """Serve the Anthropic and OpenAI APIs locally: point a client's base URL here and its sessions are recorded.

    Claude Code: ANTHROPIC_BASE_URL=http://127.0.0.1:8787. Codex: a model provider with
    base_url = "http://127.0.0.1:8787/v1". aider: OPENAI_API_BASE=http://127.0.0.1:8787/v1.
    The client's own API key goes to the provider and is never stored. A service on the same
    store lists the sessions to the keys of --tenant (contextwright keys create gateway).
    """
    from contextwright._optional import require

    with friendly_errors():
        uvicorn = require("uvicorn", extra="gateway", feature="contextwright gateway")
        from contextwright.gateway import GatewayConfig, create_gateway_app
        from contextwright.log import open_log

        config = GatewayConfig(
            store=store,
            mode=mode,  # type: ignore[arg-type]  # checked by GatewayConfig, which names the choices
            anthropic_upstream=anthropic_upstream,
            openai_upstream=openai_upstream,
            gateway_key=gateway_key,
            max_body_bytes=max_body_bytes,
            answer_wait=answer_wait,
            tenant=tenant,
        )
        check_reachable(store)
        new = NewStore(store)
        log = open_log(store)
        new.announce()
        app = create_gateway_app(config, log=log)
    console.print(f"Store: {describe_store(store)}", markup=False, highlight=False)
    if host not in ("127.0.0.1", "localhost", "::1") and gateway_key is None:
        console.print("[yellow]Listening beyond loopback without --gateway-key: anyone who reaches the port can use it.[/]")
    console.print(
        f"Contextwright gateway ({mode}) on http://{host}:{port}  →  Anthropic {anthropic_upstream}, OpenAI {openai_upstream}",
        markup=False,
        highlight=False,
    )
    _fewer_young_collections()
    keep_heap_pages()
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        log.close()


def _fewer_young_collections() -> None:
    """Collect the youngest generation after :data:`YOUNG_COLLECTION_THRESHOLD` new containers instead of 700.

    A client's request is read whole (a long session's body holds thousands of lists and objects, alive
    until its answer starts): at 700 the collector walks them again and again while the request waits,
    and moves them to the older generations, whose passes then grow. Most of them are freed by their
    reference counts once the answer has gone, before a pass at this threshold ever sees them."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, middle, old)


def keep_heap_pages() -> bool:
    """Keep up to 32 MiB of freed heap mapped between requests (glibc only); True when the settings were applied.

    Each request allocates and frees a body's worth of strings (a long session's body is megabytes): by
    default glibc hands the top of the heap back to the system after each one, and the next request
    faults the same pages in again. At 100 messages (0.76 MB) reading a body took 0.75 ms with the
    defaults and 0.51 ms with these, in one process, three runs each. Skipped where the C library is not
    glibc, or where the environment already sets glibc's own ``MALLOC_*_`` tunables or ``GLIBC_TUNABLES`` (the user's choice)."""
    if platform.libc_ver()[0] != "glibc" or any(name.startswith("MALLOC_") or name == "GLIBC_TUNABLES" for name in os.environ):
        return False
    try:
        libc = ctypes.CDLL(None)
        return all(libc.mallopt(option, value) == 1 for option, value in HEAP_SETTINGS.items())
    except (OSError, AttributeError):
        return False
