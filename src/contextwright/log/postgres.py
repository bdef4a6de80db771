"""PostgreSQL event log (psycopg 3, ``[postgres]`` extra): for many workers and hosts.

* A row lock on the session (``SELECT ... FOR UPDATE`` on ``cw_sessions``)
  serialises appends to one session; appends to different sessions run in
  parallel. Losers of a race wait, then see the new last seq and get a
  ``SeqConflict`` (https://www.postgresql.org/docs/current/explicit-locking.html).
* Payloads are stored as ``TEXT`` holding canonical JSON, not ``jsonb``, which
  would reorder keys and normalise numbers and so break byte-exact replay.
* Tables live in their own schema (default ``contextwright``); migrations take a
  transaction-level advisory lock so concurrent openers apply them once.
* A connection pool makes one log object safe to share between threads.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import Any

from contextwright._optional import require
from contextwright.clock import UTC, Clock
from contextwright.errors import NotAStore, SchemaTooNew, SeqConflict, UsageError
from contextwright.log import _migrations
from contextwright.log._errors import translating_psycopg
from contextwright.log.base import EventLog, PreparedEvent, StoredRow, resolve_replay

_COLUMNS = "session_id, seq, type, payload, payload_sha256, at, idempotency_key"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Any fixed number works; it only has to be the same for every migrating process.
_MIGRATION_LOCK = 0x636F6E74


class PostgresEventLog(EventLog):
    """Event log in PostgreSQL tables under one schema (see the module docstring)."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "contextwright",
        clock: Clock | None = None,
        create: bool = True,
        pool_size: int = 4,
        connect_timeout: float = 10.0,
    ) -> None:
        super().__init__(clock=clock)
        require("psycopg", extra="postgres", feature="the PostgreSQL event log")
        pool_module = require("psycopg_pool", extra="postgres", feature="the PostgreSQL event log")
        if not _SCHEMA_NAME.match(schema):
            raise UsageError(f"schema name {schema!r} must be lowercase letters, digits and underscores")
        self.schema = schema
        self.dsn = dsn
        with translating_psycopg("connecting to PostgreSQL"):
            self._pool = pool_module.ConnectionPool(
                dsn,
                min_size=1,
                max_size=max(1, pool_size),
                timeout=connect_timeout,
                kwargs={"autocommit": False},
                open=False,
            )
            self._pool.open(wait=True, timeout=connect_timeout)
        try:
            self._migrate(create=create)
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        self._pool.close()

    def _sql(self, text: str) -> str:
        return text.replace("{schema}", self.schema)

    # -- schema ---------------------------------------------------------------

    def _migrate(self, *, create: bool) -> None:
        with translating_psycopg("migrating the PostgreSQL schema"), self._pool.connection() as conn:
            with conn.transaction():
                exists = conn.execute(
                    "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'cw_migrations'",
                    (self.schema,),
                ).fetchone()
                if not exists and not create:
                    raise NotAStore(f"schema {self.schema!r} holds no Contextwright store", schema=self.schema)
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {schema}"))
                conn.execute(
                    self._sql(
                        "CREATE TABLE IF NOT EXISTS {schema}.cw_migrations "
                        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
                    )
                )
                applied = {r[0] for r in conn.execute(self._sql("SELECT version FROM {schema}.cw_migrations"))}
                latest = _migrations.latest_version(_migrations.POSTGRES)
                if applied and max(applied) > latest:
                    raise SchemaTooNew(
                        f"schema {self.schema!r} has version {max(applied)}; this Contextwright knows up to {latest}",
                        schema=self.schema,
                    )
                for migration in _migrations.POSTGRES:
                    if migration.version in applied:
                        continue
                    for statement in migration.statements:
                        conn.execute(self._sql(statement))
                    conn.execute(
                        self._sql("INSERT INTO {schema}.cw_migrations (version, name, applied_at) VALUES (%s, %s, %s)"),
                        (migration.version, migration.name, self.clock.now()),
                    )

    def schema_version(self) -> int:
        """The greatest migration version applied to this store."""
        with translating_psycopg("reading the schema version"), self._pool.connection() as conn:
            row = conn.execute(self._sql("SELECT MAX(version) FROM {schema}.cw_migrations")).fetchone()
        return int(row[0] or 0)

    # -- the port -------------------------------------------------------------

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[StoredRow]:
        with translating_psycopg(f"appending to session {session_id!r}"), self._pool.connection() as conn:
            with conn.transaction():
                return self._append_locked(conn, session_id, events, expected_seq)

    def _append_locked(self, conn: Any, session_id: str, events: Sequence[PreparedEvent], expected_seq: int) -> list[StoredRow]:
        conn.execute(
            self._sql("INSERT INTO {schema}.cw_sessions (session_id, last_seq) VALUES (%s, 0) ON CONFLICT DO NOTHING"),
            (session_id,),
        )
        actual = conn.execute(
            self._sql("SELECT last_seq FROM {schema}.cw_sessions WHERE session_id = %s FOR UPDATE"),
            (session_id,),
        ).fetchone()[0]
        keys = [e.idempotency_key for e in events if e.idempotency_key is not None]
        if keys:
            found = conn.execute(
                self._sql(f"SELECT {_COLUMNS} FROM {{schema}}.cw_events WHERE session_id = %s AND idempotency_key = ANY(%s)"),
                (session_id, keys),
            ).fetchall()
            replay = resolve_replay(session_id, events, {r[6]: _row(r) for r in found})
            if replay is not None:
                return replay
        if actual != expected_seq:
            raise SeqConflict(session_id, expected_seq=expected_seq, actual_seq=int(actual))
        at = _microseconds(self.clock.now())
        stored = [
            StoredRow(
                session_id=session_id,
                seq=expected_seq + offset,
                type=e.type,
                payload_json=e.payload_json,
                payload_sha256=e.payload_sha256,
                at=at,
                idempotency_key=e.idempotency_key,
            )
            for offset, e in enumerate(events, start=1)
        ]
        with conn.cursor() as cur:
            cur.executemany(
                self._sql(f"INSERT INTO {{schema}}.cw_events ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"),
                [(r.session_id, r.seq, r.type, r.payload_json, r.payload_sha256, r.at, r.idempotency_key) for r in stored],
            )
        conn.execute(
            self._sql("UPDATE {schema}.cw_sessions SET last_seq = %s WHERE session_id = %s"),
            (stored[-1].seq, session_id),
        )
        return stored

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        with translating_psycopg(f"reading session {session_id!r}"), self._pool.connection() as conn:
            rows = conn.execute(
                self._sql(
                    f"SELECT {_COLUMNS} FROM {{schema}}.cw_events WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s"
                ),
                (session_id, after_seq, limit),
            ).fetchall()
            conn.rollback()  # end the read transaction so the pooled connection is clean
        return [_row(r) for r in rows]

    def _last_seq(self, session_id: str) -> int:
        with translating_psycopg(f"reading the last seq of {session_id!r}"), self._pool.connection() as conn:
            row = conn.execute(
                self._sql("SELECT last_seq FROM {schema}.cw_sessions WHERE session_id = %s"), (session_id,)
            ).fetchone()
            conn.rollback()
        return int(row[0]) if row else 0

    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        with translating_psycopg(f"storing artifact {ref}"), self._pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    self._sql(
                        "INSERT INTO {schema}.cw_artifacts (ref, kind, size_chars, content) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (ref) DO NOTHING"
                    ),
                    (ref, kind, len(content), content),
                )

    def _get_artifact(self, ref: str) -> str | None:
        with translating_psycopg(f"reading artifact {ref}"), self._pool.connection() as conn:
            row = conn.execute(self._sql("SELECT content FROM {schema}.cw_artifacts WHERE ref = %s"), (ref,)).fetchone()
            conn.rollback()
        return row[0] if row else None

    def _setting(self, key: str, default: str) -> str:
        with translating_psycopg(f"reading setting {key!r}"), self._pool.connection() as conn:
            with conn.transaction():
                conn.execute(
                    self._sql("INSERT INTO {schema}.cw_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING"),
                    (key, default),
                )
                value: str = conn.execute(self._sql("SELECT value FROM {schema}.cw_meta WHERE key = %s"), (key,)).fetchone()[0]
                return value

    def sessions(self) -> list[str]:
        with translating_psycopg("listing sessions"), self._pool.connection() as conn:
            rows = conn.execute(
                self._sql('SELECT session_id FROM {schema}.cw_sessions WHERE last_seq > 0 ORDER BY session_id COLLATE "C"')
            ).fetchall()
            conn.rollback()
        return [r[0] for r in rows]

    def drop_schema(self) -> None:
        """Delete this store's schema and everything in it (for tests and teardown)."""
        with translating_psycopg(f"dropping schema {self.schema}"), self._pool.connection() as conn:
            with conn.transaction():
                conn.execute(self._sql("DROP SCHEMA IF EXISTS {schema} CASCADE"))


def _microseconds(when: _dt.datetime) -> _dt.datetime:
    # TIMESTAMPTZ keeps microseconds; normalising first makes the returned value equal the stored one.
    return when.astimezone(UTC)


def _row(r: tuple[Any, ...]) -> StoredRow:
    return StoredRow(
        session_id=r[0],
        seq=int(r[1]),
        type=r[2],
        payload_json=r[3],
        payload_sha256=r[4],
        at=r[5].astimezone(UTC),
        idempotency_key=r[6],
    )
