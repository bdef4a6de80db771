"""PostgreSQL event log (psycopg 3, ``[postgres]`` extra): for many workers and hosts.

* A row lock on the session serialises appends to one session; appends to
  different sessions run in parallel. An append takes it with the statement that
  moves the session's last seq only if it is still ``expected_seq``; losers of a race
  wait, then find the new last seq, move nothing and get a ``SeqConflict``
  (https://www.postgresql.org/docs/current/transaction-iso.html#XACT-READ-COMMITTED).
* Payloads are stored as ``TEXT`` holding canonical JSON, not ``jsonb``, which
  would reorder keys and normalise numbers and so break byte-exact replay.
* Tables live in their own schema (default ``contextwright``); migrations take a
  transaction-level advisory lock so concurrent openers apply them once.
* A connection pool makes one log object safe to share between threads.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from contextwright._optional import require
from contextwright.canonical import canonical_json, canonical_str, parse_canonical
from contextwright.clock import UTC, Clock
from contextwright.errors import NotAStore, SchemaTooNew, SeqConflict, StorageCorrupted, UsageError
from contextwright.events.envelope import Event
from contextwright.log import _migrations
from contextwright.log._errors import translating_psycopg
from contextwright.log._invariants import IndexChanges, calls_to_look_up, check_batch, rebuild_index
from contextwright.log.base import (
    ArtifactRow,
    PreparedEvent,
    StoredCheckpoint,
    StoredRow,
    ThreadTransactionLog,
    key_prefix_range,
    new_events,
    resolve_replay,
)

_COLUMNS = "session_id, seq, type, payload, payload_sha256, at, idempotency_key"
# Compared in code point order, the order of the index cw_events_idempotency_c whatever the database's collation.
_READ_KEYED = (
    f"SELECT {_COLUMNS} FROM {{schema}}.cw_events WHERE session_id = %s "
    'AND idempotency_key COLLATE "C" >= %s AND idempotency_key COLLATE "C" < %s ORDER BY seq'
)
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# Any fixed number works; it only has to be the same for every migrating process.
_MIGRATION_LOCK = 0x636F6E74
_CHECKPOINT_COLUMNS = "session_id, seq, head_sha256, format, body, body_sha256, seal"
# One row per session; a checkpoint of the same format further along is kept (a slower writer never moves it back).
_PUT_CHECKPOINT = (
    f"INSERT INTO {{schema}}.cw_checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, head_sha256 = excluded.head_sha256, "
    "format = excluded.format, body = excluded.body, body_sha256 = excluded.body_sha256, seal = excluded.seal "
    "WHERE cw_checkpoints.seq <= excluded.seq OR cw_checkpoints.format <> excluded.format"
)


class PostgresEventLog(ThreadTransactionLog):
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
        self._bound = threading.local()
        """The connection of the thread's open :meth:`transaction` (``conn``) and how deep it is nested (``depth``)."""
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

    # -- connections and transactions -----------------------------------------

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """The thread's transaction's connection, or one from the pool for this call."""
        bound = getattr(self._bound, "conn", None)
        if bound is not None:
            yield bound
            return
        with self._pool.connection() as conn:
            yield conn

    def _end_read(self, conn: Any) -> None:
        """End a read's implicit transaction, unless it is the thread's transaction (which goes on)."""
        if conn is not getattr(self._bound, "conn", None):
            conn.rollback()

    @contextlib.contextmanager
    def _open_transaction(self) -> Iterator[None]:
        with translating_psycopg("opening a transaction"), self._pool.connection() as conn:
            with conn.transaction():
                self._bound.conn, self._bound.depth = conn, 1
                try:
                    yield
                finally:
                    self._bound.conn, self._bound.depth = None, 0

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
                    if migration.reindex:
                        self._reindex(conn)
                    conn.execute(
                        self._sql("INSERT INTO {schema}.cw_migrations (version, name, applied_at) VALUES (%s, %s, %s)"),
                        (migration.version, migration.name, self.clock.now()),
                    )

    def schema_version(self) -> int:
        """The greatest migration version applied to this store."""
        with translating_psycopg("reading the schema version"), self._connection() as conn:
            row = conn.execute(self._sql("SELECT MAX(version) FROM {schema}.cw_migrations")).fetchone()
        return int(row[0] or 0)

    # -- the port -------------------------------------------------------------

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[Event]:
        bound = getattr(self._bound, "conn", None)
        if bound is not None:
            # Inside the thread's transaction, a savepoint: the append is undone alone when it fails.
            with translating_psycopg(f"appending to session {session_id!r}"):
                try:
                    return self._append_locked(bound, session_id, events, expected_seq, steps=_SAVEPOINT_STEPS)
                except BaseException:
                    _roll_back(bound, _SAVEPOINT_STEPS)
                    raise
        with translating_psycopg(f"appending to session {session_id!r}"), self._pool.connection() as conn:
            # BEGIN and COMMIT are sent as statements in the append's two pipelines: in a
            # transaction block psycopg would send each in a round trip of its own.
            conn.autocommit = True
            try:
                return self._append_locked(conn, session_id, events, expected_seq)
            except BaseException:
                _roll_back(conn)
                raise
            finally:
                with contextlib.suppress(Exception):  # a broken connection is dropped by the pool
                    conn.autocommit = False

    def _append_locked(
        self, conn: Any, session_id: str, events: Sequence[PreparedEvent], expected_seq: int, *, steps: _Steps | None = None
    ) -> list[Event]:
        begin, commit, undo = steps or _TRANSACTION_STEPS
        keys = [e.idempotency_key for e in events if e.idempotency_key is not None]
        # The call ids the session rules will look up, asked for with the lock.
        results = calls_to_look_up(events)
        last_seq = expected_seq + len(events)
        # A pipeline sends these statements together and waits for their answers once. Moving
        # the session's last seq is the seq check and takes the row lock that serialises
        # appends to the session; the key lookup after it sees what a writer that held the
        # lock before committed.
        with conn.pipeline():
            conn.execute(begin)
            if expected_seq == 0:
                moved = conn.execute(
                    self._sql(
                        "INSERT INTO {schema}.cw_sessions (session_id, last_seq) VALUES (%s, %s) ON CONFLICT (session_id) "
                        "DO UPDATE SET last_seq = excluded.last_seq WHERE {schema}.cw_sessions.last_seq = 0"
                    ),
                    (session_id, last_seq),
                )
            else:
                moved = conn.execute(
                    self._sql("UPDATE {schema}.cw_sessions SET last_seq = %s WHERE session_id = %s AND last_seq = %s"),
                    (last_seq, session_id, expected_seq),
                )
            used = (
                conn.execute(
                    self._sql(
                        f"SELECT {_COLUMNS} FROM {{schema}}.cw_events "
                        'WHERE session_id = %s AND idempotency_key COLLATE "C" = ANY(%s)'
                    ),
                    (session_id, keys),
                )
                if keys
                else None
            )
            states = _call_states_query(self, conn, session_id, results) if results else None
        if used is not None:
            replay = resolve_replay(session_id, events, {r[6]: _row(r) for r in used.fetchall()})
            if replay is not None:
                conn.execute(undo)  # the last seq may have moved above; nothing is written
                if steps is _SAVEPOINT_STEPS:
                    conn.execute(commit)
                return replay
        if moved.rowcount != 1:
            row = conn.execute(
                self._sql("SELECT last_seq FROM {schema}.cw_sessions WHERE session_id = %s"), (session_id,)
            ).fetchone()
            raise SeqConflict(session_id, expected_seq=expected_seq, actual_seq=int(row[0]) if row else 0)
        changes = check_batch(
            session_id,
            events,
            _IndexReader(self, conn, session_id, prefetched=None if states is None else (results, states)),
            first_seq=expected_seq + 1,
        )
        at = _microseconds(self.clock.now())
        with conn.pipeline(), conn.cursor() as cur:
            cur.executemany(
                self._sql(f"INSERT INTO {{schema}}.cw_events ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"),
                [
                    (session_id, seq, e.type, e.payload_json, e.payload_sha256, at, e.idempotency_key)
                    for seq, e in enumerate(events, expected_seq + 1)
                ],
            )
            self._write_index(conn, session_id, changes)
            conn.execute(commit)  # skipped by the server if a write above failed
        return new_events(session_id, events, expected_seq=expected_seq, at=at)

    def _write_index(self, conn: Any, session_id: str, changes: IndexChanges) -> None:
        # Call ids are stored as JSON strings: PostgreSQL text cannot hold NUL, JSON escapes it.
        opened, answered = changes.call_rows()
        with conn.cursor() as cur:
            if opened:
                cur.executemany(
                    self._sql(
                        "INSERT INTO {schema}.cw_tool_calls (session_id, call_id, call_seq, result_seq) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (session_id, call_id) DO UPDATE SET call_seq = excluded.call_seq, result_seq = excluded.result_seq"
                    ),
                    [(session_id, canonical_str(call_id), seq, result) for call_id, seq, result in opened],
                )
            if answered:
                cur.executemany(
                    self._sql(
                        "INSERT INTO {schema}.cw_tool_calls (session_id, call_id, call_seq, result_seq) VALUES (%s, %s, 0, %s) "
                        "ON CONFLICT (session_id, call_id) DO UPDATE SET result_seq = excluded.result_seq"
                    ),
                    [(session_id, canonical_str(call_id), seq) for call_id, seq in answered],
                )
            if changes.plans:
                cur.executemany(
                    self._sql(
                        "INSERT INTO {schema}.cw_plans (session_id, epoch, prefix_sha256) VALUES (%s, %s, %s) "
                        "ON CONFLICT (session_id, epoch) DO UPDATE SET prefix_sha256 = excluded.prefix_sha256"
                    ),
                    [(session_id, epoch, prefix) for epoch, prefix in changes.plans],
                )
        if changes.requests_built is not None:
            conn.execute(
                self._sql("UPDATE {schema}.cw_sessions SET requests_built = %s WHERE session_id = %s"),
                (changes.requests_built, session_id),
            )

    def _reindex(self, conn: Any) -> None:
        """Index the events stored before the session-rules index existed."""
        sessions = [r[0] for r in conn.execute(self._sql("SELECT session_id FROM {schema}.cw_sessions")).fetchall()]
        for session_id in sessions:
            rows = conn.execute(
                self._sql(
                    "SELECT seq, type, payload FROM {schema}.cw_events WHERE session_id = %s AND type IN "
                    "('message.assistant', 'tool.result', 'context.plan.created', 'context.epoch.rotated', "
                    "'context.request.built') ORDER BY seq"
                ),
                (session_id,),
            ).fetchall()
            self._write_index(conn, session_id, rebuild_index((int(seq), t, p) for seq, t, p in rows))

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        with translating_psycopg(f"reading session {session_id!r}"), self._connection() as conn:
            rows = conn.execute(
                self._sql(
                    f"SELECT {_COLUMNS} FROM {{schema}}.cw_events WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s"
                ),
                (session_id, after_seq, limit),
            ).fetchall()
            self._end_read(conn)  # end the read transaction so the pooled connection is clean
        return [_row(r) for r in rows]

    def _read_keyed(self, session_id: str, key_prefix: str) -> list[StoredRow]:
        with translating_psycopg(f"reading keyed events of {session_id!r}"), self._connection() as conn:
            rows = conn.execute(self._sql(_READ_KEYED), (session_id, *key_prefix_range(key_prefix))).fetchall()
            self._end_read(conn)
        return [_row(r) for r in rows]

    def _last_seq(self, session_id: str) -> int:
        with translating_psycopg(f"reading the last seq of {session_id!r}"), self._connection() as conn:
            row = conn.execute(
                self._sql("SELECT last_seq FROM {schema}.cw_sessions WHERE session_id = %s"), (session_id,)
            ).fetchone()
            self._end_read(conn)
        return int(row[0]) if row else 0

    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        with translating_psycopg(f"storing artifact {ref}"), self._connection() as conn:
            with conn.transaction():
                conn.execute(
                    self._sql(
                        "INSERT INTO {schema}.cw_artifacts (ref, kind, size_chars, content, encoding) "
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (ref) DO NOTHING"
                    ),
                    (ref, kind, len(content), *_stored_content(content)),
                )

    def _get_artifact(self, ref: str) -> str | None:
        with translating_psycopg(f"reading artifact {ref}"), self._connection() as conn:
            row = conn.execute(self._sql("SELECT content, encoding FROM {schema}.cw_artifacts WHERE ref = %s"), (ref,)).fetchone()
            self._end_read(conn)
        return _read_content(row[0], row[1]) if row else None

    def _setting(self, key: str, default: str) -> str:
        with translating_psycopg(f"reading setting {key!r}"), self._connection() as conn:
            with conn.transaction():
                conn.execute(
                    self._sql("INSERT INTO {schema}.cw_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING"),
                    (key, default),
                )
                value: str = conn.execute(self._sql("SELECT value FROM {schema}.cw_meta WHERE key = %s"), (key,)).fetchone()[0]
                return value

    def _put_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        c = checkpoint
        with translating_psycopg(f"storing the checkpoint of {c.session_id!r}"), self._connection() as conn:
            with conn.transaction():
                conn.execute(
                    self._sql(_PUT_CHECKPOINT), (c.session_id, c.seq, c.head_sha256, c.format, c.body, c.body_sha256, c.seal)
                )

    def _get_checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        with translating_psycopg(f"reading the checkpoint of {session_id!r}"), self._connection() as conn:
            row = conn.execute(
                self._sql(f"SELECT {_CHECKPOINT_COLUMNS} FROM {{schema}}.cw_checkpoints WHERE session_id = %s"), (session_id,)
            ).fetchone()
            self._end_read(conn)
        if row is None:
            return None
        return StoredCheckpoint(
            session_id=row[0], seq=int(row[1]), head_sha256=row[2], format=row[3], body=row[4], body_sha256=row[5], seal=row[6]
        )

    def _checkpoint_rows(self) -> Iterator[StoredCheckpoint]:
        with translating_psycopg("listing checkpoints"), self._connection() as conn:
            ids = [r[0] for r in conn.execute(self._sql("SELECT session_id FROM {schema}.cw_checkpoints")).fetchall()]
            self._end_read(conn)
        for session_id in sorted(ids):
            stored = self._get_checkpoint(session_id)
            if stored is not None:
                yield stored

    def sessions(self) -> list[str]:
        with translating_psycopg("listing sessions"), self._connection() as conn:
            rows = conn.execute(
                self._sql('SELECT session_id FROM {schema}.cw_sessions WHERE last_seq > 0 ORDER BY session_id COLLATE "C"')
            ).fetchall()
            self._end_read(conn)
        return [r[0] for r in rows]

    def _event_session_ids(self) -> list[str]:
        with translating_psycopg("listing sessions with events"), self._connection() as conn:
            rows = conn.execute(self._sql("SELECT DISTINCT session_id FROM {schema}.cw_events")).fetchall()
            self._end_read(conn)
        return sorted(r[0] for r in rows)

    def _artifact_rows(self) -> Iterator[ArtifactRow]:
        with translating_psycopg("listing artifacts"), self._connection() as conn:
            refs = [r[0] for r in conn.execute(self._sql("SELECT ref FROM {schema}.cw_artifacts ORDER BY ref")).fetchall()]
            self._end_read(conn)
        for ref in refs:
            with translating_psycopg(f"reading artifact {ref}"), self._connection() as conn:
                row = conn.execute(
                    self._sql("SELECT size_chars, content, encoding FROM {schema}.cw_artifacts WHERE ref = %s"), (ref,)
                ).fetchone()
                self._end_read(conn)
            if row is not None:
                yield ArtifactRow(ref=ref, size_chars=int(row[0]), content=_read_content(row[1], row[2]))

    def _index_state(self, session_id: str) -> tuple[dict[str, bool], dict[int, str], int]:
        with translating_psycopg(f"reading the index of {session_id!r}"), self._connection() as conn:
            calls = conn.execute(
                self._sql("SELECT call_id, result_seq IS NOT NULL FROM {schema}.cw_tool_calls WHERE session_id = %s"),
                (session_id,),
            ).fetchall()
            plans = conn.execute(
                self._sql("SELECT epoch, prefix_sha256 FROM {schema}.cw_plans WHERE session_id = %s"), (session_id,)
            ).fetchall()
            row = conn.execute(
                self._sql("SELECT requests_built FROM {schema}.cw_sessions WHERE session_id = %s"), (session_id,)
            ).fetchone()
            self._end_read(conn)
        return {parse_canonical(c): bool(a) for c, a in calls}, {int(e): p for e, p in plans}, int(row[0]) if row else 0

    def drop_schema(self) -> None:
        """Delete this store's schema and everything in it (for tests and teardown)."""
        with translating_psycopg(f"dropping schema {self.schema}"), self._connection() as conn:
            with conn.transaction():
                conn.execute(self._sql("DROP SCHEMA IF EXISTS {schema} CASCADE"))


