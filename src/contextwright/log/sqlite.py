"""SQLite event log: the embedded default, one file, standard library only.

* WAL journal, so readers never block the writer and a killed process leaves
  the file consistent (https://www.sqlite.org/wal.html).
* ``BEGIN IMMEDIATE`` for appends: the write lock is taken before the last seq is
  read, so two writers cannot both see the same seq
  (https://www.sqlite.org/lang_transaction.html).
* A small pool of connections: each operation takes one, runs its transaction and
  gives it back, so a connection is never shared mid-transaction and the number of
  open connections follows the number of concurrent calls, not of threads that ever
  called (at most ``max_idle`` stay open between calls). Processes coordinate through
  the file lock, waiting up to ``busy_timeout`` seconds.
* :meth:`~SQLiteEventLog.transaction` binds one connection to the thread for the
  block, in one ``BEGIN IMMEDIATE`` transaction: every call of the thread inside it
  uses that connection (so it reads its own writes), each append in a savepoint of its
  own, and the block ends in one commit.
* ``synchronous`` is ``FULL`` by default: every commit is on disk when it returns.
  ``synchronous="NORMAL"`` skips the sync of each commit in WAL mode; a commit then
  survives a crash of the process, but the last ones may be lost when the machine loses
  power (https://www.sqlite.org/pragma.html#pragma_synchronous).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from contextwright.canonical import canonical_str, parse_canonical
from contextwright.clock import UTC, Clock, format_instant, parse_instant
from contextwright.errors import (
    ContextwrightError,
    NotAStore,
    SchemaTooNew,
    SeqConflict,
    StorageError,
    StoreNotFound,
    StoreReadOnly,
    UsageError,
)
from contextwright.events.envelope import Event
from contextwright.log import _migrations
from contextwright.log._errors import map_sqlite_error, translating_sqlite
from contextwright.log._invariants import CHECKED_TYPES, IndexChanges, check_batch, final_index, rebuild_index
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
# A range on the key (BINARY collation: code point order) is a seek in the index cw_events_idempotency.
# Sorted by the caller: asked to order by seq, SQLite would walk the session's primary key instead.
_READ_KEYED = f"SELECT {_COLUMNS} FROM cw_events WHERE session_id = ? AND idempotency_key >= ? AND idempotency_key < ?"
_INSERT_EVENTS = f"INSERT INTO cw_events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
# The session row keeps the calls still waiting for a result in ``open_calls``: each call id as
# its JSON string followed by a newline. A JSON string never holds a raw newline, so a call is
# open exactly when "\n<id>\n" occurs in "\n" || open_calls, and removing that text removes it.
_MOVE_SEQ = "UPDATE cw_sessions SET last_seq = ? WHERE session_id = ? AND last_seq = ?"
_NEW_SESSION = (
    "INSERT INTO cw_sessions (session_id, last_seq, open_calls) VALUES (?, ?, ?) ON CONFLICT (session_id) "
    "DO UPDATE SET last_seq = excluded.last_seq, open_calls = excluded.open_calls WHERE cw_sessions.last_seq = 0"
)
# Moves the last seq and answers the call in one statement, only if the call is open: all the
# session rules ask of a lone result.
_ANSWER_OPEN_CALL = (
    "UPDATE cw_sessions SET last_seq = ?, open_calls = substr(replace(char(10) || open_calls, ?, char(10)), 2) "
    "WHERE session_id = ? AND last_seq = ? AND instr(char(10) || open_calls, ?) > 0"
)
# A lone assistant message opens its calls in the statement that moves the last seq, each
# reused id first taken out (it starts over, as the rules say); more calls take the general path.
_MAX_CALLS_ALONE = 8
_CHECKPOINT_COLUMNS = "session_id, seq, head_sha256, format, body, body_sha256, seal"
# One row per session; a checkpoint of the same format further along is kept (a slower writer never moves it back).
_PUT_CHECKPOINT = (
    f"INSERT INTO cw_checkpoints ({_CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
    "seq = excluded.seq, head_sha256 = excluded.head_sha256, format = excluded.format, body = excluded.body, "
    "body_sha256 = excluded.body_sha256, seal = excluded.seal "
    "WHERE cw_checkpoints.seq <= excluded.seq OR cw_checkpoints.format <> excluded.format"
)
_OPEN_CALLS = [
    "UPDATE cw_sessions SET last_seq = ?, open_calls = substr("
    + "replace(" * count
    + "char(10) || open_calls"
    + ", ?, char(10))" * count
    + ", 2) || ? WHERE session_id = ? AND last_seq = ?"
    for count in range(_MAX_CALLS_ALONE + 1)  # [0] is never run: a message without calls only moves the seq
]


class SQLiteEventLog(ThreadTransactionLog):
    """Event log in one SQLite file (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        create: bool = True,
        synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        max_idle: int = 4,
        read_only: bool = False,
    ) -> None:
        super().__init__(clock=clock)
        if str(path) in ("", ":memory:"):
            raise UsageError(
                "an in-memory SQLite database cannot be shared between threads; "
                "for a store that lives in memory open 'memory://' (Engine.open(\"memory://\"))"
            )
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise UsageError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = Path(path)
        self._synchronous = synchronous.upper()
        self._busy_timeout = busy_timeout
        self._max_idle = max(1, max_idle)
        self._idle: list[sqlite3.Connection] = []
        self._pool_lock = threading.Lock()
        self._bound = threading.local()
        """The connection of the thread's open :meth:`transaction` (``conn``), how deep it is nested (``depth``),
        and its :meth:`write_mark` (``mark``: the transaction's own object and how many appends it made)."""
        self._closed = False
        self.read_only = read_only
        if not self.path.exists():
            if not create or read_only:
                raise StoreNotFound(f"no Contextwright store at {self.path}", path=str(self.path))
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if read_only:
            self._check_schema()
            return
        if self.path.exists() and not self._writable():
            self._open_read_only(None)
            return
        try:
            self._migrate(create=create)
        except StorageError as exc:
            if not _cannot_write(exc):
                raise
            self._open_read_only(exc)

    def _writable(self) -> bool:
        """False when this process cannot write the file, or create the write-ahead log beside it.

        Asked of the operating system, which knows permissions, immutable files and read-only
        mounts; SQLite would otherwise open such a file read-only without saying so, and fail
        at the first write, or refuse it with "unable to open database file".
        """
        if not os.access(self.path, os.W_OK):
            return False
        return os.access(self.path.parent, os.W_OK) or Path(f"{self.path}-wal").exists()

    def _open_read_only(self, refused: StorageError | None) -> None:
        """Read a store this process cannot write, as ``read_only=True`` does: every write then raises StoreReadOnly."""
        with self._pool_lock:
            writable, self._idle = self._idle, []
        for conn in writable:
            conn.close()
        self.read_only = True
        try:
            self._check_schema()
        except NotAStore as exc:
            if "older than" not in exc.message:
                raise
            raise StoreReadOnly(
                f"{self.path} is read-only here, and its schema needs an upgrade that writes: {exc.message}",
                path=str(self.path),
            ) from (refused or exc)

    # -- connections ----------------------------------------------------------

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        conn = self._take()
        try:
            yield conn
        finally:
            self._give_back(conn)

    def _take(self) -> sqlite3.Connection:
        """The thread's transaction's connection, an idle connection, or a new one."""
        if self._closed:
            raise UsageError("this log is closed")
        bound: sqlite3.Connection | None = getattr(self._bound, "conn", None)
        if bound is not None:
            return bound
        with self._pool_lock:
            if self._idle:
                return self._idle.pop()
        with translating_sqlite(f"opening {self.path}"):
            if self.read_only:
                # mode=ro: SQLite itself refuses every write, so looking never changes the file. Without a
                # -wal file no writer has the store open; immutable=1 then also keeps SQLite from
                # creating -wal/-shm files next to it just to read.
                quiet = "" if Path(f"{self.path}-wal").exists() else "&immutable=1"
                uri = f"{self.path.resolve().as_uri()}?mode=ro{quiet}"
                return sqlite3.connect(uri, uri=True, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
            return self._connect_writer()

    def _connect_writer(self) -> sqlite3.Connection:
        """A new read-write connection in WAL mode, waiting up to ``busy_timeout`` for the file's lock.

        Switching a new file to WAL needs its lock alone, and SQLite answers "database is locked"
        at once, without its busy handler, while another process (a second worker starting on the
        same store) holds it: so the switch is tried again until the timeout."""
        deadline = time.monotonic() + self._busy_timeout
        while True:
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={self._synchronous}")
                conn.execute("PRAGMA foreign_keys=ON")
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.02)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        """Keep ``conn`` for the next call, unless enough are idle, the log is closed or it is mid-transaction."""
        if conn is getattr(self._bound, "conn", None):
            return  # the thread's transaction goes on with it
        with self._pool_lock:
            keep = not self._closed and len(self._idle) < self._max_idle and not conn.in_transaction
            if keep:
                self._idle.append(conn)
        if not keep:
            conn.close()

    def open_connections(self) -> int:
        """Connections held open between calls (for tests and monitoring)."""
        with self._pool_lock:
            return len(self._idle)

    def close(self) -> None:
        with self._pool_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- schema ---------------------------------------------------------------

    def _migrate(self, *, create: bool) -> None:
        with self._conn() as conn, translating_sqlite(f"migrating {self.path}"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if "cw_migrations" not in tables:
                    if not create:
                        raise NotAStore(f"{self.path} is not a Contextwright store", path=str(self.path))
                    conn.execute(
                        "CREATE TABLE cw_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                    )
                applied = {row[0] for row in conn.execute("SELECT version FROM cw_migrations")}
                latest = _migrations.latest_version(_migrations.SQLITE)
                if applied and max(applied) > latest:
                    raise SchemaTooNew(
                        f"{self.path} has schema version {max(applied)}; this Contextwright knows up to {latest}",
                        path=str(self.path),
                    )
                reindex = False
                for migration in _migrations.SQLITE:
                    if migration.version in applied:
                        continue
                    for statement in migration.statements:
                        conn.execute(statement)
                    reindex = reindex or migration.reindex
                    conn.execute(
                        "INSERT INTO cw_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                        (migration.version, migration.name, format_instant(self.clock.now())),
                    )
                if reindex:  # once, into the latest schema: the index code writes only that one
                    _reindex(conn)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _check_schema(self) -> None:
        """The read-only counterpart of :meth:`_migrate`: the schema must be there and current."""
        with self._conn() as conn, translating_sqlite(f"reading {self.path}"):
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "cw_migrations" not in tables:
                raise NotAStore(f"{self.path} is not a Contextwright store", path=str(self.path))
            applied = {row[0] for row in conn.execute("SELECT version FROM cw_migrations")}
        latest = _migrations.latest_version(_migrations.SQLITE)
        if applied and max(applied) > latest:
            raise SchemaTooNew(
                f"{self.path} has schema version {max(applied)}; this Contextwright knows up to {latest}", path=str(self.path)
            )
        if max(applied, default=0) < latest:
            raise NotAStore(
                f"{self.path} has schema version {max(applied, default=0)}, older than {latest}: "
                "open it once for writing to upgrade it",
                path=str(self.path),
            )

    def schema_version(self) -> int:
        """The greatest migration version applied to this store."""
        with self._conn() as conn, translating_sqlite("reading the schema version"):
            row = conn.execute("SELECT MAX(version) FROM cw_migrations").fetchone()
        return int(row[0] or 0)

    # -- the port -------------------------------------------------------------

    @contextlib.contextmanager
    def _open_transaction(self) -> Iterator[None]:
        if self.read_only:
            yield  # nothing can be written: every write raises StoreReadOnly as it would outside
            return
        conn = self._take()
        try:
            with translating_sqlite(f"opening a transaction on {self.path}"):
                conn.execute("BEGIN IMMEDIATE")
            self._bound.conn, self._bound.depth = conn, 1
            self._bound.mark = (object(), 0)
            try:
                yield
                with translating_sqlite(f"committing a transaction on {self.path}"):
                    conn.execute("COMMIT")
            finally:
                self._bound.conn, self._bound.depth, self._bound.mark = None, 0, None
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            self._give_back(conn)

    def write_mark(self) -> object | None:
        # BEGIN IMMEDIATE took the file's write lock: until COMMIT only this thread's appends, each
        # counted in the mark, can add events.
        return getattr(self._bound, "mark", None)

    def _append(self, session_id: str, events: Sequence[PreparedEvent], *, expected_seq: int) -> list[Event]:
        # The pool and the error translation spelled out: this is the hot path of every turn.
        conn = self._take()
        # Inside the thread's transaction, a savepoint: the append is undone alone when it fails.
        begin, commit, undo = (
            ("SAVEPOINT cw_append", "RELEASE cw_append", "ROLLBACK TO cw_append")
            if conn is getattr(self._bound, "conn", None)
            else ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
        )
        try:
            conn.execute(begin)
            try:
                rows = self._append_locked(conn, session_id, events, expected_seq)
                conn.execute(commit)
                if begin.startswith("SAVEPOINT"):
                    self._bound.mark = (self._bound.mark[0], self._bound.mark[1] + 1)  # the tail moved: a new mark
            except BaseException:
                if conn.in_transaction:
                    conn.execute(undo)
                    if begin.startswith("SAVEPOINT"):
                        conn.execute(commit)  # the savepoint ends; the transaction goes on
                raise
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise map_sqlite_error(exc, context=f"appending to session {session_id!r}") from exc
        finally:
            self._give_back(conn)
        return rows

    def _append_locked(
        self, conn: sqlite3.Connection, session_id: str, events: Sequence[PreparedEvent], expected_seq: int
    ) -> list[Event]:
        keys = [e.idempotency_key for e in events if e.idempotency_key is not None]
        if keys:
            marks = ",".join("?" * len(keys))
            found = conn.execute(
                f"SELECT {_COLUMNS} FROM cw_events WHERE session_id = ? AND idempotency_key IN ({marks})",
                (session_id, *keys),
            ).fetchall()
            replay = resolve_replay(session_id, events, {r[6]: _row(r) for r in found})
            if replay is not None:
                return replay
        if not (len(events) == 1 and _appended_alone(conn, session_id, events[0], expected_seq)):
            _advance_last_seq(conn, session_id, expected_seq, expected_seq + len(events))
            reader = _IndexReader(conn, session_id)
            _write_index(conn, session_id, check_batch(session_id, events, reader, first_seq=expected_seq + 1), reader)
        now = self.clock.now()
        stamp = format_instant(now)
        if len(events) == 1:  # a turn's usual append: one row, without executemany's iteration
            e = events[0]
            conn.execute(
                _INSERT_EVENTS, (session_id, expected_seq + 1, e.type, e.payload_json, e.payload_sha256, stamp, e.idempotency_key)
            )
        else:
            conn.executemany(
                _INSERT_EVENTS,
                [
                    (session_id, seq, e.type, e.payload_json, e.payload_sha256, stamp, e.idempotency_key)
                    for seq, e in enumerate(events, expected_seq + 1)
                ],
            )
        # The instant as a read parses it back from ``stamp`` (both keep microseconds).
        return new_events(session_id, events, expected_seq=expected_seq, at=now if now.tzinfo is UTC else now.astimezone(UTC))

    def _read(self, session_id: str, *, after_seq: int, limit: int | None) -> list[StoredRow]:
        with self._conn() as conn, translating_sqlite(f"reading session {session_id!r}"):
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM cw_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after_seq, -1 if limit is None else limit),
            ).fetchall()
        return [_row(r) for r in rows]

    def _read_keyed(self, session_id: str, key_prefix: str) -> list[StoredRow]:
        with self._conn() as conn, translating_sqlite(f"reading keyed events of {session_id!r}"):
            rows = conn.execute(_READ_KEYED, (session_id, *key_prefix_range(key_prefix))).fetchall()
        return sorted((_row(r) for r in rows), key=lambda row: row.seq)

    def _last_seq(self, session_id: str) -> int:
        with self._conn() as conn, translating_sqlite(f"reading the last seq of {session_id!r}"):
            row = conn.execute("SELECT last_seq FROM cw_sessions WHERE session_id = ?", (session_id,)).fetchone()
        return int(row[0]) if row else 0

    def _put_artifact(self, ref: str, kind: str, content: str) -> None:
        with self._conn() as conn, translating_sqlite(f"storing artifact {ref}"):
            conn.execute(
                "INSERT INTO cw_artifacts (ref, kind, size_chars, content) VALUES (?, ?, ?, ?) ON CONFLICT (ref) DO NOTHING",
                (ref, kind, len(content), content),
            )

    def _get_artifact(self, ref: str) -> str | None:
        with self._conn() as conn, translating_sqlite(f"reading artifact {ref}"):
            row = conn.execute("SELECT content FROM cw_artifacts WHERE ref = ?", (ref,)).fetchone()
        return row[0] if row else None

    def _setting(self, key: str, default: str) -> str:
        with self._conn() as conn, translating_sqlite(f"reading setting {key!r}"):
            if not self.read_only:
                conn.execute("INSERT INTO cw_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, default))
            row = conn.execute("SELECT value FROM cw_meta WHERE key = ?", (key,)).fetchone()
        # A read-only store without the setting answers with the default and stores nothing.
        return default if row is None else str(row[0])

    def _put_checkpoint(self, checkpoint: StoredCheckpoint) -> None:
        with self._conn() as conn, translating_sqlite(f"storing the checkpoint of {checkpoint.session_id!r}"):
            conn.execute(_PUT_CHECKPOINT, _checkpoint_values(checkpoint))

    def _get_checkpoint(self, session_id: str) -> StoredCheckpoint | None:
        with self._conn() as conn, translating_sqlite(f"reading the checkpoint of {session_id!r}"):
            row = conn.execute(f"SELECT {_CHECKPOINT_COLUMNS} FROM cw_checkpoints WHERE session_id = ?", (session_id,)).fetchone()
        return _checkpoint(row) if row else None

    def _checkpoint_rows(self) -> Iterator[StoredCheckpoint]:
        with self._conn() as conn, translating_sqlite("listing checkpoints"):
            ids = [r[0] for r in conn.execute("SELECT session_id FROM cw_checkpoints ORDER BY session_id").fetchall()]
        for session_id in ids:
            stored = self._get_checkpoint(session_id)
            if stored is not None:
                yield stored

    def sessions(self) -> list[str]:
        with self._conn() as conn, translating_sqlite("listing sessions"):
            rows = conn.execute("SELECT session_id FROM cw_sessions ORDER BY session_id").fetchall()
        return [r[0] for r in rows]

    def _event_session_ids(self) -> list[str]:
        with self._conn() as conn, translating_sqlite("listing sessions with events"):
            rows = conn.execute("SELECT DISTINCT session_id FROM cw_events ORDER BY session_id").fetchall()
        return [r[0] for r in rows]

    def _artifact_rows(self) -> Iterator[ArtifactRow]:
        with self._conn() as conn, translating_sqlite("listing artifacts"):
            refs = [r[0] for r in conn.execute("SELECT ref FROM cw_artifacts ORDER BY ref").fetchall()]
        for ref in refs:
            with self._conn() as conn, translating_sqlite(f"reading artifact {ref}"):
                row = conn.execute("SELECT size_chars, content FROM cw_artifacts WHERE ref = ?", (ref,)).fetchone()
            if row is not None:
                yield ArtifactRow(ref=ref, size_chars=int(row[0]), content=row[1])

    def _index_state(self, session_id: str) -> tuple[dict[str, bool], dict[int, str], int]:
        with self._conn() as conn, translating_sqlite(f"reading the index of {session_id!r}"):
            plans = conn.execute("SELECT epoch, prefix_sha256 FROM cw_plans WHERE session_id = ?", (session_id,)).fetchall()
            row = conn.execute(
                "SELECT requests_built, open_calls FROM cw_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        calls: dict[str, bool] = {}
        for token in _open_tokens(row[1] if row else ""):
            try:
                call_id = parse_canonical(token)
            except ContextwrightError:
                call_id = None
            # An entry that is not a JSON string is kept as answered, which no open-calls view holds: verify reports it.
            calls[call_id if isinstance(call_id, str) else token] = not isinstance(call_id, str)
        return calls, {int(e): p for e, p in plans}, int(row[0]) if row else 0

    def _index_view(self, index: tuple[dict[str, bool], dict[int, str], int]) -> tuple[dict[str, bool], dict[int, str], int]:
        calls, plans, requests = index
        return {call_id: False for call_id, answered in calls.items() if not answered}, plans, requests


class _IndexReader:
    """Answers the session rules from the session row and, for a refusal, the events; inside the append transaction."""

    def __init__(self, conn: sqlite3.Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self._open: dict[str, None] | None = None
        self._past: dict[str, bool] | None = None

    def open_tokens(self) -> dict[str, None]:
        """The open calls' JSON strings, in the order they were opened (read once per append)."""
        if self._open is None:
            row = self.conn.execute("SELECT open_calls FROM cw_sessions WHERE session_id = ?", (self.session_id,)).fetchone()
            self._open = dict.fromkeys(_open_tokens(row[0] if row else ""))
        return self._open

    def past_calls(self) -> dict[str, bool]:
        """Every call of the session and whether it was answered, folded from its events.

        The session row keeps only open calls; whether a call that is not open was answered
        or never made only matters to name the rule a refused batch breaks, so it is read here.
        """
        if self._past is None:
            rows = self.conn.execute(
                "SELECT seq, type, payload FROM cw_events WHERE session_id = ? "
                "AND type IN ('message.assistant', 'tool.result') ORDER BY seq",
                (self.session_id,),
            )
            self._past = final_index(rebuild_index(rows))[0]
        return self._past

    def call_states(self, call_ids: Sequence[str]) -> Mapping[str, bool]:
        open_tokens = self.open_tokens()
        states = {c: False for c in call_ids if canonical_str(c) in open_tokens}
        if len(states) < len(call_ids):
            past = self.past_calls()
            states.update((c, past[c]) for c in call_ids if c not in states and c in past)
        return states

    def any_calls(self) -> bool:
        return bool(self.open_tokens()) or bool(self.past_calls())

    def plan_prefixes(self) -> Mapping[int, str]:
        rows = self.conn.execute("SELECT epoch, prefix_sha256 FROM cw_plans WHERE session_id = ?", (self.session_id,))
        return {int(e): p for e, p in rows}

    def requests_built(self) -> int:
        row = self.conn.execute("SELECT requests_built FROM cw_sessions WHERE session_id = ?", (self.session_id,)).fetchone()
        return int(row[0]) if row else 0


def _open_tokens(text: str) -> list[str]:
    """The JSON strings of the open calls stored as ``text``."""
    return text.split("\n")[:-1]


def _cannot_write(error: StorageError) -> bool:
    """True when opening for writing failed because the file or its directory cannot be written here.

    SQLite answers "attempt to write a readonly database" when the file is not writable, and
    "unable to open database file" when the directory is not (the journal cannot be created).
    """
    cause = error.__cause__
    code = getattr(cause, "sqlite_errorcode", None)
    return isinstance(error, StoreReadOnly) or code in (_SQLITE_CANTOPEN, _SQLITE_READONLY_DIRECTORY)


_SQLITE_CANTOPEN = 14
_SQLITE_READONLY_DIRECTORY = 1544


def _appended_alone(conn: sqlite3.Connection, session_id: str, event: PreparedEvent, expected_seq: int) -> bool:
    """For a batch of one event the rules look at by itself: move the last seq and index the
    event in one statement, and return True.

    * An event no rule reads (a user message, a frame): the seq moves.
    * A tool result: the seq moves and its call is answered only if the call is open,
      which is all the rules ask of it; when nothing was written this returns False, and
      the general path raises SeqConflict or names the rule the batch breaks.
    * An assistant message: the rules ask nothing of it (its call ids are unique, which its
      payload type checks); its calls are opened as :func:`_write_index` would open them.

    Anything else returns False and takes the general path. A stale ``expected_seq``
    raises SeqConflict, as :func:`_advance_last_seq` would.
    """
    kind = event.type
    seq = expected_seq + 1
    if kind == "tool.result":
        if expected_seq == 0:
            return False  # no call was ever made: the general path names the rule
        needle = f"\n{canonical_str(event.typed_payload().call_id)}\n"
        return conn.execute(_ANSWER_OPEN_CALL, (seq, needle, session_id, expected_seq, needle)).rowcount == 1
    if kind == "message.assistant":
        tokens = [canonical_str(call.id) for call in event.typed_payload().tool_calls]
        opened = "".join(f"{token}\n" for token in tokens)
        if expected_seq == 0 or not tokens:  # a new session's row is made with the message's calls open
            _advance_last_seq(conn, session_id, expected_seq, seq, opened=opened)
            return True
        if len(tokens) > _MAX_CALLS_ALONE:
            return False
        moved = conn.execute(
            _OPEN_CALLS[len(tokens)], (seq, *(f"\n{token}\n" for token in tokens), opened, session_id, expected_seq)
        )
        if moved.rowcount != 1:
            raise _seq_conflict(conn, session_id, expected_seq)
        return True
    if kind in CHECKED_TYPES:
        return False
    _advance_last_seq(conn, session_id, expected_seq, seq)
    return True


def _advance_last_seq(conn: sqlite3.Connection, session_id: str, expected_seq: int, last_seq: int, *, opened: str = "") -> None:
    """Move the session's last seq from ``expected_seq`` to ``last_seq``, or raise SeqConflict.

    The check and the write are one statement: the append transaction rolls it back if
    anything after it fails. A new session's row starts with the calls ``opened`` lists open.
    """
    if expected_seq == 0:
        moved = conn.execute(_NEW_SESSION, (session_id, last_seq, opened))
    else:
        moved = conn.execute(_MOVE_SEQ, (last_seq, session_id, expected_seq))
    if moved.rowcount != 1:
        raise _seq_conflict(conn, session_id, expected_seq)


def _seq_conflict(conn: sqlite3.Connection, session_id: str, expected_seq: int) -> SeqConflict:
    row = conn.execute("SELECT last_seq FROM cw_sessions WHERE session_id = ?", (session_id,)).fetchone()
    return SeqConflict(session_id, expected_seq=expected_seq, actual_seq=row[0] if row else 0)


def _write_index(conn: sqlite3.Connection, session_id: str, changes: IndexChanges, reader: _IndexReader) -> None:
    if changes.empty:
        return  # most batches (user messages, frames) touch no indexed fact
    # Each statement runs only when it has rows: most batches touch one kind of fact.
    if changes.calls_opened or changes.calls_answered:
        # Applied in the order of the events, and of the calls within a message, as lone appends apply them.
        updates = sorted(
            [(seq, index, call_id, False) for index, (call_id, seq) in enumerate(changes.calls_opened)]
            + [(seq, index, call_id, True) for index, (call_id, seq) in enumerate(changes.calls_answered)]
        )
        tokens = reader.open_tokens()
        for _, _, call_id, answered in updates:
            token = canonical_str(call_id)
            tokens.pop(token, None)  # a reused id starts over: it moves to the end
            if not answered:
                tokens[token] = None
        conn.execute(
            "UPDATE cw_sessions SET open_calls = ? WHERE session_id = ?", ("".join(f"{t}\n" for t in tokens), session_id)
        )
    if changes.plans:
        conn.executemany(
            "INSERT INTO cw_plans (session_id, epoch, prefix_sha256) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id, epoch) DO UPDATE SET prefix_sha256 = excluded.prefix_sha256",
            [(session_id, epoch, prefix) for epoch, prefix in changes.plans],
        )
    if changes.requests_built is not None:
        conn.execute("UPDATE cw_sessions SET requests_built = ? WHERE session_id = ?", (changes.requests_built, session_id))


def _reindex(conn: sqlite3.Connection) -> None:
    """Index the events stored before the session-rules index existed (into the latest schema)."""
    for (session_id,) in conn.execute("SELECT session_id FROM cw_sessions").fetchall():
        rows = conn.execute(
            "SELECT seq, type, payload FROM cw_events WHERE session_id = ? AND type IN "
            "('message.assistant', 'tool.result', 'context.plan.created', 'context.epoch.rotated', 'context.request.built') "
            "ORDER BY seq",
            (session_id,),
        )
        calls, plans, requests = final_index(rebuild_index(rows))
        open_calls = "".join(f"{canonical_str(call_id)}\n" for call_id, answered in calls.items() if not answered)
        conn.execute(
            "UPDATE cw_sessions SET open_calls = ?, requests_built = ? WHERE session_id = ?", (open_calls, requests, session_id)
        )
        conn.executemany(
            "INSERT INTO cw_plans (session_id, epoch, prefix_sha256) VALUES (?, ?, ?) "
            "ON CONFLICT (session_id, epoch) DO UPDATE SET prefix_sha256 = excluded.prefix_sha256",
            [(session_id, epoch, prefix) for epoch, prefix in plans.items()],
        )


def _row(r: tuple[Any, ...]) -> StoredRow:
    return StoredRow(
        session_id=r[0],
        seq=r[1],
        type=r[2],
        payload_json=r[3],
        payload_sha256=r[4],
        at=parse_instant(r[5]),
        idempotency_key=r[6],
    )


def _checkpoint_values(c: StoredCheckpoint) -> tuple[Any, ...]:
    return (c.session_id, c.seq, c.head_sha256, c.format, c.body, c.body_sha256, c.seal)


def _checkpoint(r: tuple[Any, ...]) -> StoredCheckpoint:
    return StoredCheckpoint(session_id=r[0], seq=int(r[1]), head_sha256=r[2], format=r[3], body=r[4], body_sha256=r[5], seal=r[6])
