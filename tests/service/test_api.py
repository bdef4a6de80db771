"""The API over a real uvicorn server: the whole loop, conflicts, idempotency, limits, bad input."""

from __future__ import annotations

import json
import math
import threading
import uuid

import pytest

from tests.service.conftest import NEEDS

pytest.importorskip("fastapi", reason=NEEDS)
pytest.importorskip("uvicorn", reason=NEEDS)
pytest.importorskip("httpx2", reason=NEEDS)

import httpx2

from contextwright import models
from contextwright.client import Client, ServiceProblem
from contextwright.errors import SeqConflict
from contextwright.events import AssistantMessage, ToolCall
from contextwright.testing.provider import ScriptedProvider
from tests.service.conftest import AGENT, MAX_BODY

MODEL = models.anthropic("claude-sonnet-4-6")
PROBLEM = "application/problem+json"


def sid() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


def http(service, key: str | None) -> httpx2.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx2.Client(base_url=service.url, headers=headers, timeout=30)


def open_session(service, key: str, session_id: str, model=None) -> dict:
    with Client(service.url, key) as client:
        client.session(session_id, agent=AGENT, model=model or MODEL)
    return {"session_id": session_id}


def assert_problem(response: httpx2.Response, status: int, slug: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    doc = response.json()
    assert doc["type"] == f"/problems/{slug}" and doc["status"] == status and doc["title"] and doc["detail"]
    return doc


def test_the_whole_agent_loop_through_the_client(service):
    key = service.key("loop")
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running the tests.", tool_calls=(ToolCall(id="toolu_1", name="run_tests", arguments={}),)),
            AssistantMessage(text="Fixed: the billing test expected a float."),
        ]
    )
    output = "FAILED tests/test_billing.py::test_total - assert 10 == 10.0\n" + "ok\n" * 400 + "1 failed, 41 passed"
    with Client(service.url, key) as client:
        session = client.session("ticket-4711", agent=AGENT, model=MODEL)
        session.user("CI fails on main. Fix it without changing the public API.")
        while True:
            session.send(provider.create)
            calls = session.pending_tool_calls()
            if not calls:
                break
            for call in calls:
                session.tool_result(call.id, output, exit_code=1)

        # Check: two requests went to the provider, the second carried the tool result.
        assert len(provider.bodies) == 2
        assert "CI fails on main" in json.dumps(provider.bodies[0]["messages"])
        assert "test_billing" in json.dumps(provider.bodies[1]["messages"])
        # Check: usage from the raw responses reached the stats.
        stats = session.stats()
        assert stats["requests"] == 2 and stats["requests_with_usage"] == 2 and stats["total_cost_usd"] is not None
        # Check: request 1 is rebuilt from the log and matches its hash; the body on the wire is the one sent.
        seen = session.inspect(1, wire="anthropic")
        assert seen["verified"] and seen["body"] == provider.bodies[1]
        # Check: the tool output is stored whole and readable through the session.
        stored = next(e for e in session.history.events if e["type"] == "artifact.stored")
        assert session.history.read_artifact(stored["payload"]["pointer"]["ref"]) == output
        assert not session.adapter.awaiting_model


def test_a_streamed_answer_is_recorded_once_complete(service):
    anthropic = pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
    key = service.key("stream")
    provider = ScriptedProvider([AssistantMessage(text="All tests pass now.")])
    sdk = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(provider.handler)))
    with Client(service.url, key) as client:
        session = client.session(sid(), agent=AGENT, model=MODEL)
        session.user("Run the tests.")
        with session.stream(sdk.messages.stream) as stream:
            text = "".join(stream.text_stream)
        assert text == "All tests pass now." and provider.bodies[0]["stream"] is True
        answer = next(e for e in session.history.events if e["type"] == "message.assistant")
        assert answer["payload"]["text"] == text
        assert session.history.series()[0]["output_tokens"] is not None
        # Check: a block that raises records nothing.
        provider.push(AssistantMessage(text="never recorded"))
        session.user("Again.")
        with pytest.raises(RuntimeError), session.stream(sdk.messages.stream):
            raise RuntimeError("the caller gave up")
        assert [e["payload"]["text"] for e in session.history.events if e["type"] == "message.assistant"] == [text]


