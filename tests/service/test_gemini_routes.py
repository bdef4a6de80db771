"""A Gemini session over HTTP: the request routes render its own wire, refuse another's, and say what they cannot do."""

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
from tests.service.conftest import AGENT

MODEL = models.gemini("gemini-2.5-flash")


@pytest.fixture(scope="module")
def built(service):
    """A Gemini session with one request built over HTTP, with no wire named."""
    key = service.key(f"gemini-{uuid.uuid4().hex[:6]}")
    sid = f"s-{uuid.uuid4().hex[:10]}"
    with Client(service.url, key) as client:
        session = client.session(sid, agent=AGENT, model=MODEL)
        session.user("List the failing tests.")
    api = httpx2.Client(base_url=service.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    with api:
        answer = api.post(f"/v1/sessions/{sid}/requests", json={})
        assert answer.status_code == 201, answer.text
        yield api, sid, answer.json()


def test_the_next_request_of_a_gemini_session_is_the_gemini_body(built):
    _, _, answer = built
    body = answer["body"]
    assert answer["wire"] == "gemini"
    assert set(body) == {"model", "contents", "config"} and body["model"] == "gemini-2.5-flash"
    assert body["contents"][-1]["role"] == "user" and "List the failing tests." in str(body["contents"][-1])
    assert body["config"]["system_instruction"]["parts"]


def test_inspecting_a_gemini_request_renders_the_same_gemini_body(built):
    api, sid, answer = built
    inspected = api.get(f"/v1/sessions/{sid}/requests/0")
    assert inspected.status_code == 200, inspected.text
    doc = inspected.json()
    assert doc["wire"] == "gemini" and doc["verified"] is True
    assert doc["body"] == answer["body"]
    # Check: naming the provider's own wire changes nothing.
    assert api.get(f"/v1/sessions/{sid}/requests/0", params={"wire": "gemini"}).json()["body"] == doc["body"]


@pytest.mark.parametrize("wire", ["anthropic", "openai_chat", "litellm"])
def test_another_providers_wire_is_refused_naming_the_gemini_wire(built, wire):
    api, sid, _ = built
    refused = api.get(f"/v1/sessions/{sid}/requests/0", params={"wire": wire})
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"] == f"a google model renders only to gemini, not {wire}"
    before = api.get(f"/v1/sessions/{sid}").json()["requests"]
    assert api.post(f"/v1/sessions/{sid}/requests", json={"wire": wire}).status_code == 422
    assert api.get(f"/v1/sessions/{sid}").json()["requests"] == before  # nothing was built


def test_misses_of_a_gemini_session_say_which_cache_rules_they_follow(built):
    api, sid, _ = built
    refused = api.get(f"/v1/sessions/{sid}/misses")
    assert refused.status_code == 422, refused.text
    doc = refused.json()
    assert doc["type"] == "/problems/invalid-operation"
    assert "anthropic, openai cache rules only" in doc["detail"] and "google (gemini-2.5-flash)" in doc["detail"]
