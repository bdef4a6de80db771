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