def test_a_session_reopened_by_id_continues_where_it_was(service):
    key = service.key("reopen")
    with Client(service.url, key) as client:
        first = client.session("again", agent=AGENT, model=MODEL)
        first.user("hello")
        second = client.session("again", agent=AGENT, model=MODEL)
        assert second.history.last_seq == 1 and second.adapter.awaiting_model
        # Check: a raw body that leaves the defaults out opens the same session.
        with http(service, key) as api:
            raw = {
                "session_id": "again",
                "agent": {
                    "policy": AGENT.policy,
                    "instructions": AGENT.instructions,
                    "tools": [{"name": "run_tests", "description": "Run the test suite"}],
                },
                "model": {"provider": "anthropic", "id": "claude-sonnet-4-6"},
            }
            assert api.post("/v1/sessions", json=raw).status_code == 200
        # Check: the same id with another spec is refused, and names the problem.
        with pytest.raises(ServiceProblem) as caught:
            client.session("again", agent=AGENT, model=models.openai("gpt-5"))
        assert caught.value.problem["type"] == "/problems/session-exists" and caught.value.status == 409


@pytest.mark.parametrize("wire", ["openai_chat", "openai_responses", "anthropic"])
def test_next_request_renders_for_every_wire(service, wire):
    key = service.key("wires")
    model = MODEL if wire == "anthropic" else models.openai("gpt-5")
    with Client(service.url, key) as client:
        session = client.session(sid(), agent=AGENT, model=model)
        session.user("List the failing tests.")
        request = session.next_request(wire=wire)
        body = request.body()
        if wire == "openai_chat":
            assert body["messages"][0]["role"] in ("system", "developer") and body["prompt_cache_key"]
        elif wire == "openai_responses":
            assert "input" in body
        else:
            assert body["system"]
        # Check: the other wire of the provider is rendered by the service from the log, for the same request.
        if wire != "anthropic":
            other = "openai_responses" if wire == "openai_chat" else "openai_chat"
            assert request.render(other) == session.inspect(request.index, wire=other)["body"]
        # Check: another provider's wire is refused before anything is built.
        with pytest.raises(ServiceProblem) as caught:
            session.next_request(wire="openai_chat" if wire == "anthropic" else "anthropic")
        assert caught.value.status == 422 and session.history.series()[-1]["index"] == request.index


@pytest.mark.parametrize("model", [MODEL, models.openai("gpt-5")], ids=["anthropic", "openai"])
def test_every_registered_wire_renders_for_its_models(service, model):
    from contextwright.providers.wires import WIRES

    key = service.key("wires")
    with Client(service.url, key) as client:
        session = client.session(sid(), agent=AGENT, model=model)
        session.user("List the failing tests.")
        request = session.next_request()
        for name, wire in WIRES.items():
            if model.provider not in wire.providers:
                continue  # a wire of another provider's models (LiteLLM's speaks for both)
            # Check: every wire of the table, the service's own included, renders the recorded request.
            assert request.render(name) == session.inspect(request.index, wire=name)["body"]


def test_an_unknown_wire_is_a_422_and_builds_nothing(service):
    key = service.key("wires")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        api.post(f"/v1/sessions/{name}/messages", json={"text": "hi"})
        doc = assert_problem(api.post(f"/v1/sessions/{name}/requests", json={"wire": "telegraph"}), 422, "invalid-request")
        assert "anthropic" in doc["detail"]
        assert api.get(f"/v1/sessions/{name}").json()["requests"] == 0


def test_a_stale_expected_seq_is_409_with_the_current_seq_and_writes_nothing(service):
    key = service.key("conflicts")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        assert api.post(f"/v1/sessions/{name}/messages", json={"text": "one", "expected_seq": 0}).status_code == 201
        doc = assert_problem(
            api.post(f"/v1/sessions/{name}/messages", json={"text": "two", "expected_seq": 0}), 409, "seq-conflict"
        )
        assert doc["current_seq"] == 1 and doc["expected_seq"] == 0
        assert api.get(f"/v1/sessions/{name}").json()["last_seq"] == 1
        # Check: the client raises the same SeqConflict an embedded session does.
        with Client(service.url, key) as client:
            with pytest.raises(SeqConflict) as caught:
                client.session(name, agent=AGENT, model=MODEL).user("three", expected_seq=0)
            assert caught.value.fields == {"session_id": name, "expected_seq": 0, "actual_seq": 1}


