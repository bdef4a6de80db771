"""The service's records beside the event log: hashed API keys and the session registry.

Keys are ``cw_<key id>_<secret>``. Only the SHA-256 of the secret is stored; a fast
hash is enough because the secret is 256 random bits, not a password. The registry
maps a tenant's session id to its id in the log (``<tenant>/<session id>``, or the gateway's
own id for the runs it registers, see :mod:`contextwright.gateway.tenancy`) and keeps
the agent spec and model the session was opened with, so any worker can serve it.
"""

from __future__ import annotations

import abc
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextwright._optional import require
from contextwright.clock import Clock, SystemClock, format_instant
from contextwright.errors import SchemaTooNew, StorageError, UsageError
from contextwright.log import parse_store_url
from contextwright.log._errors import translating_psycopg, translating_sqlite
from contextwright.log._migrations import Migration, latest_version
from contextwright.log.base import validate_session_id
from contextwright.service import _migrations
from contextwright.service.errors import InvalidTenant, KeyNotFound, SessionExists

KEY_PREFIX = "cw"
_TENANT = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_KEY = re.compile(r"^cw_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
MAX_CLIENT_SESSION_ID = 128
"""Leaves room for the tenant prefix within the log's 200-character session ids."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiKey:
    """One API key as stored (never the secret)."""

    key_id: str
    tenant: str
    label: str
    created_at: str
    revoked_at: str | None = None
    rate_per_second: float | None = None
    """This key's token-bucket refill rate; None uses the service default."""
    burst: int | None = None
    """This key's bucket size; None uses the service default."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """Who is calling: the tenant and the key that proved it."""

    tenant: str
    key_id: str
    rate_per_second: float | None = None
    burst: int | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RegisteredSession:
    """A tenant's session: where its events live and what it was opened with."""

    tenant: str
    session_id: str
    log_session_id: str
    agent: str
    """Canonical JSON of the agent spec."""
    model: str
    """Canonical JSON of the resolved model."""
    spec_sha256: str
    created_at: str


def check_tenant(tenant: object) -> str:
    """The tenant name, or :class:`InvalidTenant`."""
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise InvalidTenant(
            f"tenant {tenant!r} must be 1-63 lowercase letters, digits and dashes, starting with a letter or digit"
        )
    return tenant


def log_session_id(tenant: str, session_id: str) -> str:
    """The session's id in the event log; a tenant name holds no slash, so the split is unambiguous."""
    return f"{check_tenant(tenant)}/{session_id}"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ServiceStore(abc.ABC):
    """API keys and the session registry; one implementation per backend."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SystemClock()

    # -- keys ----------------------------------------------------------------------

    def create_key(
        self, tenant: str, *, label: str = "", rate_per_second: float | None = None, burst: int | None = None
    ) -> tuple[ApiKey, str]:
        """Create a key for ``tenant``; return its record and the full key (shown once, never stored)."""
        check_tenant(tenant)
        if rate_per_second is not None and not rate_per_second > 0:
            raise UsageError("a key's rate must be above 0 requests per second")
        if burst is not None and burst < 1:
            raise UsageError("a key's burst must be at least 1 request")
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        record = ApiKey(
            key_id=key_id,
            tenant=tenant,
            label=label,
            created_at=format_instant(self.clock.now()),
            rate_per_second=rate_per_second,
            burst=burst,
        )
        self._execute(
            "INSERT INTO {p}cw_api_keys (key_id, tenant, secret_sha256, label, rate_per_second, burst, created_at, revoked_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
            (key_id, tenant, _digest(secret), label, rate_per_second, burst, record.created_at),
        )
        return record, f"{KEY_PREFIX}_{key_id}_{secret}"

    def keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of ``tenant`` when given), oldest first."""
        where, args = ("WHERE tenant = ?", (check_tenant(tenant),)) if tenant is not None else ("", ())
        rows = self._query(
            f"SELECT key_id, tenant, label, created_at, revoked_at, rate_per_second, burst FROM {{p}}cw_api_keys {where} "
            "ORDER BY created_at, key_id",
            args,
        )
        return [_key(row) for row in rows]

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke a key at once; revoking twice keeps the first time."""
        self._execute(
            "UPDATE {p}cw_api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
            (format_instant(self.clock.now()), key_id),
        )
        found = [k for k in self.keys() if k.key_id == key_id]
        if not found:
            raise KeyNotFound(f"no API key {key_id!r} in this store", key_id=key_id)
        return found[0]

    def authenticate(self, token: str) -> Principal | None:
        """The principal of a full key, or None when it is malformed, unknown or revoked."""
        match = _KEY.match(token)
        if match is None:
            return None
        key_id, secret = match.groups()
        rows = self._query(
            "SELECT tenant, secret_sha256, revoked_at, rate_per_second, burst FROM {p}cw_api_keys WHERE key_id = ?", (key_id,)
        )
        if not rows:
            return None
        tenant, digest, revoked_at, rate, burst = rows[0]
        # Constant-time comparison: the time taken must not tell how much of a guess was right.
        if revoked_at is not None or not hmac.compare_digest(digest, _digest(secret)):
            return None
        return Principal(tenant=tenant, key_id=key_id, rate_per_second=rate, burst=burst)

    # -- sessions ------------------------------------------------------------------

    def register_session(
        self, tenant: str, session_id: str, *, agent: str, model: str, spec_sha256: str, log_id: str | None = None
    ) -> tuple[RegisteredSession, bool]:
        """Register a session, or find the same one again; return it and whether it is new.

        The same id with another spec raises :class:`SessionExists`; an id the event log would
        refuse raises :class:`~contextwright.errors.InvalidSessionId`, before anything is written.
        ``log_id`` registers a session recorded under another log id (the gateway's runs);
        by default the log id is ``<tenant>/<session id>``.
        """
        log_id = log_id if log_id is not None else log_session_id(tenant, session_id)
        check_tenant(tenant)
        validate_session_id(log_id)
        record = RegisteredSession(
            tenant=tenant,
            session_id=session_id,
            log_session_id=log_id,
            agent=agent,
            model=model,
            spec_sha256=spec_sha256,
            created_at=format_instant(self.clock.now()),
        )
        inserted = self._insert_session(record)
        stored = self.session(tenant, session_id)
        if stored is None:
            raise StorageError(
                f"session {session_id!r} of tenant {tenant!r} was neither inserted nor found; its log id "
                f"{record.log_session_id!r} is held by another row"
            )
        if stored.spec_sha256 != spec_sha256:
            raise SessionExists(
                f"session {session_id!r} is already open with another agent spec or model",
                session_id=session_id,
            )
        return stored, inserted

    def session(self, tenant: str, session_id: str) -> RegisteredSession | None:
        """The tenant's session, or None."""
        rows = self._query(
            "SELECT tenant, session_id, log_session_id, agent, model, spec_sha256, created_at "
            "FROM {p}cw_service_sessions WHERE tenant = ? AND session_id = ?",
            (tenant, session_id),
        )
        return _session(rows[0]) if rows else None

    def sessions(self, tenant: str) -> list[RegisteredSession]:
        """The tenant's sessions, oldest first."""
        rows = self._query(
            "SELECT tenant, session_id, log_session_id, agent, model, spec_sha256, created_at "
            "FROM {p}cw_service_sessions WHERE tenant = ? ORDER BY created_at, session_id",
            (tenant,),
        )
        return [_session(row) for row in rows]

    def schema_version(self) -> int:
        """The greatest service migration applied to this store."""
        return int(self._query("SELECT MAX(version) FROM {p}cw_service_migrations", ())[0][0] or 0)

    def close(self) -> None:  # noqa: B027 - adapters with connections override it
        """Release connections."""

    def __enter__(self) -> ServiceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what adapters implement ---------------------------------------------------

    @abc.abstractmethod
    def _execute(self, sql: str, args: Sequence[Any]) -> int:
        """Run one statement in its own transaction; return the rows it changed."""

    @abc.abstractmethod
    def _query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Rows of one query."""

    def _insert_session(self, record: RegisteredSession) -> bool:
        changed = self._execute(
            "INSERT INTO {p}cw_service_sessions (tenant, session_id, log_session_id, agent, model, spec_sha256, created_at) "
            # No conflict target: the log id is unique too, and two workers inserting the same
            # session at once may collide on either key (PostgreSQL checks only a named target).
            # The log id is a function of (tenant, session_id), so both keys name the same session.
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                record.tenant,
                record.session_id,
                record.log_session_id,
                record.agent,
                record.model,
                record.spec_sha256,
                record.created_at,
            ),
        )
        return changed == 1

    def _pending(self, applied: set[int], migrations: tuple[Migration, ...], where: str) -> list[Migration]:
        latest = latest_version(migrations)
        if applied and max(applied) > latest:
            raise SchemaTooNew(f"{where} has service schema version {max(applied)}; this Contextwright knows up to {latest}")
        return [m for m in migrations if m.version not in applied]


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(
        key_id=row[0], tenant=row[1], label=row[2], created_at=row[3], revoked_at=row[4], rate_per_second=row[5], burst=row[6]
    )


def _session(row: Sequence[Any]) -> RegisteredSession:
    return RegisteredSession(
        tenant=row[0],
        session_id=row[1],
        log_session_id=row[2],
        agent=row[3],
        model=row[4],
        spec_sha256=row[5],
        created_at=row[6],
    )


class SQLiteServiceStore(ServiceStore):
    """The service tables in the store's SQLite file (one connection per thread, as the log does)."""

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock | None = None, busy_timeout: float = 30.0) -> None:
        super().__init__(clock=clock)
        self.path = Path(path)
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._migrate()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with translating_sqlite(f"opening {self.path}"):
                conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _migrate(self) -> None:
        with translating_sqlite(f"migrating the service tables of {self.path}"), self._transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS cw_service_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {row[0] for row in conn.execute("SELECT version FROM cw_service_migrations")}
            for migration in self._pending(applied, _migrations.SQLITE, str(self.path)):
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO cw_service_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, format_instant(self.clock.now())),
                )

    def _execute(self, sql: str, args: Sequence[Any]) -> int:
        with translating_sqlite("writing the service tables"), self._transaction() as conn:
            return conn.execute(sql.replace("{p}", ""), tuple(args)).rowcount

    def _query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        with translating_sqlite("reading the service tables"):
            return list(self._conn().execute(sql.replace("{p}", ""), tuple(args)).fetchall())

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()


