"""Leases: one worker at a time runs a long operation (compaction) on a session, and a lease dies with its worker.

* **PostgreSQL**: a session-level advisory lock (``pg_try_advisory_lock``) held on a
  connection of its own. The lock belongs to that connection, so it ends when the worker
  dies (its socket closes and the server ends the backend) or when the connection is cut;
  no expiry to tune, no row to clean up
  (https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS).
* **SQLite** (one machine): a row in ``cw_leases`` naming its holder (host, pid) and an
  expiry. A row whose holder process is gone on this host, or whose expiry has passed, is
  taken over.

A lease saves duplicate work; it is not what keeps the log right. A holder can lose its
lease without knowing (its connection cut mid-operation), so whatever it appends still
goes through the log's optimistic append at the position it read, and loses to any
writer that came first.
"""

from __future__ import annotations

import abc
import hashlib
import os
import socket
import time
import uuid
from collections.abc import Callable
from types import TracebackType

from contextwright._optional import require
from contextwright.errors import UsageError
from contextwright.log._errors import translating_psycopg, translating_sqlite
from contextwright.service.store import PostgresServiceStore, ServiceStore, SQLiteServiceStore

_ADVISORY_NAMESPACE = 0x6377_6C73  # "cwls": the first key of every lease lock, apart from the migration lock's


class Lease:
    """A held lease; :meth:`release` (or leaving the ``with`` block) gives it back."""

    def __init__(self, name: str, holder: str, release: Callable[[], None]) -> None:
        self.name = name
        self.holder = holder
        self._release: Callable[[], None] | None = release

    def release(self) -> None:
        """Give the lease back (once; later calls do nothing)."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


class Leases(abc.ABC):
    """Named leases in one store."""

    def acquire(self, name: str, *, wait: float = 0.0, poll: float = 0.02) -> Lease | None:
        """The lease ``name``, waiting up to ``wait`` seconds for its holder to finish; None if it stays held."""
        deadline = time.monotonic() + wait
        while True:
            lease = self.try_acquire(name)
            if lease is not None or time.monotonic() >= deadline:
                return lease
            time.sleep(poll)

    @abc.abstractmethod
    def try_acquire(self, name: str) -> Lease | None:
        """The lease ``name`` now, or None while another holder has it."""

    def close(self) -> None:  # noqa: B027 - adapters with connections override it
        """Release connections (and with them every lease still held)."""


class PostgresLeases(Leases):
    """Advisory locks, each on its own connection from a small pool (``max_held`` at once)."""

    def __init__(self, dsn: str, *, schema: str, max_held: int = 2, timeout: float = 10.0) -> None:
        pool_module = require("psycopg_pool", extra="postgres", feature="leases on PostgreSQL")
        self.schema = schema
        self._timeout = timeout
        # min_size=0: a worker that never compacts holds no extra connection.
        self._pool = pool_module.ConnectionPool(
            dsn, min_size=0, max_size=max(1, max_held), timeout=timeout, kwargs={"autocommit": True}, open=False
        )
        with translating_psycopg("connecting to PostgreSQL for leases"):
            self._pool.open(wait=False)

    def _key(self, name: str) -> int:
        # Advisory locks are per database: the schema keeps two stores in one database apart.
        digest = hashlib.sha256(f"{self.schema}\x00{name}".encode()).digest()
        return int.from_bytes(digest[:4], "big", signed=True)

    def try_acquire(self, name: str) -> Lease | None:
        key = self._key(name)
        with translating_psycopg(f"taking lease {name!r}"):
            conn = self._pool.getconn(timeout=self._timeout)
            try:
                held = bool(conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_ADVISORY_NAMESPACE, key)).fetchone()[0])
            except BaseException:
                self._pool.putconn(conn)
                raise
        if not held:
            self._pool.putconn(conn)
            return None
        holder = f"pg-backend-{conn.info.backend_pid}"

        def release() -> None:
            try:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_ADVISORY_NAMESPACE, key))
            except Exception:
                pass
            finally:
                self._pool.putconn(conn)

        return Lease(name, holder, release)

    def close(self) -> None:
        self._pool.close()


class SQLiteLeases(Leases):
    """Rows in ``cw_leases`` of a SQLite store, with holder and expiry (see the module docstring)."""

    def __init__(self, store: SQLiteServiceStore, *, ttl: float = 60.0, now: Callable[[], float] = time.time) -> None:
        self._store = store  # its connection per thread and BEGIN IMMEDIATE transactions
        self.ttl = ttl
        self._now = now
        self._host = socket.gethostname()

    def try_acquire(self, name: str) -> Lease | None:
        holder = f"{self._host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        now = self._now()
        with translating_sqlite(f"taking lease {name!r}"), self._store._transaction() as conn:
            row = conn.execute("SELECT holder, expires_at FROM cw_leases WHERE name = ?", (name,)).fetchone()
            if row is not None and row[1] > now and self._alive(row[0]):
                return None
            conn.execute(
                "INSERT INTO cw_leases (name, holder, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at",
                (name, holder, now + self.ttl),
            )

        def release() -> None:
            with translating_sqlite(f"releasing lease {name!r}"), self._store._transaction() as conn:
                conn.execute("DELETE FROM cw_leases WHERE name = ? AND holder = ?", (name, holder))

        return Lease(name, holder, release)

    def _alive(self, holder: str) -> bool:
        host, _, rest = holder.partition(":")
        pid = rest.partition(":")[0]
        if host != self._host or not pid.isdigit():
            return True  # another machine's process: only its expiry can end its lease
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def open_leases(store: ServiceStore) -> Leases:
    """The leases of the store the service tables live in."""
    if isinstance(store, PostgresServiceStore):
        return PostgresLeases(store.dsn, schema=store.schema)
    if isinstance(store, SQLiteServiceStore):
        return SQLiteLeases(store)
    raise UsageError(f"no leases for a {type(store).__name__}")