def test_racing_writers_on_one_seq_exactly_one_wins(service):
    key = service.key("race")
    name = sid()
    open_session(service, key, name)
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def write(n: int) -> None:
        with http(service, key) as api:
            barrier.wait()
            statuses.append(api.post(f"/v1/sessions/{name}/messages", json={"text": f"w{n}", "expected_seq": 0}).status_code)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [201] + [409] * 5
    with http(service, key) as api:
        assert api.get(f"/v1/sessions/{name}").json()["last_seq"] == 1


def test_an_idempotency_key_replays_the_stored_answer_and_refuses_another_body(service):
    key = service.key("idem")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        body = {"text": "retry-safe", "idempotency_key": "msg-1", "expected_seq": 0}
        first = api.post(f"/v1/sessions/{name}/messages", json=body)
        again = api.post(f"/v1/sessions/{name}/messages", json=body)
        assert first.status_code == 201 and again.status_code == 200
        assert again.json()["replayed"] and again.json()["events"] == first.json()["events"]
        # Check: a replay after the log moved on still replays (the stale expected_seq does not matter).
        api.post(f"/v1/sessions/{name}/messages", json={"text": "later"})
        assert api.post(f"/v1/sessions/{name}/messages", json=body).json()["events"] == first.json()["events"]
        assert_problem(
            api.post(f"/v1/sessions/{name}/messages", json={**body, "text": "something else"}), 409, "idempotency-conflict"
        )
        events = api.get(f"/v1/sessions/{name}/events").json()["events"]
        assert [e["payload"]["text"] for e in events] == ["retry-safe", "later"]


def test_a_key_that_another_key_starts_with_is_its_own_key(service):
    key = service.key("idem")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        longer = api.post(f"/v1/sessions/{name}/messages", json={"text": "first", "idempotency_key": "a:x"})
        # Check: "a" is not a conflict with "a:x" (whose stored keys begin "a:"), and each replays its own events.
        shorter = api.post(f"/v1/sessions/{name}/messages", json={"text": "second", "idempotency_key": "a"})
        assert (longer.status_code, shorter.status_code) == (201, 201)
        again = api.post(f"/v1/sessions/{name}/messages", json={"text": "second", "idempotency_key": "a"})
        assert again.status_code == 200 and again.json()["events"] == shorter.json()["events"]
        again = api.post(f"/v1/sessions/{name}/messages", json={"text": "first", "idempotency_key": "a:x"})
        assert again.status_code == 200 and again.json()["events"] == longer.json()["events"]


def test_a_tool_result_retried_after_a_lost_reply_is_stored_once(service):
    key = service.key("idem")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        api.post(f"/v1/sessions/{name}/messages", json={"text": "run the tests"})
        api.post(f"/v1/sessions/{name}/requests", json={})
        api.post(
            f"/v1/sessions/{name}/assistant",
            json={"text": "", "tool_calls": [{"id": "c1", "name": "run_tests", "arguments": {}}]},
        )
        body = {"call_id": "c1", "output": "3 passed", "exit_code": 0, "idempotency_key": "tr-1"}
        first = api.post(f"/v1/sessions/{name}/tool-results", json=body)
        second = api.post(f"/v1/sessions/{name}/tool-results", json=body)
        assert first.status_code == 201 and second.status_code == 200 and second.json()["replayed"]
        types = [e["type"] for e in api.get(f"/v1/sessions/{name}/events").json()["events"]]
        assert types.count("tool.result") == 1
        # Check: without a key, answering a call that is no longer pending is a state conflict, not a write.
        assert_problem(api.post(f"/v1/sessions/{name}/tool-results", json={"call_id": "c1", "output": "x"}), 409, "session-state")


def test_usage_recorded_apart_from_the_answer_prices_the_request(service):
    key = service.key("usage")
    with Client(service.url, key) as client:
        session = client.session(sid(), agent=AGENT, model=MODEL)
        session.user("hi")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(text="Hello.", model=MODEL.id))
        session.adapter.record_usage(input_tokens=1200, output_tokens=30, cache_read_tokens=800)
        [point] = session.history.series()
        assert point["cache_read_tokens"] == 800 and point["cost_usd"] is not None
        assert session.stats()["cache_read_share"] == pytest.approx(800 / 2000)
        # The usage is compared with the request's reconciled projection, as session.record() does.
        events = session.history.events
        [built] = [e["payload"] for e in events if e["type"] == "context.request.built"]
        [usage] = [e["payload"] for e in events if e["type"] == "model.response"]
        projected = built["exact_tokens"] + math.ceil(built["raw_estimate_tokens"] * built["estimate_factor"] - 1e-9)
        assert usage["estimated_input_tokens"] == projected


