"""Opt-in exact prefix counts through Anthropic's count_tokens endpoint (official SDK, mock transport)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic SDK (the anthropic extra)")
pytest.importorskip("httpx2", reason="needs the anthropic SDK (the anthropic extra)")

import anthropic
import httpx2

from contextwright.clock import FixedClock
from contextwright.errors import UsageError
from contextwright.events import AssistantMessage
from contextwright.log.memory import InMemoryEventLog
from contextwright.runtime.engine import Engine
from contextwright.runtime.requests import PREFIX_COUNT_ATTEMPTS
from contextwright.testing.fakes import TEST_SECRET, sample_agent, sample_model

PREFIX_COUNT = 1_234


class CountEndpoint:
    """Answers POST /v1/messages/count_tokens like the provider; records what it was sent."""

    def __init__(self, *, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = status

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/messages/count_tokens", request.url.path
        self.bodies.append(json.loads(request.content))
        if self.status != 200:
            return httpx2.Response(
                self.status, json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
            )
        return httpx2.Response(200, json={"input_tokens": PREFIX_COUNT})

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key="test", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler))
        )


def _session(count_prefix: Any = None) -> Any:
    engine = Engine(InMemoryEventLog(), clock=FixedClock(), secret=TEST_SECRET)
    return engine.session("s", agent=sample_agent(), model=sample_model(), count_prefix=count_prefix)


def _built(session: Any) -> list[Any]:
    return [e.payload for e in session.history.events if e.type == "context.request.built"]


def _turns(session: Any, count: int) -> list[Any]:
    requests = []
    for turn in range(count):
        session.user(f"Turn {turn}: check the export.")
        requests.append(session.next_request())
        session.adapter.record_assistant(AssistantMessage(text=f"Checked {turn}."))
    return requests


def test_the_prefix_is_counted_once_per_epoch_and_becomes_the_exact_part() -> None:
    endpoint = CountEndpoint()
    session = _session(endpoint.client().messages.count_tokens)
    requests = _turns(session, 3)
    # Check one call for three requests, carrying exactly the prefix the requests render.
    [body] = endpoint.bodies
    rendered = requests[0].anthropic()
    assert body["system"] == rendered["system"] and body["tools"] == rendered["tools"]
    assert body["model"] == rendered["model"] and body["messages"] == [{"role": "user", "content": "."}]
    [counted] = [e.payload for e in session.history.events if e.type == "context.prefix.counted"]
    assert (counted.epoch, counted.input_tokens) == (1, PREFIX_COUNT)
    for request, built in zip(requests, _built(session), strict=True):
        assert built.exact_tokens == PREFIX_COUNT
        assert built.raw_estimate_tokens == request.result.body_tokens  # the prefix left the estimated part
    # A new epoch (an edited prefix) is counted again, once.
    session.setup.edit_prefix(sample_agent(tools=("read_file",)), note="fewer tools")
    _turns(session, 2)
    assert len(endpoint.bodies) == 2
    assert [e.payload.epoch for e in session.history.events if e.type == "context.prefix.counted"] == [1, 2]


def test_without_the_flag_nothing_is_counted() -> None:
    session = _session()
    _turns(session, 2)
    assert not [e for e in session.history.events if e.type == "context.prefix.counted"]
    assert all(b.exact_tokens == 0 for b in _built(session))  # Claude: the estimated prefix is in the estimate


def test_a_provider_error_leaves_the_estimate_and_the_next_request_tries_again() -> None:
    endpoint = CountEndpoint(status=429)
    session = _session(endpoint.client().messages.count_tokens)
    _turns(session, 2)
    assert len(endpoint.bodies) == 2  # tried on each request, never failing it
    assert not [e for e in session.history.events if e.type == "context.prefix.counted"]
    assert all(b.exact_tokens == 0 for b in _built(session))


def test_an_endpoint_that_keeps_failing_is_asked_a_few_times_per_epoch_then_left_alone() -> None:
    endpoint = CountEndpoint(status=429)
    session = _session(endpoint.client().messages.count_tokens)
    _turns(session, PREFIX_COUNT_ATTEMPTS + 4)
    assert len(endpoint.bodies) == PREFIX_COUNT_ATTEMPTS  # not one round trip per request for ever
    session.setup.edit_prefix(sample_agent(tools=("read_file",)), note="fewer tools")
    endpoint.status = 200
    _turns(session, 2)
    assert len(endpoint.bodies) == PREFIX_COUNT_ATTEMPTS + 1  # a new epoch is asked again, and counted
    assert [e.payload.epoch for e in session.history.events if e.type == "context.prefix.counted"] == [2]


def test_a_child_run_counts_its_own_prefix_with_the_parents_counter() -> None:
    endpoint = CountEndpoint()
    session = _session(endpoint.client().messages.count_tokens)
    _turns(session, 1)
    child = session.children.engine_session("s/child", agent=sample_agent(), model=sample_model())
    _turns(child, 1)
    assert len(endpoint.bodies) == 2
    assert [e.payload.input_tokens for e in child.history.events if e.type == "context.prefix.counted"] == [PREFIX_COUNT]


def test_a_counter_answering_nonsense_is_a_typed_error() -> None:
    session = _session(lambda **_: {"tokens": 3})
    session.user("Fix CI.")
    with pytest.raises(UsageError, match="input_tokens"):
        session.next_request()
