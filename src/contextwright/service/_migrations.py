"""The service's own tables (API keys, the session registry), one append-only list per backend.

They live beside the event log's tables in the same store but keep their own version
table (``cw_service_migrations``), so the log's schema and the service's evolve apart.
A shipped migration is never edited: changes are new entries at the end.
"""

from __future__ import annotations

from contextwright.log._migrations import Migration, check_list

__all__ = ["POSTGRES", "SQLITE", "Migration"]

SQLITE: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="api keys and session registry",
        statements=(
            """CREATE TABLE cw_api_keys (
                key_id TEXT PRIMARY KEY,
                tenant TEXT NOT NULL,
                secret_sha256 TEXT NOT NULL,
                label TEXT NOT NULL,
                rate_per_second REAL,
                burst INTEGER,
                created_at TEXT NOT NULL,
                revoked_at TEXT
            ) WITHOUT ROWID""",
            "CREATE INDEX cw_api_keys_tenant ON cw_api_keys (tenant)",
            """CREATE TABLE cw_service_sessions (
                tenant TEXT NOT NULL,
                session_id TEXT NOT NULL,
                log_session_id TEXT NOT NULL UNIQUE,
                agent TEXT NOT NULL,
                model TEXT NOT NULL,
                spec_sha256 TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (tenant, session_id)
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        version=2,
        name="leases",
        # PostgreSQL needs no table: its leases are advisory locks (see service/leases.py).
        statements=(
            """CREATE TABLE cw_leases (
                name TEXT PRIMARY KEY,
                holder TEXT NOT NULL,
                expires_at REAL NOT NULL
            ) WITHOUT ROWID""",
        ),
    ),
)

POSTGRES: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="api keys and session registry",
        statements=(
            """CREATE TABLE {schema}.cw_api_keys (
                key_id TEXT PRIMARY KEY,
                tenant TEXT NOT NULL,
                secret_sha256 TEXT NOT NULL,
                label TEXT NOT NULL,
                rate_per_second DOUBLE PRECISION,
                burst INTEGER,
                created_at TEXT NOT NULL,
                revoked_at TEXT
            )""",
            "CREATE INDEX cw_api_keys_tenant ON {schema}.cw_api_keys (tenant)",
            """CREATE TABLE {schema}.cw_service_sessions (
                tenant TEXT NOT NULL,
                session_id TEXT NOT NULL,
                log_session_id TEXT NOT NULL UNIQUE,
                agent TEXT NOT NULL,
                model TEXT NOT NULL,
                spec_sha256 TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (tenant, session_id)
            )""",
        ),
    ),
)

check_list(SQLITE)
check_list(POSTGRES)