def test_events_are_paged(service):
    key = service.key("paging")
    with http(service, key) as api:
        name = sid()
        open_session(service, key, name)
        for n in range(5):
            api.post(f"/v1/sessions/{name}/messages", json={"text": f"m{n}"})
        page = api.get(f"/v1/sessions/{name}/events", params={"limit": 2}).json()
        seqs = [e["seq"] for e in page["events"]]
        while page["next_after_seq"] is not None:
            page = api.get(f"/v1/sessions/{name}/events", params={"limit": 2, "after_seq": page["next_after_seq"]}).json()
            seqs += [e["seq"] for e in page["events"]]
        assert seqs == [1, 2, 3, 4, 5]


def test_manual_compaction_folds_earlier_turns(service):
    key = service.key("compact")
    provider = ScriptedProvider([AssistantMessage(text=f"Done with step {n}.") for n in range(4)])
    with Client(service.url, key) as client:
        session = client.session(sid(), agent=AGENT, model=MODEL)
        for n in range(4):
            session.user(f"Step {n}: look at module {n} and report what it does in detail.")
            session.send(provider.create)
        event = session.compact()
        assert event is not None and event["type"] == "context.compacted"
        assert event["payload"]["archive"]["ref"] in {
            e["payload"]["archive"]["ref"] for e in session.history.events if e["type"] == "context.compacted"
        }
        # Check: the archive is readable through the session, and the next request still verifies.
        assert session.history.read_artifact(event["payload"]["archive"]["ref"])
        session.user("Now summarise.")
        request = session.next_request()
        assert session.inspect(request.index)["verified"]
        assert any("compacted" in change for p in session.history.series() for change in p["changes"])


def test_an_artifact_is_readable_only_through_a_session_that_points_at_it(service):
    owner, intruder = service.key("artifacts"), service.key("artifact-thief")
    with Client(service.url, owner) as client:
        session = client.session(sid(), agent=AGENT, model=MODEL)
        session.user("run them")
        session.next_request()
        session.adapter.record_assistant(AssistantMessage(tool_calls=(ToolCall(id="c1", name="run_tests", arguments={}),)))
        session.tool_result("c1", "SECRET-OUTPUT 1 failed")
        ref = next(e for e in session.history.events if e["type"] == "artifact.stored")["payload"]["pointer"]["ref"]
        assert session.history.read_artifact(ref) == "SECRET-OUTPUT 1 failed"
        # Check: the same tenant's other session, and another tenant's session, do not reach it.
        other = client.session(sid(), agent=AGENT, model=MODEL)
        with pytest.raises(ServiceProblem) as caught:
            other.history.read_artifact(ref)
        assert caught.value.status == 404
    with Client(service.url, intruder) as client:
        theirs = client.session(sid(), agent=AGENT, model=MODEL)
        with pytest.raises(ServiceProblem) as caught:
            theirs.history.read_artifact(ref)
        assert caught.value.status == 404 and "SECRET" not in str(caught.value.problem)


def test_sessions_list_shows_only_the_tenants_own(service):
    key_a, key_b = service.key("list-a"), service.key("list-b")
    open_session(service, key_a, "shared-name")
    open_session(service, key_b, "shared-name")
    open_session(service, key_b, "only-b")
    with http(service, key_a) as api:
        assert [s["session_id"] for s in api.get("/v1/sessions").json()["sessions"]] == ["shared-name"]
    with http(service, key_b) as api:
        assert sorted(s["session_id"] for s in api.get("/v1/sessions").json()["sessions"]) == ["only-b", "shared-name"]