class _IndexReader:
    """Answers the session rules from the index tables, inside the append transaction."""

    def __init__(
        self, log: PostgresEventLog, conn: Any, session_id: str, *, prefetched: tuple[list[str], Any] | None = None
    ) -> None:
        self.log = log
        self.conn = conn
        self.session_id = session_id
        self.prefetched = prefetched
        """(call ids, the cursor of their query), sent in the append's first pipeline."""

    def call_states(self, call_ids: Sequence[str]) -> Mapping[str, bool]:
        if self.prefetched is not None and list(call_ids) == self.prefetched[0]:
            cursor = self.prefetched[1]
            self.prefetched = None  # its rows can be fetched once
        else:
            cursor = _call_states_query(self.log, self.conn, self.session_id, call_ids)
        return {parse_canonical(c): bool(a) for c, a in cursor.fetchall()}

    def any_calls(self) -> bool:
        row = self.conn.execute(
            self.log._sql("SELECT 1 FROM {schema}.cw_tool_calls WHERE session_id = %s LIMIT 1"), (self.session_id,)
        ).fetchone()
        return row is not None

    def plan_prefixes(self) -> Mapping[int, str]:
        rows = self.conn.execute(
            self.log._sql("SELECT epoch, prefix_sha256 FROM {schema}.cw_plans WHERE session_id = %s"), (self.session_id,)
        ).fetchall()
        return {int(e): p for e, p in rows}

    def requests_built(self) -> int:
        row = self.conn.execute(
            self.log._sql("SELECT requests_built FROM {schema}.cw_sessions WHERE session_id = %s"), (self.session_id,)
        ).fetchone()
        return int(row[0]) if row else 0