class PostgresServiceStore(ServiceStore):
    """The service tables in the store's PostgreSQL schema (psycopg 3, ``[postgres]`` extra)."""

    def __init__(
        self, dsn: str, *, schema: str = "contextwright", clock: Clock | None = None, pool_size: int = 4, timeout: float = 10.0
    ) -> None:
        super().__init__(clock=clock)
        require("psycopg", extra="postgres", feature="the service on PostgreSQL")
        pool_module = require("psycopg_pool", extra="postgres", feature="the service on PostgreSQL")
        self.schema = schema
        self.dsn = dsn
        with translating_psycopg("connecting to PostgreSQL"):
            self._pool = pool_module.ConnectionPool(
                dsn, min_size=1, max_size=max(1, pool_size), timeout=timeout, kwargs={"autocommit": False}, open=False
            )
            self._pool.open(wait=True, timeout=timeout)
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    def _sql(self, sql: str) -> str:
        return sql.replace("{p}", f"{self.schema}.").replace("{schema}", self.schema).replace("?", "%s")

    def _migrate(self) -> None:
        with translating_psycopg("migrating the service tables"), self._pool.connection() as conn, conn.transaction():
            # The same advisory lock as the log's migrations: concurrent starts apply each step once.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (0x636F6E74,))
            conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {schema}"))
            conn.execute(
                self._sql(
                    "CREATE TABLE IF NOT EXISTS {p}cw_service_migrations "
                    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
                )
            )
            applied = {r[0] for r in conn.execute(self._sql("SELECT version FROM {p}cw_service_migrations"))}
            for migration in self._pending(applied, _migrations.POSTGRES, f"schema {self.schema!r}"):
                for statement in migration.statements:
                    conn.execute(self._sql(statement))
                conn.execute(
                    self._sql("INSERT INTO {p}cw_service_migrations (version, name, applied_at) VALUES (?, ?, ?)"),
                    (migration.version, migration.name, self.clock.now()),
                )

    def _execute(self, sql: str, args: Sequence[Any]) -> int:
        with translating_psycopg("writing the service tables"), self._pool.connection() as conn, conn.transaction():
            return int(conn.execute(self._sql(sql), tuple(args)).rowcount)

    def _query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        with translating_psycopg("reading the service tables"), self._pool.connection() as conn:
            rows = conn.execute(self._sql(sql), tuple(args)).fetchall()
            conn.rollback()
        return [tuple(r) for r in rows]

    def close(self) -> None:
        self._pool.close()


def open_service_store(url: str | os.PathLike[str], *, clock: Clock | None = None, pool_size: int = 4) -> ServiceStore:
    """The service tables of the store at ``url`` (the same URLs as :func:`contextwright.log.open_log`)."""
    backend, location, options = parse_store_url(os.fspath(url))
    if backend == "memory":
        raise UsageError("the service needs a store that outlives one process: use a SQLite file or postgresql://...")
    if backend == "sqlite":
        return SQLiteServiceStore(location, clock=clock)
    return PostgresServiceStore(location, clock=clock, schema=options.get("schema", "contextwright"), pool_size=pool_size)