def _every_endpoint(name: str) -> list[tuple[str, str, dict | None]]:
    base = f"/v1/sessions/{name}"
    return [
        ("GET", base, None),
        ("POST", base + "/messages", {"text": "intrusion"}),
        ("POST", base + "/assistant", {"text": "intrusion"}),
        (
            "POST",
            base + "/responses",
            {"response": {"type": "message", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}},
        ),
        ("POST", base + "/tool-results", {"call_id": "c1", "output": "x"}),
        ("POST", base + "/usage", {"input_tokens": 1, "output_tokens": 1}),
        ("POST", base + "/requests", {}),
        ("GET", base + "/requests/0", None),
        ("POST", base + "/prefix", {}),
        ("POST", base + "/compact", None),
        ("GET", base + "/events", None),
        ("GET", base + "/artifacts/sha256:" + "0" * 64, None),
        ("GET", base + "/stats", None),
        ("GET", base + "/series", None),
    ]


def test_another_tenants_session_is_indistinguishable_from_a_missing_one(service):
    owner, intruder = service.key("owner"), service.key("intruder")
    with Client(service.url, owner) as client:
        session = client.session("private", agent=AGENT, model=MODEL)
        session.user("secret plans")
        session.next_request()
        before = session.history.last_seq
    with http(service, intruder) as api:
        for method, path, body in _every_endpoint("private"):
            seen = api.request(method, path, json=body)
            missing = api.request(method, path.replace("/private", "/no-such-session"), json=body)
            doc = assert_problem(seen, 404, "not-found")
            other = assert_problem(missing, 404, "not-found")
            # Check: the same answer, apart from the names in it.
            assert doc["detail"].replace("private", "X") == other["detail"].replace("no-such-session", "X"), path
            assert "secret" not in seen.text
    with Client(service.url, owner) as client:
        assert client.session("private", agent=AGENT, model=MODEL).history.last_seq == before


def test_every_endpoint_needs_a_valid_key(service):
    owner = service.key("owner")
    revoked = service.key("owner")
    service.app.state.store.revoke_key(revoked.split("_")[1])
    open_session(service, owner, "guarded")
    for key in (None, "not-a-key", "cw_0123456789abcdef_" + "A" * 43, revoked, owner[:-1] + ("A" if owner[-1] != "A" else "B")):
        with http(service, key) as api:
            for method, path, body in [*_every_endpoint("guarded"), ("GET", "/v1/sessions", None), ("POST", "/v1/sessions", {})]:
                response = api.request(method, path, json=body)
                assert_problem(response, 401, "unauthenticated")
                assert response.headers["www-authenticate"].startswith("Bearer")
    with http(service, owner) as api:
        assert api.get("/v1/sessions/guarded").json()["last_seq"] == 0


def test_bodies_over_the_limit_are_413_and_write_nothing(service):
    key = service.key("limits")
    name = sid()
    open_session(service, key, name)
    big = {"text": "x" * (MAX_BODY + 1)}
    with http(service, key) as api:
        doc = assert_problem(api.post(f"/v1/sessions/{name}/messages", json=big), 413, "payload-too-large")
        assert doc["limit_bytes"] == MAX_BODY

        # Check: a chunked body (no Content-Length) is cut off at the limit too.
        def chunks():
            data = json.dumps(big).encode()
            for i in range(0, len(data), 8192):
                yield data[i : i + 8192]

        chunked = api.post(f"/v1/sessions/{name}/messages", content=chunks(), headers={"content-type": "application/json"})
        assert_problem(chunked, 413, "payload-too-large")
        assert api.get(f"/v1/sessions/{name}").json()["last_seq"] == 0
        # Check: just under the limit is accepted.
        ok = api.post(f"/v1/sessions/{name}/messages", json={"text": "y" * (MAX_BODY - 100)})
        assert ok.status_code == 201


