"""Schema migrations, one append-only list per backend.

A shipped migration is never edited: schema changes are new entries at the end.
Each store records the versions it has applied in ``cw_migrations``; opening a
store applies whatever is pending, and refuses a store that has versions this
code does not know (it was written by a newer Contextwright).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Migration:
    """One schema step. ``{schema}`` in a statement is replaced by the target schema (PostgreSQL)."""

    version: int
    name: str
    statements: tuple[str, ...]
    reindex: bool = False
    """After the statements, rebuild the session-rules index from the stored events."""


SQLITE: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="events and sessions",
        statements=(
            """CREATE TABLE cw_events (
                session_id TEXT NOT NULL,
                seq INTEGER NOT NULL CHECK (seq >= 1),
                type TEXT NOT NULL,
                payload TEXT NOT NULL,
                payload_sha256 TEXT NOT NULL,
                at TEXT NOT NULL,
                idempotency_key TEXT,
                PRIMARY KEY (session_id, seq)
            ) WITHOUT ROWID""",
            """CREATE UNIQUE INDEX cw_events_idempotency
                ON cw_events (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL""",
            """CREATE TABLE cw_sessions (
                session_id TEXT PRIMARY KEY,
                last_seq INTEGER NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        version=2,
        name="store settings",
        statements=("CREATE TABLE cw_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",),
    ),
    Migration(
        version=3,
        name="artifacts",
        statements=(
            """CREATE TABLE cw_artifacts (
                ref TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                size_chars INTEGER NOT NULL,
                content TEXT NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        version=4,
        name="session rules index",
        statements=(
            """CREATE TABLE cw_tool_calls (
                session_id TEXT NOT NULL,
                call_id TEXT NOT NULL,
                call_seq INTEGER NOT NULL,
                result_seq INTEGER,
                PRIMARY KEY (session_id, call_id)
            ) WITHOUT ROWID""",
            """CREATE TABLE cw_plans (
                session_id TEXT NOT NULL,
                epoch INTEGER NOT NULL,
                prefix_sha256 TEXT NOT NULL,
                PRIMARY KEY (session_id, epoch)
            ) WITHOUT ROWID""",
            "ALTER TABLE cw_sessions ADD COLUMN requests_built INTEGER NOT NULL DEFAULT 0",
        ),
        reindex=True,
    ),
    Migration(
        version=5,
        name="open tool calls kept with the session",
        statements=(
            # The calls still waiting for a result, each as its JSON string and a newline, in the
            # session row every append already rewrites: a commit writes one page fewer than with
            # a table of its own. Answered calls are read from the events when a refusal needs them.
            "ALTER TABLE cw_sessions ADD COLUMN open_calls TEXT NOT NULL DEFAULT ''",
            """UPDATE cw_sessions SET open_calls = COALESCE((
                SELECT group_concat(call_id || char(10), '') FROM (
                    SELECT call_id FROM cw_tool_calls
                    WHERE cw_tool_calls.session_id = cw_sessions.session_id AND result_seq IS NULL
                    ORDER BY call_seq, call_id
                )
            ), '')""",
            "DROP TABLE cw_tool_calls",
        ),
    ),
    Migration(
        version=6,
        name="session checkpoints",
        statements=(
            # A cache of each session's folded state (one row per session, rewritten in place). Not
            # WITHOUT ROWID: bodies are large, and SQLite keeps large rows better in a rowid table.
            """CREATE TABLE cw_checkpoints (
                session_id TEXT PRIMARY KEY,
                seq INTEGER NOT NULL CHECK (seq >= 1),
                head_sha256 TEXT NOT NULL,
                format TEXT NOT NULL,
                body TEXT NOT NULL,
                body_sha256 TEXT NOT NULL,
                seal TEXT NOT NULL
            )""",
        ),
    ),
)

POSTGRES: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="events and sessions",
        statements=(
            """CREATE TABLE {schema}.cw_events (
                session_id TEXT NOT NULL,
                seq BIGINT NOT NULL CHECK (seq >= 1),
                type TEXT NOT NULL,
                payload TEXT NOT NULL,
                payload_sha256 TEXT NOT NULL,
                at TIMESTAMPTZ NOT NULL,
                idempotency_key TEXT,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE UNIQUE INDEX cw_events_idempotency
                ON {schema}.cw_events (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL""",
            """CREATE TABLE {schema}.cw_sessions (
                session_id TEXT PRIMARY KEY,
                last_seq BIGINT NOT NULL
            )""",
        ),
    ),
    Migration(
        version=2,
        name="store settings",
        statements=("CREATE TABLE {schema}.cw_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",),
    ),
    Migration(
        version=3,
        name="artifacts",
        statements=(
            """CREATE TABLE {schema}.cw_artifacts (
                ref TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                size_chars BIGINT NOT NULL,
                content TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        version=4,
        name="session rules index",
        statements=(
            """CREATE TABLE {schema}.cw_tool_calls (
                session_id TEXT NOT NULL,
                call_id TEXT NOT NULL,
                call_seq BIGINT NOT NULL,
                result_seq BIGINT,
                PRIMARY KEY (session_id, call_id)
            )""",
            """CREATE TABLE {schema}.cw_plans (
                session_id TEXT NOT NULL,
                epoch BIGINT NOT NULL,
                prefix_sha256 TEXT NOT NULL,
                PRIMARY KEY (session_id, epoch)
            )""",
            "ALTER TABLE {schema}.cw_sessions ADD COLUMN requests_built BIGINT NOT NULL DEFAULT 0",
            # Content holding NUL (which PostgreSQL text refuses) is stored as its JSON string.
            "ALTER TABLE {schema}.cw_artifacts ADD COLUMN encoding TEXT NOT NULL DEFAULT 'text'",
        ),
        reindex=True,
    ),
    Migration(
        version=5,
        name="session checkpoints",
        statements=(
            """CREATE TABLE {schema}.cw_checkpoints (
                session_id TEXT PRIMARY KEY,
                seq BIGINT NOT NULL CHECK (seq >= 1),
                head_sha256 TEXT NOT NULL,
                format TEXT NOT NULL,
                body TEXT NOT NULL,
                body_sha256 TEXT NOT NULL,
                seal TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        version=6,
        name="idempotency keys indexed in code point order",
        statements=(
            # A lookup by key prefix is a range in code point order; an index in the database's
            # collation (which may ignore punctuation) cannot answer it. Equal keys are equal bytes
            # under any deterministic collation, so uniqueness is unchanged.
            """CREATE UNIQUE INDEX cw_events_idempotency_c
                ON {schema}.cw_events (session_id, idempotency_key COLLATE "C") WHERE idempotency_key IS NOT NULL""",
            "DROP INDEX {schema}.cw_events_idempotency",
        ),
    ),
)


def latest_version(migrations: tuple[Migration, ...]) -> int:
    """The version a fully migrated store has."""
    return migrations[-1].version if migrations else 0


def check_list(migrations: tuple[Migration, ...]) -> None:
    """Versions must run 1, 2, 3, ... with no gap (guards against a mis-edited list)."""
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise AssertionError(f"migration {migration.name!r} has version {migration.version}, expected {expected}")


check_list(SQLITE)
check_list(POSTGRES)
