"""API keys (the CLI and the store) and the service tables' migrations."""

from __future__ import annotations

import sqlite3

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)
from typer.testing import CliRunner

from contextwright.canonical import content_hash
from contextwright.cli import app
from contextwright.errors import SchemaTooNew
from contextwright.service import _migrations
from contextwright.service.errors import InvalidTenant, KeyNotFound, SessionExists
from contextwright.service.store import PostgresServiceStore, SQLiteServiceStore, open_service_store

# A shipped migration is never edited. Add a new entry instead, and pin its hash here.
SHIPPED = {
    "sqlite": {1: "sha256:16587545a50ba226559715467e308019e9364d0dd999be7e7fefe0506da7f9d4"},
    "postgres": {1: "sha256:0a62c185bd7f67df3d80ef22ad991846c6dd97f1c8b8ad2bd85473c6e5549d41"},
}
LISTS = {"sqlite": _migrations.SQLITE, "postgres": _migrations.POSTGRES}
ROUNDS = 150
"""Sessions opened at once by many callers: the race lost about one round in a hundred."""

runner = CliRunner()


@pytest.mark.parametrize("backend", sorted(LISTS))
def test_shipped_service_migrations_are_unchanged(backend):
    actual = {m.version: content_hash([m.name, list(m.statements)]) for m in LISTS[backend]}
    for version, digest in SHIPPED[backend].items():
        assert actual[version] == digest, f"{backend} service migration {version} was edited after it shipped"


def test_keys_create_list_revoke_through_the_command_line(tmp_path):
    store = f"sqlite:///{tmp_path}/keys.db"
    created = runner.invoke(app, ["keys", "create", "acme", "--store", store, "--label", "ci"])
    assert created.exit_code == 0, created.output
    key = created.output.strip().splitlines()[-1]
    key_id = key.split("_")[1]
    with open_service_store(store) as keys:
        principal = keys.authenticate(key)
    assert principal is not None and principal.tenant == "acme" and principal.key_id == key_id

    # Check: only the hash is stored, never the key or its secret.
    raw = (tmp_path / "keys.db").read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("keys.db-*"))
    assert key.split("_", 2)[2].encode() not in raw

    listed = runner.invoke(app, ["keys", "list", "--store", store])
    assert listed.exit_code == 0 and key_id in listed.output and "active" in listed.output
    assert key.split("_", 2)[2] not in listed.output

    revoked = runner.invoke(app, ["keys", "revoke", key_id, "--store", store])
    assert revoked.exit_code == 0, revoked.output
    with open_service_store(store) as keys:
        assert keys.authenticate(key) is None
    assert "revoked" in runner.invoke(app, ["keys", "list", "--store", store]).output

    # Check: mistakes are one-line errors, not tracebacks.
    bad = runner.invoke(app, ["keys", "create", "Not A Tenant", "--store", store])
    assert bad.exit_code == 1 and "lowercase" in bad.output
    missing = runner.invoke(app, ["keys", "revoke", "0000000000000000", "--store", store])
    assert missing.exit_code == 1 and "no API key" in missing.output


def test_keys_that_almost_match_are_refused(tmp_path):
    with SQLiteServiceStore(tmp_path / "s.db") as keys:
        _, key = keys.create_key("acme")
        _, other = keys.create_key("beta")
        assert keys.authenticate(key).tenant == "acme"
        # Check: another key's secret under this key's id, a truncated key, a changed character.
        forged = f"cw_{key.split('_')[1]}_{other.split('_', 2)[2]}"
        for token in (forged, key[:-1], key[:-1] + ("x" if key[-1] != "x" else "y"), key + "A", "", "Bearer " + key):
            assert keys.authenticate(token) is None, token
        with pytest.raises(InvalidTenant):
            keys.create_key("ACME")
        with pytest.raises(KeyNotFound):
            keys.revoke_key("ffffffffffffffff")


def test_a_session_id_is_registered_once_per_tenant(tmp_path):
    with SQLiteServiceStore(tmp_path / "s.db") as store:
        first, new = store.register_session("acme", "t-1", agent="{}", model="{}", spec_sha256="sha256:a")
        again, new_again = store.register_session("acme", "t-1", agent="{}", model="{}", spec_sha256="sha256:a")
        assert new and not new_again and again == first and first.log_session_id == "acme/t-1"
        with pytest.raises(SessionExists):
            store.register_session("acme", "t-1", agent="{}", model="{}", spec_sha256="sha256:b")
        other, _ = store.register_session("beta", "t-1", agent="{}", model="{}", spec_sha256="sha256:b")
        assert other.log_session_id == "beta/t-1"
        assert [s.session_id for s in store.sessions("acme")] == ["t-1"]


def test_sqlite_service_tables_migrate_once_and_refuse_a_newer_store(tmp_path):
    path = tmp_path / "s.db"
    with SQLiteServiceStore(path) as store:
        assert store.schema_version() == _migrations.SQLITE[-1].version
        _, key = store.create_key("acme")
    # Check: reopening applies nothing twice and keeps the keys.
    with SQLiteServiceStore(path) as store:
        assert store.authenticate(key) is not None
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO cw_service_migrations VALUES (99, 'from the future', '2030-01-01T00:00:00.000000Z')")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew):
        SQLiteServiceStore(path)


@pytest.mark.postgres
def test_postgres_service_tables_migrate_once_under_concurrent_opens(postgres_dsn, postgres_schema):
    import threading

    stores: list[PostgresServiceStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresServiceStore(postgres_dsn, schema=postgres_schema))
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(stores) == 4
    record, key = stores[0].create_key("acme")
    assert stores[1].authenticate(key).key_id == record.key_id
    assert stores[2].schema_version() == _migrations.POSTGRES[-1].version
    for store in stores:
        store.close()


@pytest.mark.postgres
def test_postgres_registers_a_session_once_when_workers_open_it_at_once(postgres_dsn, postgres_schema):
    # Two agents open one session through two workers at the same moment: every caller gets the
    # record, exactly one of them as new. (The insert must not fail on the log id's own unique key.)
    import threading

    stores = [PostgresServiceStore(postgres_dsn, schema=postgres_schema, pool_size=4) for _ in range(2)]
    callers = 8
    outcomes: list[tuple[str, bool]] = []
    errors: list[BaseException] = []
    try:
        for n in range(ROUNDS):
            barrier = threading.Barrier(callers)
            threads = [
                threading.Thread(target=_register, args=(stores[i % 2], f"race-{n}", barrier, outcomes, errors))
                for i in range(callers)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert errors == []
        assert len(outcomes) == ROUNDS * callers
        assert sorted(sid for sid, new in outcomes if new) == sorted(f"race-{n}" for n in range(ROUNDS))
    finally:
        for store in stores:
            store.close()


def _register(store, session_id, barrier, outcomes, errors) -> None:
    barrier.wait()
    try:
        record, new = store.register_session("acme", session_id, agent="{}", model="{}", spec_sha256="sha256:a")
        outcomes.append((record.session_id, new))
    except BaseException as exc:  # collected for the assertion in the test
        errors.append(exc)