@pytest.mark.parametrize(
    ("path", "content", "status", "slug"),
    [
        ("/messages", b"{not json", 400, "malformed-json"),
        ("/messages", b"", 422, "invalid-request"),
        ("/messages", b"[]", 422, "invalid-request"),
        ("/messages", b'{"text": 5}', 422, "invalid-request"),
        ("/messages", b'{"text": ""}', 422, "invalid-request"),
        ("/messages", b'{"text": "hi", "expected_seq": "0"}', 422, "invalid-request"),
        ("/messages", b'{"text": "hi", "expected_seq": -1}', 422, "invalid-request"),
        ("/messages", b'{"text": "hi", "colour": "red"}', 422, "invalid-request"),
        ("/tool-results", b'{"call_id": "c1", "output": ["a"]}', 422, "invalid-request"),
        ("/tool-results", b'{"call_id": "c1", "output": "a", "trust": "root"}', 422, "invalid-request"),
        ("/assistant", b'{"tool_calls": [{"id": "", "name": "x"}]}', 422, "invalid-request"),
        ("/assistant", b'{"tool_calls": [{"id": "a", "name": "x"}, {"id": "a", "name": "y"}]}', 422, "invalid-operation"),
        ("/responses", b'{"response": {"hello": "world"}}', 422, "invalid-operation"),
        ("/responses", b'{"response": {"choices": 5}}', 422, "invalid-operation"),
        ("/usage", b'{"input_tokens": -5, "output_tokens": 1}', 422, "invalid-request"),
        ("/requests", b'{"prefix_ttl": "7d"}', 422, "invalid-request"),
    ],
)
def test_bad_bodies_get_problem_documents_and_write_nothing(service, path, content, status, slug):
    key = service.key("bad-input")
    name = sid()
    open_session(service, key, name)
    with http(service, key) as api:
        api.post(f"/v1/sessions/{name}/messages", json={"text": "start"})
        response = api.post(f"/v1/sessions/{name}{path}", content=content, headers={"content-type": "application/json"})
        doc = assert_problem(response, status, slug)
        if slug == "invalid-request" and content:
            assert doc["errors"] and all({"loc", "msg", "type"} <= set(e) for e in doc["errors"])
        assert api.get(f"/v1/sessions/{name}").json()["last_seq"] == 1


