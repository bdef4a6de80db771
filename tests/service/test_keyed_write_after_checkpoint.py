"""A keyed write on a session reopened from its checkpoint finds its key without reading the history."""

from __future__ import annotations

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright.client import Client
from contextwright.service import ServiceConfig, create_app
from contextwright.service.limits import RateLimit
from contextwright.testing.service import serving
from tests.service.conftest import AGENT
from tests.service.test_api import MODEL, assert_problem

# The engine's default interval between checkpoints, passed with room to spare.
MESSAGES = 420


def _worker(store_url: str):
    return create_app(ServiceConfig(store=store_url, rate_limit=RateLimit(per_second=10_000, burst=10_000)))


def test_a_keyed_write_on_a_reopened_session_reads_nothing_before_the_checkpoint(tmp_path):
    store_url = f"sqlite:///{tmp_path}/store.db"
    first = _worker(store_url)
    key = first.state.store.create_key("tenant")[1]
    headers = {"Authorization": f"Bearer {key}"}
    with serving(first) as url, httpx2.Client(base_url=url, headers=headers, timeout=30) as api:
        with Client(url, key) as client:
            client.session("long", agent=AGENT, model=MODEL)
        early = api.post("/v1/sessions/long/messages", json={"text": "first", "idempotency_key": "early-1"})
        assert early.status_code == 201, early.text
        for i in range(MESSAGES):
            assert api.post("/v1/sessions/long/messages", json={"text": f"message {i}"}).status_code == 201
        assert api.post("/v1/sessions/long/requests", json={}).status_code == 201
        api.post("/v1/sessions/long/messages", json={"text": "after the checkpoint"})
        log_id = first.state.store.session("tenant", "long").log_session_id
        checkpoint = first.state.sessions.log.checkpoint(log_id)
    assert checkpoint is not None and checkpoint.seq > MESSAGES

    # Another worker (or this one restarted) opens the session from its checkpoint.
    second = _worker(store_url)
    inner = second.state.sessions.log
    reads: list[tuple[int, int | None]] = []
    read = inner._read

    def counted(session_id: str, *, after_seq: int, limit: int | None):
        if session_id == log_id:
            reads.append((after_seq, limit))
        return read(session_id, after_seq=after_seq, limit=limit)

    inner._read = counted
    with serving(second) as url, httpx2.Client(base_url=url, headers=headers, timeout=30) as api:
        body = {"text": "keyed", "idempotency_key": "late-1"}
        new = api.post("/v1/sessions/long/messages", json=body)
        again = api.post("/v1/sessions/long/messages", json=body)
        assert new.status_code == 201 and again.status_code == 200, (new.text, again.text)
        assert again.json()["replayed"] and again.json()["events"] == new.json()["events"]
        # The key stored before the checkpoint is still found: replayed with the same body, refused with another.
        replay = api.post("/v1/sessions/long/messages", json={"text": "first", "idempotency_key": "early-1"})
        assert replay.status_code == 200 and replay.json()["events"] == early.json()["events"]
        assert replay.json()["last_seq"] == new.json()["last_seq"]
        assert_problem(
            api.post("/v1/sessions/long/messages", json={"text": "other", "idempotency_key": "early-1"}),
            409,
            "idempotency-conflict",
        )
        # Asking to inspect a request that does not exist needs no history either.
        assert_problem(api.get("/v1/sessions/long/requests/1"), 404, "not-found")
    assert reads, "the reopened session read nothing from the log"
    # The event at the checkpoint's seq is read to check the checkpoint still matches; nothing before it.
    assert min(after for after, _ in reads) >= checkpoint.seq - 1, reads
