"""``GET .../why`` and ``GET .../requests/{n}/diff`` over HTTP, on SQLite and on PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright import models
from contextwright.client import Client
from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.provider import ScriptedProvider
from tests.service.conftest import AGENT

MODEL = models.anthropic("claude-sonnet-4-6")
PASSING = "\n".join(f"tests/test_mod.py::test_ok_{i} PASSED" for i in range(300))
TEST_RUN = f"{PASSING}\ntests/test_mod.py::test_round FAILED\nE   AssertionError: 10.004 != 10.0\n==== 1 failed, 300 passed ===="


@pytest.fixture(scope="module")
def recorded(service):
    """A session over HTTP: a test run compressed on arrival, a compaction, a last question."""
    key = service.key(f"why-{uuid.uuid4().hex[:6]}")
    sid = f"s-{uuid.uuid4().hex[:10]}"
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="t1", name="run_tests", arguments={}),)),
            AssistantMessage(text="One failure in test_round; fixing it."),
            AssistantMessage(text="Done."),
        ]
    )
    with Client(service.url, key) as client:
        session = client.session(sid, agent=AGENT, model=MODEL)
        session.user("CI fails on main: fix test_round in billing/ledger.py.")
        session.send(provider.create)
        session.tool_result("t1", TEST_RUN, exit_code=1)
        session.send(provider.create)
        session.user("Anything else?")
        assert session.compact() is not None
        session.send(provider.create)
    return service, key, sid


def _get(service, key: str, path: str, **params) -> httpx2.Response:
    with httpx2.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        return http.get(path, params=params)


def test_why_names_the_compressor_and_the_pointer_reads_the_original_back(recorded):
    service, key, sid = recorded
    answer = _get(service, key, f"/v1/sessions/{sid}/why", text="test_ok_250", request=1)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["fate"] == "compressed" and body["hidden"] is True
    assert body["hidden_by"]["what"] == "compressed" and "pytest" in body["hidden_by"]["detail"]
    original = _get(service, key, f"/v1/sessions/{sid}/artifacts/{body['pointer']}")
    assert original.status_code == 200 and "test_ok_250" in original.json()["content"]
    # Check: the failure line is shown; by the last request the compaction folded it.
    assert _get(service, key, f"/v1/sessions/{sid}/why", text="test_round FAILED", request=1).json()["fate"] == "shown"
    last = _get(service, key, f"/v1/sessions/{sid}/why", text="10.004 != 10.0").json()
    assert last["request_index"] == 2 and last["fate"] == "compacted"
    assert last["hidden_by"]["what"] == "compacted" and last["left"]


def test_the_diff_route_shows_what_the_compaction_removed_and_added(recorded):
    service, key, sid = recorded
    response = _get(service, key, f"/v1/sessions/{sid}/requests/2/diff")
    assert response.status_code == 200, response.text
    diff = response.json()
    assert diff["previous"] == 1 and diff["counts"]["removed"] >= 3 and diff["counts"]["kept"] >= 1
    removed = [c for c in diff["changes"] if c["status"] == "removed"]
    assert all(c["cause"].startswith("folded by the compaction") for c in removed)
    assert any(c["after"] and c["after"]["budget_class"] == "summary" for c in diff["changes"] if c["status"] == "added")
    assert diff["events_between"]["context.compacted"] == 1
    kept = next(c for c in diff["changes"] if c["status"] == "kept")
    assert kept["cache"] == "read" and kept["after"]["envelope"]


def test_the_routes_refuse_what_they_cannot_answer(recorded):
    service, key, sid = recorded
    beyond = _get(service, key, f"/v1/sessions/{sid}/requests/9/diff")
    assert beyond.status_code == 404 and "there is no request 9" in beyond.json()["detail"]
    assert _get(service, key, f"/v1/sessions/{sid}/why", text="x", request=9).status_code == 404
    assert _get(service, key, f"/v1/sessions/{sid}/why", text="   ").status_code == 422
    assert _get(service, key, f"/v1/sessions/{sid}/why").status_code == 422
    # Another tenant's key reads the session as missing.
    other = service.key(f"other-{uuid.uuid4().hex[:6]}")
    assert _get(service, other, f"/v1/sessions/{sid}/why", text="test_round").status_code == 404
    assert _get(service, other, f"/v1/sessions/{sid}/requests/1/diff").status_code == 404


def test_the_misses_route_names_each_requests_uncached_input_by_cause(recorded):
    service, key, sid = recorded
    response = _get(service, key, f"/v1/sessions/{sid}/misses")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["rule_set"] == "anthropic" and [p["index"] for p in body["points"]] == [0, 1, 2]
    for point in body["points"]:
        assert sum(point["by_cause"].values()) == point["uncached_tokens"]
    first, _, after_compaction = body["points"]
    assert first["predicted_cache_read_tokens"] == 0 and first["main_cause"] is not None
    assert "compaction" in after_compaction["by_cause"], after_compaction
    other = service.key(f"other-{uuid.uuid4().hex[:6]}")
    assert _get(service, other, f"/v1/sessions/{sid}/misses").status_code == 404