def test_a_body_that_is_not_json_is_415(service):
    key = service.key("media")
    name = sid()
    open_session(service, key, name)
    with http(service, key) as api:
        response = api.post(
            f"/v1/sessions/{name}/messages", content=b"text=hi", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert_problem(response, 415, "unsupported-media-type")


def test_bad_session_opens_are_problem_documents(service):
    key = service.key("opens")
    agent = {"policy": "p", "tools": [{"name": "a", "description": "x"}, {"name": "a", "description": "y"}]}
    with http(service, key) as api:
        cases = [
            (
                {"session_id": "x", "agent": agent, "model": {"provider": "anthropic", "id": "claude-sonnet-4-6"}},
                422,
                "invalid-operation",
            ),
            (
                {"session_id": "x", "agent": {"policy": "p"}, "model": {"provider": "anthropic", "id": "no-such-model"}},
                422,
                "invalid-operation",
            ),
            (
                {"session_id": "a/b", "agent": {"policy": "p"}, "model": {"provider": "openai", "id": "gpt-5"}},
                422,
                "invalid-request",
            ),
            (
                {"session_id": " x", "agent": {"policy": "p"}, "model": {"provider": "openai", "id": "gpt-5"}},
                422,
                "invalid-request",
            ),
            ({"session_id": "x", "agent": {"policy": "p"}, "model": {"provider": "mistral", "id": "m"}}, 422, "invalid-request"),
        ]
        for body, status, slug in cases:
            assert_problem(api.post("/v1/sessions", json=body), status, slug)
        assert api.get("/v1/sessions").json()["sessions"] == []


def test_inspecting_a_request_that_does_not_exist_is_404(service):
    key = service.key("inspect")
    name = sid()
    open_session(service, key, name)
    with http(service, key) as api:
        assert_problem(api.get(f"/v1/sessions/{name}/requests/3"), 404, "not-found")


def test_asking_for_a_request_with_nothing_to_answer_is_a_state_conflict(service):
    key = service.key("state")
    name = sid()
    open_session(service, key, name)
    with http(service, key) as api:
        api.post(f"/v1/sessions/{name}/messages", json={"text": "hi"})
        api.post(f"/v1/sessions/{name}/requests", json={})
        api.post(f"/v1/sessions/{name}/assistant", json={"text": "Hello."})
        doc = assert_problem(api.post(f"/v1/sessions/{name}/requests", json={}), 409, "session-state")
        assert "user message" in doc["detail"]


def test_a_key_over_its_rate_gets_429_with_retry_after(service):
    key = service.key("slow", rate_per_second=0.01, burst=3)
    with http(service, key) as api:
        statuses = [api.get("/v1/sessions").status_code for _ in range(3)]
        assert statuses == [200, 200, 200]
        doc = assert_problem(api.get("/v1/sessions"), 429, "rate-limited")
        response = api.get("/v1/sessions")
        assert int(response.headers["retry-after"]) >= 1 and doc["retry_after_seconds"] > 0
    # Check: the limit is per key; another key of the same tenant is not slowed.
    with http(service, service.key("slow")) as api:
        assert api.get("/v1/sessions").status_code == 200


def test_problem_types_resolve_and_the_schema_is_published(service):
    with httpx2.Client(base_url=service.url) as api:
        assert api.get("/healthz").json() == {"status": "ok"}
        kind = api.get("/problems/seq-conflict").json()
        assert kind["status"] == 409 and kind["type"] == "/problems/seq-conflict"
        schema = api.get("/openapi.json").json()
        paths = set(schema["paths"])
        assert {"/v1/sessions", "/v1/sessions/{session_id}/requests", "/v1/sessions/{session_id}/requests/{index}"} <= paths
        assert all(p.startswith("/v1/") for p in paths)
        assert "HTTPBearer" in schema["components"]["securitySchemes"]
        # Check: no page that loads scripts from elsewhere (the interactive docs would).
        assert api.get("/docs").status_code == 404 and api.get("/redoc").status_code == 404
        assert_problem(api.get("/v1/nothing-here"), 401, "unauthenticated")
        assert_problem(api.get("/nothing-here"), 404, "not-found")


def test_two_workers_on_one_store_serve_one_session_in_turns(service):
    from contextwright.service import ServiceConfig, create_app
    from contextwright.testing.service import serving

    key = service.key("two-workers")
    other = create_app(ServiceConfig(store=service.store_url))
    provider = ScriptedProvider(
        [
            AssistantMessage(text="Running.", tool_calls=(ToolCall(id="c1", name="run_tests", arguments={}),)),
            AssistantMessage(text="All green."),
        ]
    )
    with serving(other) as other_url, Client(service.url, key) as a, Client(other_url, key) as b:
        name = sid()
        on_a = a.session(name, agent=AGENT, model=MODEL)
        on_b = b.session(name, agent=AGENT, model=MODEL)
        # Each worker caches the session; every step goes to the worker that did not take the last one.
        on_a.user("CI fails.", expected_seq=0)
        first = on_b.next_request(expected_seq=1)
        on_a.record(provider.create(**first.body()))
        on_b.tool_result("c1", "1 failed", exit_code=1, expected_seq=on_a.history.last_seq)
        second = on_a.next_request()
        on_b.record(provider.create(**second.body()))
        # Check: a worker whose cache is behind checks expected_seq against the log, not its cache.
        with pytest.raises(SeqConflict):
            on_a.user("stale", expected_seq=first.index)
        # Check: one prefix, and both requests rebuild byte for byte on either worker.
        assert first.prefix_sha256 == second.prefix_sha256
        for index in (0, 1):
            assert on_a.inspect(index)["rebuilt_sha256"] == on_b.inspect(index)["recorded_sha256"]
        assert [e["seq"] for e in on_a.history.events] == list(range(1, on_b.history.last_seq + 1))


def test_one_request_sent_to_two_workers_at_once_is_stored_once(service):
    from contextwright.service import ServiceConfig, create_app
    from contextwright.testing.service import serving

    key = service.key("duplicates")
    other = create_app(ServiceConfig(store=service.store_url))
    name = sid()
    open_session(service, key, name)
    with serving(other) as other_url:
        for round_ in range(4):
            body = {"text": f"round {round_}", "idempotency_key": f"dup-{round_}", "expected_seq": round_}
            answers: list[httpx2.Response] = []
            barrier = threading.Barrier(2)

            def send(url: str, body: dict = body, answers: list = answers, barrier: threading.Barrier = barrier) -> None:
                with httpx2.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as api:
                    barrier.wait()
                    answers.append(api.post(f"/v1/sessions/{name}/messages", json=body))

            threads = [threading.Thread(target=send, args=(url,)) for url in (service.url, other_url)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            # Check: never a conflict, and both answers carry the one stored event. (Which of them
            # says "replayed" is decided by timing: two copies in the same instant may both say 201.)
            assert {a.status_code for a in answers} <= {200, 201} and 201 in {a.status_code for a in answers}
            assert answers[0].json()["events"] == answers[1].json()["events"]
    with http(service, key) as api:
        texts = [e["payload"]["text"] for e in api.get(f"/v1/sessions/{name}/events").json()["events"]]
    assert texts == [f"round {n}" for n in range(4)]
