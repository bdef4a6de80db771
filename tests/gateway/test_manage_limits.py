"""Manage mode at its limits: the round cap, the provider's context-length errors on every wire, counting tokens."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from test_observe import FIRST, claude_body, post

from contextwright.gateway import GatewayConfig, create_gateway_app
from contextwright.gateway.app import MODE_HEADER
from contextwright.log import open_log
from contextwright.runtime.requests import RoundPolicy
from contextwright.testing.service import serving
from contextwright.testing.upstream import FakeUpstream, Reply, anthropic_message

SESSION = "agents/limits"


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[tuple[str, FakeUpstream, str]]:
    """A manage-mode gateway whose runs stop at two model rounds without a user message."""
    upstream = FakeUpstream()
    store = str(tmp_path / "capped.db")
    with serving(upstream) as up:
        config = GatewayConfig(store=store, anthropic_upstream=up, openai_upstream=up, mode="manage")
        app = create_gateway_app(config)
        app.state.recorder.rounds = RoundPolicy(hard_cap=2)
        with serving(app) as url:
            yield url, upstream, store


def _call(n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"step {n}"}}


def test_past_the_round_cap_the_clients_request_goes_as_it_came_recorded_and_said(capped: tuple[str, FakeUpstream, str]) -> None:
    url, upstream, store = capped
    answers = [anthropic_message(_call(n), stop_reason="tool_use") for n in range(3)]
    answers.append(anthropic_message({"type": "text", "text": "Stopped."}))
    upstream.script = lambda received: Reply(body=answers.pop(0))
    history = list(FIRST)
    headers = {"x-contextwright-session": SESSION}
    seen = []
    for n in range(3):
        body = claude_body(history)
        sent = json.dumps(body).encode()  # the history goes on growing below
        response = post(url, body, headers=headers)
        assert response.status_code == 200
        seen.append(response.headers.get(MODE_HEADER))
        history += [
            {"role": "assistant", "content": [_call(n)]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"done {n}"}]},
        ]
    # Two rounds are the engine's; the third request is past the cap: the client's own body went.
    assert seen == [None, None, "passthrough; reason=round_cap"]
    assert upstream.conversations[-1].body == sent
    assert upstream.conversations[0].body != json.dumps(claude_body(FIRST)).encode()
    with open_log(store, read_only=True) as log:
        passed = [e.payload for e in log.read(SESSION) if e.type == "gateway.request.passed"]
    assert [p.reason for p in passed] == ["round_cap"]
    assert "2 model rounds since the last user message" in passed[0].message
    # A user message resets the rounds: the engine builds again.
    history += [{"role": "assistant", "content": [{"type": "text", "text": "Stopped."}]}]
    history.append({"role": "user", "content": "Go on."})
    upstream.script = lambda received: Reply(body=anthropic_message({"type": "text", "text": "Going."}))
    response = post(url, claude_body(history), headers=headers)
    assert response.status_code == 200 and MODE_HEADER not in response.headers


def test_a_body_the_gateway_cannot_read_is_passed_through_and_said(capped: tuple[str, FakeUpstream, str]) -> None:
    url, upstream, _ = capped
    response = httpx2.post(
        url + "/v1/messages", content=b"{not json", headers={"x-api-key": "k", "content-type": "application/json"}, timeout=30
    )
    assert response.headers[MODE_HEADER] == "passthrough; reason=unreadable"
    assert upstream.received[-1].body == b"{not json"


# -- the provider's context-length error, on the OpenAI wires ---------------------------

OPENAI_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize("wire", ["openai_responses", "openai_chat"])
def test_an_openai_context_length_error_is_relieved_once_and_sent_again(make_gateway: Any, wire: str) -> None:
    from test_read_back import _answer, _body, _client_answer, _echo, _results, _send, _text, _user

    gateway = make_gateway(mode="manage")
    calls = [(f"call_{n}", "shell", {"command": f"cat part{n}"}) for n in range(3)]
    replies = [Reply(body=_answer(wire, f"Part {n}.", call, number=n)) for n, call in enumerate(calls)]
    replies += [Reply(status=400, body=OPENAI_TOO_LONG), Reply(body=_answer(wire, "Read all three parts.", number=9))]
    gateway.replies(*replies)
    history = [_user(wire, "Read the parts.")]
    for n, (call_id, _, _) in enumerate(calls):
        answer = _client_answer(wire, _send(gateway, wire, _body(wire, history, stream=False)), stream=False)
        output = f"part {n}: " + " ".join(f"word{n}x{i}" for i in range(4000))
        history += _echo(wire, answer) + _results(wire, call_id, output)
    response = _send(gateway, wire, _body(wire, history, stream=True))
    # The client never sees the refusal: the engine relieved the run and the second attempt answered.
    assert response.status_code == 200
    assert _text(wire, _client_answer(wire, response, stream=True)) == "Read all three parts."
    refused, resent = gateway.upstream.conversations[-2:]
    key = "input" if wire == "openai_responses" else "messages"
    assert resent.json[key] != refused.json[key]  # relieved and built again, not the same bytes resent
    from test_read_back import SESSION as READ_SESSION

    types = gateway.settled(READ_SESSION, 4)
    overflow = [e.payload for e in gateway.events(READ_SESSION) if e.type == "context.overflow"]
    assert [o.recovered for o in overflow] == [True]
    assert "context.compacted" in types or "context.pruned" in types


@pytest.mark.parametrize("wire", ["openai_responses", "openai_chat"])
def test_an_openai_context_length_error_relief_cannot_help_reaches_the_client_as_it_came(make_gateway: Any, wire: str) -> None:
    from test_read_back import _body, _send, _user

    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(status=400, body=OPENAI_TOO_LONG, headers={"x-request-id": "req_42"}))
    response = _send(gateway, wire, _body(wire, [_user(wire, "Hello.")], stream=True))  # nothing to prune or compact
    assert response.status_code == 400 and response.json() == OPENAI_TOO_LONG
    assert response.headers["x-request-id"] == "req_42"
    assert len(gateway.upstream.conversations) == 1


@pytest.mark.parametrize("wire", ["anthropic", "openai_responses", "openai_chat"])
def test_any_other_upstream_error_reaches_the_client_with_its_status_and_body(make_gateway: Any, wire: str) -> None:
    from test_read_back import _body, _send, _user

    gateway = make_gateway(mode="manage")
    if wire == "anthropic":
        error = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down."}}
    else:
        error = {"error": {"message": "Slow down.", "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
    gateway.replies(Reply(status=429, body=error, headers={"retry-after": "3"}))
    response = _send(gateway, wire, _body(wire, [_user(wire, "Hello.")], stream=True))
    assert response.status_code == 429 and response.json() == error and response.headers["retry-after"] == "3"
    assert len(gateway.upstream.conversations) == 1


# -- count_tokens ---------------------------------------------------------------------


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def test_count_tokens_counts_what_the_engine_would_send_and_records_nothing(make_gateway: Any) -> None:
    from test_observe import ANSWER_1, ANSWER_2, CC_SESSION, SECOND

    gateway = make_gateway(mode="manage")
    gateway.replies(Reply(body=ANSWER_1), Reply(body=ANSWER_2))
    post(gateway.url, claude_body(FIRST))
    post(gateway.url, claude_body(SECOND))
    before = gateway.settled(CC_SESSION, 2)
    engine_request = gateway.upstream.conversations[-1].json
    # What Claude Code counts: the conversation so far and a new message, without max_tokens or stream.
    history = SECOND + [{"role": "assistant", "content": ANSWER_2["content"]}, {"role": "user", "content": "And tests?"}]
    client = {k: v for k, v in claude_body(history).items() if k not in ("max_tokens", "stream", "context_management")}
    response = post(gateway.url, client, path="/v1/messages/count_tokens?beta=true")
    assert response.status_code == 200 and response.json() == {"input_tokens": 42}
    assert MODE_HEADER not in response.headers
    counted = gateway.upstream.received[-1]
    assert counted.path == "/v1/messages/count_tokens" and counted.query == "beta=true"
    body = counted.json
    # The engine's system, tools and history (the long output bounded), the client's other keys.
    assert body["system"] == engine_request["system"] and body["tools"] == engine_request["tools"]
    # The history as the engine sent it (its cache breakpoints move on to the newest message).
    assert _unmarked(body["messages"][: len(engine_request["messages"])]) == _unmarked(engine_request["messages"])
    assert len(body["messages"]) == len(engine_request["messages"]) + 2  # the answer, then the new message
    assert "And tests?\n</cw-data" in body["messages"][-1]["content"][-1]["text"]  # in the engine's envelope
    assert body["thinking"] == client["thinking"] and body["metadata"] == client["metadata"]
    assert "max_tokens" not in body and "stream" not in body
    # Nothing was appended: the run is as it was, and the next request builds as if no count happened.
    assert gateway.types(CC_SESSION) == before and gateway.log.sessions() == [CC_SESSION]


def test_count_tokens_of_a_new_conversation_and_of_an_unreadable_body(make_gateway: Any) -> None:
    gateway = make_gateway(mode="manage")
    client = {k: v for k, v in claude_body(FIRST).items() if k not in ("max_tokens", "stream")}
    assert post(gateway.url, client, path="/v1/messages/count_tokens").json() == {"input_tokens": 42}
    body = gateway.upstream.received[-1].json
    assert body["system"] != client["system"] and body["tools"][-1]["name"] == "context_read_artifact"
    assert gateway.log.sessions() == []  # counted, not recorded
    response = httpx2.post(
        gateway.url + "/v1/messages/count_tokens",
        content=b"[1, 2]",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        timeout=30,
    )
    assert response.headers[MODE_HEADER] == "passthrough; reason=unreadable"
    assert gateway.upstream.received[-1].body == b"[1, 2]"
