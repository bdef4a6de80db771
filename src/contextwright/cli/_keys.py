"""``contextwright keys``: API keys of the HTTP service (create, list, revoke), stored hashed in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from contextwright.cli._common import console, friendly_errors
from contextwright.cli._store import STORE_FORMS, NewStore, check_reachable, must_exist

if TYPE_CHECKING:
    from contextwright.service.store import ServiceStore

DEFAULT_STORE = "sqlite:///contextwright.db"
STORE_OPTION = typer.Option(
    DEFAULT_STORE,
    "--store",
    envvar="CONTEXTWRIGHT_STORE",
    help=f"The service's store, the same for 'serve' and 'keys': {STORE_FORMS}. "
    "The default is contextwright.db in the current directory.",
)

app = typer.Typer(help="API keys of the HTTP service: one tenant per key, stored hashed.", no_args_is_help=True)


def _store(url: str, *, create: bool = False) -> ServiceStore:
    """The service tables of the store at ``url``; only ``create`` makes a store that is not there."""
    from contextwright.log import open_log
    from contextwright.service.store import open_service_store

    # One quick connection first: an unreachable server is one line with its cause, not the pool's retries.
    check_reachable(url)
    if not create:
        must_exist(url, why=": keys live in the store 'serve' uses; name it with --store (or CONTEXTWRIGHT_STORE)")
    new = NewStore(url)
    # Opening the log first creates and migrates the store, so a key can come before the first serve.
    open_log(url, create=create).close()
    new.announce()
    return open_service_store(url)


@app.command("create")
def create(
    tenant: str = typer.Argument(..., help="The tenant the key acts for (lowercase letters, digits, dashes)."),
    store: str = STORE_OPTION,
    label: str = typer.Option("", "--label", help="A note to recognise the key by in 'keys list'."),
    rate: float | None = typer.Option(None, "--rate", help="This key's requests per second (default: the service's)."),
    burst: int | None = typer.Option(None, "--burst", help="This key's burst size (default: the service's)."),
) -> None:
    """Create a key and print it once: only its hash is stored."""
    with friendly_errors():
        keys = _store(store, create=True)
        try:
            record, key = keys.create_key(tenant, label=label, rate_per_second=rate, burst=burst)
        finally:
            keys.close()
    console.print(f"[green]✓[/] key {record.key_id} for tenant {record.tenant}; it is shown only now:", highlight=False)
    typer.echo(key)


@app.command("list")
def list_keys(
    store: str = STORE_OPTION,
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's keys."),
) -> None:
    """List keys (ids, tenants, state); secrets are never shown again."""
    with friendly_errors():
        keys = _store(store)
        try:
            rows = keys.keys(tenant)
        finally:
            keys.close()
    table = Table("key id", "tenant", "label", "created", "state", "rate/s", "burst", title="API keys")
    for k in rows:
        state = f"revoked {k.revoked_at}" if k.revoked_at else "active"
        table.add_row(
            k.key_id, k.tenant, k.label, k.created_at, state, str(k.rate_per_second or "default"), str(k.burst or "default")
        )
    console.print(table)


@app.command("revoke")
def revoke(
    key_id: str = typer.Argument(..., help="The key id (from 'keys list', or the part after 'cw_' in the key)."),
    store: str = STORE_OPTION,
) -> None:
    """Revoke a key: every request with it is refused from now on."""
    with friendly_errors():
        keys = _store(store)
        try:
            record = keys.revoke_key(key_id)
        finally:
            keys.close()
    console.print(f"[green]✓[/] key {record.key_id} of tenant {record.tenant} revoked at {record.revoked_at}", highlight=False)
