"""Schema migrations: blank stores, stores at every earlier version, and newer stores."""

from __future__ import annotations

import sqlite3

import pytest

from contextwright.canonical import content_hash
from contextwright.clock import FixedClock
from contextwright.errors import SchemaTooNew
from contextwright.log import _migrations
from contextwright.log.sqlite import SQLiteEventLog
from contextwright.testing.contract import user

# A shipped migration is never edited. Add a new entry instead, and pin its hash here.
SHIPPED = {
    "sqlite": {
        1: "sha256:8bccb0f600f959a3c27577100d031dbf17bc6abffd98d397c4ad54fe0225a150",
        2: "sha256:b742f7c661f657660d6a71ecfdf47fdfb98e0215f929fe77b89829c3f7c252e9",
        3: "sha256:5889c8d636235a90872ba783b1c5cd9eaf9727052a5f800bbb47eb36671f4a04",
        4: "sha256:e688c581fa675718fdfcb49c9b28bff56f3ac4ad4e322a97cc0a313645735aeb",
        5: "sha256:f8520f30a131c4c31bc64542e73972a4f622721012ca4fedc840ae06c02508f6",
        6: "sha256:d8833cf187901b0832120d81c84e87b877266dbfafed7d6234f57c96912784e3",
    },
    "postgres": {
        1: "sha256:8676b39f04471c2a2bdc7defd8981625da399044e5dadd98ea159b228a735a32",
        2: "sha256:09db9308513bca664c9f075d5b7c17420020fe39d5f1e3a43d9aa895c53e4ce2",
        3: "sha256:d3642232f6162bd970935f1c915d617683f9751aed08f35e4e67cd96f4778a08",
        4: "sha256:ffd83d18741ea3bae36437ec95e5174a195b5b350e233db7d0c0ae3422462f46",
        5: "sha256:8f5d55f69a0647c759350a2008a7af1572a71ce51bfc422770a390d128e2c876",
        6: "sha256:e27a60d9519fdd1e223831165b30ed0e27b5e46414025f2bfb6573f71bf02862",
    },
}
LISTS = {"sqlite": _migrations.SQLITE, "postgres": _migrations.POSTGRES}


@pytest.mark.parametrize("backend", sorted(LISTS))
def test_shipped_migrations_are_unchanged(backend):
    actual = {m.version: content_hash([m.name, list(m.statements)]) for m in LISTS[backend]}
    for version, digest in SHIPPED[backend].items():
        assert actual[version] == digest, f"{backend} migration {version} was edited after it shipped"
    assert set(actual) >= set(SHIPPED[backend])


