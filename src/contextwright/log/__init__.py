"""Event logs: the port, its adapters, and opening a store by URL.

``open_log(url)`` accepts ``memory://``, ``sqlite:///relative/or/absolute.db``
(``sqlite:////abs/path.db`` also works), a plain file path, and
``postgresql://user@host:port/db?schema=name``.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from contextwright.clock import Clock
from contextwright.errors import UsageError
from contextwright.log.base import AsyncEventLog, EventLog
from contextwright.log.memory import InMemoryEventLog

__all__ = ["AsyncEventLog", "EventLog", "InMemoryEventLog", "open_log", "parse_store_url"]


def parse_store_url(url: str) -> tuple[str, str, dict[str, str]]:
    """Split a store URL into (backend, location, options); raise UsageError if unknown."""
    if not isinstance(url, str) or not url.strip():
        raise UsageError("a store URL is required, for example sqlite:///agent.db")
    if url.startswith("memory://") or url == "memory":
        return "memory", "", {}
    if url.startswith("sqlite://"):
        rest = url[len("sqlite://") :]
        if not rest.startswith("/"):
            raise UsageError(f"bad SQLite URL {url!r}: write sqlite:///path/to/file.db")
        return "sqlite", rest[1:], {}
    if url.startswith(("postgresql://", "postgres://")):
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        options = {"schema": query.pop("schema")} if "schema" in query else {}
        return "postgres", urlunsplit(parts._replace(query=urlencode(query))), options
    if "://" in url:
        scheme = url.split("://", 1)[0]
        raise UsageError(f"unknown store URL scheme {scheme!r}: use sqlite:///file.db, postgresql://... or memory://")
    return "sqlite", url, {}


def open_log(
    url: str | os.PathLike[str],
    *,
    clock: Clock | None = None,
    create: bool = True,
    read_only: bool = False,
    pool_size: int | None = None,
) -> EventLog:
    """Open (and migrate) the event log named by ``url``; ``read_only`` opens a SQLite file without writing to it.

    ``pool_size`` caps a PostgreSQL log's connections (one per thread in an operation at once).
    """
    backend, location, options = parse_store_url(os.fspath(url))
    if backend == "memory":
        return InMemoryEventLog(clock=clock)
    if backend == "sqlite":
        from contextwright.log.sqlite import SQLiteEventLog

        return SQLiteEventLog(location, clock=clock, create=create, read_only=read_only)
    from contextwright.log.postgres import PostgresEventLog

    return PostgresEventLog(
        location, schema=options.get("schema", "contextwright"), clock=clock, create=create, pool_size=pool_size or 4
    )
