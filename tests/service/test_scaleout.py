"""Several workers on one store: shared sessions, racing writes, compaction leases, killed workers, concurrent starts."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.service.conftest import AGENT, NEEDS, _store_url

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright import models
from contextwright.client import Client
from contextwright.events import AssistantMessage
from contextwright.service import ServiceConfig, create_app
from contextwright.service.leases import open_leases
from contextwright.service.limits import RateLimit
from contextwright.service.store import open_service_store
from contextwright.testing.service import WorkerProcess, serving

MODEL = models.anthropic("claude-sonnet-4-6")
START_TIMEOUT = 180.0
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    urls = _store_url(request.param, tmp_path_factory, request)
    yield next(urls)
    next(urls, None)


def config(store_url: str) -> ServiceConfig:
    return ServiceConfig(store=store_url, rate_limit=RateLimit(per_second=10_000, burst=10_000), pool_size=4)


def turn(session, n: int) -> None:
    session.user(f"Turn {n}: look at module {n} and report what it does, in detail.")
    built = session.next_request()
    session.adapter.record_assistant(AssistantMessage(text=f"Module {n} parses the billing export. " * 20))
    return built


def events(client: Client, session_id: str) -> list[dict]:
    return client.session(session_id, agent=AGENT, model=MODEL).history.events


def test_two_workers_one_session_one_pinned_the_plan_the_other_serves_the_next_request(store_url):
    app_a, app_b = create_app(config(store_url)), create_app(config(store_url))
    _, key = app_a.state.store.create_key("acme")
    with serving(app_a) as url_a, serving(app_b) as url_b, Client(url_a, key) as a, Client(url_b, key) as b:
        on_a = a.session("shared", agent=AGENT, model=MODEL)
        on_b = b.session("shared", agent=AGENT, model=MODEL)
        on_b.stats()  # worker B holds the session before any plan exists
        first = turn(on_a, 1)
        # Check: worker B serves the next request on the plan worker A pinned.
        second = turn(on_b, 2)
        assert second.prefix_sha256 == first.prefix_sha256
        # Check: each worker rebuilds the other's request byte for byte.
        assert a.session("shared", agent=AGENT, model=MODEL).inspect(1)["verified"]
        assert on_b.inspect(0)["verified"]
    for app in (app_a, app_b):
        app.state.store.close()


def test_racing_writes_without_a_seq_are_all_stored_once_and_a_stale_seq_gets_409(store_url):
    app_a, app_b = create_app(config(store_url)), create_app(config(store_url))
    _, key = app_a.state.store.create_key("acme")
    with serving(app_a) as url_a, serving(app_b) as url_b:
        with Client(url_a, key) as client:
            client.session("race", agent=AGENT, model=MODEL)
        headers = {"Authorization": f"Bearer {key}"}
        retries: list[int] = []

        def writer(url: str, who: str) -> None:
            with httpx2.Client(base_url=url, headers=headers, timeout=60) as http:
                for i in range(15):
                    body = {"text": f"{who} {i}", "idempotency_key": f"{who}-{i}"}
                    response = http.post("/v1/sessions/race/messages", json=body)
                    assert response.status_code == 201, response.text
                    retries.append(int(response.headers.get("contextwright-retries", 0)))

        threads = [threading.Thread(target=writer, args=(url, f"w{n}")) for n, url in enumerate([url_a, url_b, url_a, url_b])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with Client(url_b, key) as client:
            stored = events(client, "race")
            # Check: gapless, and each acknowledged message exactly once.
            assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
            texts = [e["payload"]["text"] for e in stored if e["type"] == "message.user"]
            assert sorted(texts) == sorted(f"w{n} {i}" for n in range(4) for i in range(15))
            # Check: a write that names a seq the log has passed is refused with the current seq.
            with httpx2.Client(base_url=url_a, headers=headers, timeout=30) as http:
                response = http.post("/v1/sessions/race/messages", json={"text": "late", "expected_seq": 1})
            assert response.status_code == 409
            assert response.json()["current_seq"] == len(stored)
    for app in (app_a, app_b):
        app.state.store.close()


def test_concurrent_compaction_attempts_compact_once(store_url):
    calls: list[int] = []
    entered = threading.Event()

    def slow_compact(surface, **options):
        from contextwright.relief.compactor import compact

        calls.append(surface.upto_seq)
        entered.set()
        time.sleep(0.5)  # long enough that the other worker asks while this one holds the lease
        return compact(surface, **options)

    apps = [create_app(config(store_url)), create_app(config(store_url))]
    for app in apps:
        app.state.sessions.compactor = slow_compact
    _, key = apps[0].state.store.create_key("acme")
    with serving(apps[0]) as url_a, serving(apps[1]) as url_b:
        with Client(url_a, key) as client:
            session = client.session("fold", agent=AGENT, model=MODEL)
            for n in range(6):
                turn(session, n)
        answers: dict[str, dict] = {}

        def compact(url: str, name: str) -> None:
            with Client(url, key) as client:
                answers[name] = client.call("POST", "/v1/sessions/fold/compact")

        first = threading.Thread(target=compact, args=(url_a, "a"))
        first.start()
        assert entered.wait(10)
        second = threading.Thread(target=compact, args=(url_b, "b"))
        second.start()
        first.join()
        second.join()
        with Client(url_b, key) as client:
            stored = events(client, "fold")
    # Check: one compaction in the log; the worker that waited for the lease found it done.
    assert [e["type"] for e in stored].count("context.compacted") == 1
    assert sorted(a["compacted"] for a in answers.values()) == [False, True]
    # Check: the worker that waited folded the current log, not the history it had read before.
    assert len(calls) == 2 and calls[1] > calls[0]
    for app in apps:
        app.state.store.close()


_HOLDER = """
import sys, time
from contextwright.service.store import open_service_store
from contextwright.service.leases import open_leases
store = open_service_store(sys.argv[1])
lease = open_leases(store).acquire("compact:held", wait=5)
print("held" if lease else "busy", flush=True)
time.sleep(600)
"""


def test_a_killed_lease_holder_loses_its_lease(store_url):
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, store_url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = open_service_store(store_url)
        leases = open_leases(store)
        # Check: while the holder lives, nobody else gets the lease.
        assert leases.acquire("compact:held", wait=0.3) is None
        # Check: SIGKILL, no release; the lease is free at once (PostgreSQL ends the backend with the socket).
        holder.kill()
        holder.wait(timeout=30)
        lease = leases.acquire("compact:held", wait=10)
        assert lease is not None
        lease.release()
        leases.close()
        store.close()
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_worker_killed_mid_session_and_the_session_goes_on_on_another(store_url):
    workers = [WorkerProcess(config(store_url)).start(), WorkerProcess(config(store_url)).start()]
    try:
        store = open_service_store(store_url)
        _, key = store.create_key("acme")
        store.close()
        with Client(workers[0].url, key) as client:
            session = client.session("moving", agent=AGENT, model=MODEL)
            for n in range(3):
                turn(session, n)
        workers[0].kill()
        assert not workers[0].alive
        with Client(workers[1].url, key) as client:
            session = client.session("moving", agent=AGENT, model=MODEL)
            for n in range(3, 5):
                turn(session, n)
            # Check: every request, built on either worker, rebuilds byte for byte on the survivor.
            assert all(session.inspect(i)["verified"] for i in range(5))
            stored = events(client, "moving")
        assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
        # Check: a restarted worker picks the session up where the log is.
        workers[0].start()
        with Client(workers[0].url, key) as client:
            session = client.session("moving", agent=AGENT, model=MODEL)
            turn(session, 5)
            assert session.inspect(5)["verified"]
    finally:
        for worker in workers:
            worker.kill()


@pytest.mark.postgres
def test_workers_starting_together_on_a_fresh_schema_migrate_it_once(postgres_dsn, postgres_schema):
    import psycopg

    # Nothing migrated beforehand: each worker process migrates at start, all at once.
    workers = [WorkerProcess(config(f"{postgres_dsn}?schema={postgres_schema}")) for _ in range(4)]
    # Four interpreters importing the app at once on a shared machine can take well over the
    # usual start timeout; what is tested is the migration, not the start-up time.
    starters = [threading.Thread(target=functools.partial(w.start, timeout=START_TIMEOUT)) for w in workers]
    try:
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        assert all(w.alive for w in workers), [w.errors()[-500:] for w in workers]
        with psycopg.connect(postgres_dsn) as conn:
            for table in ("cw_migrations", "cw_service_migrations"):
                rows = conn.execute(f"SELECT version FROM {postgres_schema}.{table} ORDER BY version").fetchall()
                versions = [r[0] for r in rows]
                assert versions and versions == list(range(1, len(versions) + 1))
    finally:
        for worker in workers:
            worker.kill()


def test_a_keyed_write_stored_by_another_worker_after_the_lookup_is_answered_as_a_replay(store_url, monkeypatch):
    # Worker A looks the key up and finds nothing; worker B stores the same answer before A acts.
    # A's action then meets B's open tool call: it must answer B's events as a replay, not an error.
    app_a, app_b = create_app(config(store_url)), create_app(config(store_url))
    _, key = app_a.state.store.create_key("acme")
    headers = {"Authorization": f"Bearer {key}"}
    call = {"id": "c1", "name": "run_tests", "arguments": {}}
    body = {"text": "Running the tests.", "tool_calls": [call], "idempotency_key": "answer-1"}
    with serving(app_a) as url_a, serving(app_b) as url_b:
        with Client(url_a, key) as client:
            session = client.session("keyed", agent=AGENT, model=MODEL)
            session.user("Run the tests.")
            session.next_request()
        sessions_a = app_a.state.sessions
        lookup = sessions_a.replayed
        raced: list[int] = []

        def late_lookup(session, guard):
            found = lookup(session, guard)
            if found is None and not raced:
                with httpx2.Client(base_url=url_b, headers=headers, timeout=30) as http:
                    raced.append(http.post("/v1/sessions/keyed/assistant", json=body).status_code)
            return found

        monkeypatch.setattr(sessions_a, "replayed", late_lookup)
        with httpx2.Client(base_url=url_a, headers=headers, timeout=30) as http:
            response = http.post("/v1/sessions/keyed/assistant", json=body)
        assert raced == [201]
        assert response.status_code == 200, response.text
        assert response.json()["replayed"] is True
        with Client(url_b, key) as client:
            stored = events(client, "keyed")
        assert sum(1 for e in stored if e["type"] == "message.assistant") == 1
    for app in (app_a, app_b):
        app.state.store.close()