def _sqlite_at_version(path, version: int) -> None:
    """Build a store by hand as an older Contextwright would have left it."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cw_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for migration in _migrations.SQLITE[:version]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO cw_migrations VALUES (?, ?, ?)", (migration.version, migration.name, "2026-01-01T00:00:00.000000Z")
        )
    conn.commit()
    conn.close()


def test_blank_sqlite_store_gets_every_migration(tmp_path):
    with SQLiteEventLog(tmp_path / "blank.db", clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.SQLITE)


@pytest.mark.parametrize("version", range(1, _migrations.latest_version(_migrations.SQLITE) + 1))
def test_sqlite_store_at_an_earlier_version_is_upgraded_and_keeps_its_events(tmp_path, version):
    path = tmp_path / f"v{version}.db"
    _sqlite_at_version(path, version)
    conn = sqlite3.connect(path)
    # An event written by that version, stored the way it stored events.
    conn.execute(
        "INSERT INTO cw_events VALUES ('s', 1, 'message.user', ?, ?, '2026-01-01T00:00:00.000000Z', NULL)",
        (
            '{"author":"user","steering":false,"text":"old"}',
            "sha256:" + __import__("hashlib").sha256(b'{"author":"user","steering":false,"text":"old"}').hexdigest(),
        ),
    )
    conn.execute("INSERT INTO cw_sessions (session_id, last_seq) VALUES ('s', 1)")
    conn.commit()
    conn.close()
    with SQLiteEventLog(path, clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.SQLITE)
        assert [e.payload.text for e in log.read("s")] == ["old"]
        log.append("s", [user("new")], expected_seq=1)
        assert log.setting("k", "v") == "v"  # the settings table exists after the upgrade
        assert log.get_artifact(log.put_artifact("full text")) == "full text"
        # The checkpoints table exists after the upgrade, and a checkpoint of the old events is kept.
        stored = log.put_checkpoint("s", seq=2, format="f1", body="{}", seal="")
        assert log.checkpoint("s") == stored and log.verify().ok


def test_sqlite_store_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "future.db"
    _sqlite_at_version(path, _migrations.latest_version(_migrations.SQLITE))
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO cw_migrations VALUES (999, 'from the future', '2030-01-01T00:00:00.000000Z')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew):
        SQLiteEventLog(path)


def test_reopening_applies_nothing_twice(tmp_path):
    path = tmp_path / "twice.db"
    SQLiteEventLog(path, clock=FixedClock()).close()
    SQLiteEventLog(path, clock=FixedClock()).close()
    conn = sqlite3.connect(path)
    versions = [r[0] for r in conn.execute("SELECT version FROM cw_migrations ORDER BY version")]
    conn.close()
    assert versions == [m.version for m in _migrations.SQLITE]


@pytest.mark.postgres
def test_postgres_blank_and_reopened_and_newer(postgres_dsn, postgres_schema):
    import psycopg

    from contextwright.log.postgres import PostgresEventLog

    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.POSTGRES)
        log.append("s", [user("a")], expected_seq=0)
    with PostgresEventLog(postgres_dsn, schema=postgres_schema) as log:
        assert [e.payload.text for e in log.read("s")] == ["a"]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {postgres_schema}.cw_migrations VALUES (999, 'future', now())")
    with pytest.raises(SchemaTooNew):
        PostgresEventLog(postgres_dsn, schema=postgres_schema)


def _postgres_version_of(name: str) -> int:
    return next(m.version for m in _migrations.POSTGRES if m.name == name)


def _undo_postgres_key_index(conn, schema: str) -> None:
    """Put back the idempotency index as stores before the code point order index had it."""
    conn.execute(f"DROP INDEX {schema}.cw_events_idempotency_c")
    conn.execute(
        f"CREATE UNIQUE INDEX cw_events_idempotency ON {schema}.cw_events (session_id, idempotency_key) "
        "WHERE idempotency_key IS NOT NULL"
    )


@pytest.mark.postgres
def test_postgres_store_before_the_code_point_index_gets_it(postgres_dsn, postgres_schema):
    import psycopg

    from contextwright.errors import IdempotencyConflict
    from contextwright.log.postgres import PostgresEventLog

    previous = _postgres_version_of("idempotency keys indexed in code point order") - 1
    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        log.append("s", [user("old", key="k:1"), user("other", key="k;")], expected_seq=0)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        _undo_postgres_key_index(conn, postgres_schema)
        conn.execute(f"DELETE FROM {postgres_schema}.cw_migrations WHERE version > %s", (previous,))
    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.POSTGRES)
        assert [e.payload.text for e in log.read_keyed("s", "k:")] == ["old"]
        with pytest.raises(IdempotencyConflict):
            log.append("s", [user("changed", key="k:1")], expected_seq=2)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        indexes = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (postgres_schema,))]
    assert "cw_events_idempotency_c" in indexes and "cw_events_idempotency" not in indexes


@pytest.mark.postgres
def test_postgres_store_at_the_previous_version_gets_the_checkpoints_table(postgres_dsn, postgres_schema):
    import psycopg

    from contextwright.log.postgres import PostgresEventLog

    previous = _postgres_version_of("session checkpoints") - 1
    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        log.append("s", [user("old")], expected_seq=0)
    # Back to the previous version, as a store written before the checkpoints table was.
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        _undo_postgres_key_index(conn, postgres_schema)
        conn.execute(f"DROP TABLE {postgres_schema}.cw_checkpoints")
        conn.execute(f"DELETE FROM {postgres_schema}.cw_migrations WHERE version > %s", (previous,))
    with PostgresEventLog(postgres_dsn, schema=postgres_schema, clock=FixedClock()) as log:
        assert log.schema_version() == _migrations.latest_version(_migrations.POSTGRES)
        assert [e.payload.text for e in log.read("s")] == ["old"]
        stored = log.put_checkpoint("s", seq=1, format="f1", body="{}", seal="")
        assert log.checkpoint("s") == stored and log.verify().ok


@pytest.mark.postgres
def test_postgres_concurrent_openers_migrate_once(postgres_dsn, postgres_schema):
    import threading

    from contextwright.log.postgres import PostgresEventLog

    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            PostgresEventLog(postgres_dsn, schema=postgres_schema, pool_size=1).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