_Steps = tuple[str, str, str]
_TRANSACTION_STEPS: _Steps = ("BEGIN", "COMMIT", "ROLLBACK")
"""How an append opens, commits and undoes its writes: a transaction of its own."""
_SAVEPOINT_STEPS: _Steps = ("SAVEPOINT cw_append", "RELEASE SAVEPOINT cw_append", "ROLLBACK TO SAVEPOINT cw_append")
"""The same inside the thread's transaction: a savepoint, released when the append is stored."""


def _roll_back(conn: Any, steps: _Steps = _TRANSACTION_STEPS) -> None:
    """End a failed append's transaction (or savepoint); a connection too broken for that is dropped by the pool."""
    with contextlib.suppress(Exception):
        if conn.info.transaction_status.name != "IDLE":
            conn.execute(steps[2])
            if steps is _SAVEPOINT_STEPS:
                conn.execute(steps[1])


def _call_states_query(log: PostgresEventLog, conn: Any, session_id: str, call_ids: Sequence[str]) -> Any:
    """Send the query for which of ``call_ids`` the session holds, and whether each has a result."""
    return conn.execute(
        log._sql(
            "SELECT call_id, result_seq IS NOT NULL FROM {schema}.cw_tool_calls WHERE session_id = %s AND call_id = ANY(%s)"
        ),
        (session_id, [canonical_str(c) for c in call_ids]),
    )


def _stored_content(content: str) -> tuple[str, str]:
    # PostgreSQL text cannot hold NUL, which tool outputs sometimes do: such content is
    # stored as its JSON string (NUL escaped), so every backend keeps every text.
    if "\x00" in content:
        return canonical_json(content), "json"
    return content, "text"


def _read_content(stored: str, encoding: str) -> str:
    if encoding == "json":
        text = parse_canonical(stored)
        if not isinstance(text, str):
            raise StorageCorrupted("an artifact stored as JSON does not hold a string")
        return text
    return stored


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
