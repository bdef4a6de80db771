"""The wire read from the SDK method, the SDK's streaming rule for long outputs, and the agent's cache TTL."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from contextwright.errors import UsageError
from contextwright.events import AssistantMessage
from contextwright.importers.model import Transcript, TranscriptMessage
from contextwright.models import anthropic as anthropic_model
from contextwright.models import openai as openai_model
from contextwright.providers.wires import inferred_wire
from contextwright.providers.wires.anthropic import streaming_required
from contextwright.replay import replay
from contextwright.runtime.engine import Engine
from contextwright.runtime.errors import StreamingRequired, ThinkingBudgetInvalid, WireMismatch
from contextwright.runtime.reopen import reopen
from contextwright.runtime.spec import AgentSpec
from contextwright.testing.fakes import TEST_SECRET, open_session, sample_agent
from contextwright.testing.sse import sse_events

anthropic = pytest.importorskip("anthropic", reason="the anthropic extra is not installed")
openai = pytest.importorskip("openai", reason="the openai extra is not installed")
httpx2 = pytest.importorskip("httpx2", reason="the SDK extras are not installed")


def _message(text: str) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 900, "output_tokens": 12, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
    }


def _response(text: str) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": 900,
            "output_tokens": 5,
            "total_tokens": 905,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


class Recorder:
    """A transport that answers with fixed JSON (or SSE when the body streams) and keeps what it was sent."""

    def __init__(self, payload: dict) -> None:
        self.payload = payload
        self.bodies: list[dict] = []

    def handler(self, request):
        body = json.loads(request.content)
        self.bodies.append(body)
        if body.get("stream"):
            frames = b"".join(sse_events(self.payload))
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=frames)
        return httpx2.Response(200, json=self.payload)

    def http(self):
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))


# -- the wire, read from the SDK method ---------------------------------------------------------


def test_the_wire_is_read_from_sync_async_beta_and_wrapped_sdk_methods():
    a, aa = anthropic.Anthropic(api_key="x"), anthropic.AsyncAnthropic(api_key="x")
    o, ao = openai.OpenAI(api_key="x"), openai.AsyncOpenAI(api_key="x")
    cases = {
        "anthropic": [
            a.messages.create,
            a.messages.stream,
            aa.messages.create,
            aa.messages.stream,
            a.beta.messages.create,
            a.beta.messages.stream,
            a.messages.with_raw_response.create,
            aa.messages.with_streaming_response.create,
        ],
        "openai_chat": [
            o.chat.completions.create,
            o.chat.completions.stream,
            ao.chat.completions.create,
            ao.chat.completions.stream,
            o.chat.completions.with_raw_response.create,
        ],
        "openai_responses": [o.responses.create, o.responses.stream, ao.responses.create, ao.responses.stream],
    }
    for wire, calls in cases.items():
        for call in calls:
            assert inferred_wire(call) == wire, call
    assert inferred_wire(o.completions.create) is None  # the legacy completions API is no wire of ours
    assert inferred_wire(lambda **body: body) is None


def test_send_through_responses_create_renders_the_responses_wire():
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    provider = Recorder(_response("Hello from Responses."))
    client = openai.OpenAI(api_key="test", max_retries=0, http_client=provider.http())
    session.user("hello")
    session.send(client.responses.create)
    assert "input" in provider.bodies[0] and "messages" not in provider.bodies[0]
    assert session.history.events[-2].payload.text == "Hello from Responses."


def test_a_wire_that_does_not_fit_the_model_is_refused_before_anything_is_built():
    _, session, _ = open_session()
    provider = Recorder(_response("never"))
    client = openai.OpenAI(api_key="test", max_retries=0, http_client=provider.http())
    session.user("hello")
    before = session.history.events
    with pytest.raises(WireMismatch) as info:
        session.send(client.chat.completions.create)
    assert "wire='anthropic'" in info.value.message and "messages.create" in info.value.message
    assert info.value.fitting == ["anthropic"]
    with pytest.raises(WireMismatch, match="openai_responses wire was asked for"):
        session.stream(anthropic.Anthropic(api_key="x").messages.stream, wire="openai_responses")
    assert session.history.events == before and provider.bodies == []


def test_wire_overrides_what_the_method_says():
    engine, _, _ = open_session()
    session = engine.session("oa", agent=sample_agent(), model=openai_model("gpt-4.1"))
    bodies = []

    def gateway(**body):
        bodies.append(body)
        return _response("Through a gateway.")

    session.user("hello")
    session.send(gateway, wire="openai_responses")
    assert "input" in bodies[0] and session.history.events[-2].payload.text == "Through a gateway."


# -- long outputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-opus-4-0", "claude-opus-4-1@20250805"])
def test_the_streaming_rule_is_the_sdks_own(model):
    from anthropic._constants import MODEL_NONSTREAMING_TOKENS

    client = anthropic.Anthropic(api_key="x")
    cap = MODEL_NONSTREAMING_TOKENS.get(model)
    for max_tokens in (1, 4_096, 8_192, 8_193, 16_384, 21_333, 21_334, 32_000, 64_000, 128_000):
        try:
            client._calculate_nonstreaming_timeout(max_tokens, cap)
            sdk_refuses = False
        except ValueError:
            sdk_refuses = True
        assert streaming_required(max_tokens, nonstreaming_cap=cap) == sdk_refuses, (model, max_tokens)


def _long_output_session():
    engine, _, _ = open_session()
    session = engine.session("long", agent=sample_agent(), model=anthropic_model("claude-sonnet-4-6", output_reserve=64_000))
    session.user("Write the full migration guide.")
    return session


def test_an_output_reserve_the_sdk_only_streams_is_refused_by_send_before_anything_is_built():
    session = _long_output_session()
    provider = Recorder(_message("A long guide."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    before = session.history.events
    with pytest.raises(StreamingRequired) as info:
        session.send(client.messages.create)
    assert "session.stream" in info.value.message and info.value.max_tokens == 64_000
    assert session.history.events == before and provider.bodies == []
    # The SDK's own wrapper raises the bare ValueError itself; it is translated all the same.
    with pytest.raises(StreamingRequired):
        session.send(client.messages.with_raw_response.create)
    assert provider.bodies == []


def test_the_same_reserve_streams_and_an_explicit_timeout_sends():
    session = _long_output_session()
    provider = Recorder(_message("A long guide."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    with session.stream(client.messages.stream) as stream:
        assert "".join(stream.text_stream) == "A long guide."
    assert provider.bodies[-1]["max_tokens"] == 64_000 and provider.bodies[-1]["stream"] is True
    session.user("And a summary.")
    session.send(client.messages.create, timeout=1_800)  # the SDK trusts a caller's own timeout
    assert "stream" not in provider.bodies[-1]
    assert [e.type for e in session.history.events][-2:] == ["message.assistant", "model.response"]


def test_send_refuses_a_streaming_call_and_points_to_stream():
    _, session, _ = open_session()
    session.user("hi")
    with pytest.raises(UsageError, match="session.stream"):
        session.send(anthropic.Anthropic(api_key="x").messages.create, stream=True)


def _thinking_session(reserve: int):
    engine, _, _ = open_session()
    session = engine.session("think", agent=sample_agent(), model=anthropic_model("claude-sonnet-4-6", output_reserve=reserve))
    session.user("Find the rounding bug.")
    return session


@pytest.mark.parametrize("budget", [512, 8_192, 10_000])
def test_a_thinking_budget_the_api_refuses_is_a_typed_error_before_anything_is_built(budget):
    # The SDK's rule (types/thinking_config_enabled_param.py): at least 1,024 and below max_tokens.
    session = _thinking_session(8_192)
    provider = Recorder(_message("Found it."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    before = session.history.events
    thinking = {"type": "enabled", "budget_tokens": budget}
    with pytest.raises(ThinkingBudgetInvalid) as info:
        session.send(client.messages.create, thinking=thinking)
    assert info.value.budget_tokens == budget and f"{budget:,}" in info.value.message
    with pytest.raises(ThinkingBudgetInvalid):
        session.stream(client.messages.stream, thinking=thinking)
    assert session.history.events == before and provider.bodies == []


def test_a_thinking_budget_below_the_reserve_and_adaptive_thinking_are_sent_as_given():
    session = _thinking_session(8_192)
    provider = Recorder(_message("Found it."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    session.send(client.messages.create, thinking={"type": "enabled", "budget_tokens": 8_191})
    assert provider.bodies[-1]["thinking"] == {"type": "enabled", "budget_tokens": 8_191}
    assert provider.bodies[-1]["max_tokens"] == 8_192
    session.user("And the next one?")
    session.send(client.messages.create, thinking={"type": "adaptive"})
    assert provider.bodies[-1]["thinking"] == {"type": "adaptive"}


# -- cache TTL per agent profile ------------------------------------------------------------------


def _ttls(body: dict) -> list[str | None]:
    marks = [block.get("cache_control") for block in body["system"]] + [t.get("cache_control") for t in body.get("tools", [])]
    return [m.get("ttl", "5m") for m in marks if m]


def test_a_one_hour_agent_sends_and_streams_its_prefix_with_the_one_hour_ttl():
    engine, _, _ = open_session()
    agent = AgentSpec(policy="You orchestrate the release.", instructions="Delegate the checks.", cache_ttl="1h")
    session = engine.session("orchestrator", agent=agent, model=anthropic_model("claude-sonnet-4-6"))
    provider = Recorder(_message("On it."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    session.user("Ship 2.4.")
    session.send(client.messages.create)
    assert "1h" in _ttls(provider.bodies[-1])
    session.user("And the changelog.")
    with session.stream(client.messages.stream) as stream:
        stream.until_done()
    assert "1h" in _ttls(provider.bodies[-1])
    plan = session.setup.plan
    assert plan.cache_ttl == "1h" and plan.to_dict()["cache_ttl"] == "1h"
    session.user("Status?")
    request = session.next_request()
    assert "1h" in _ttls(request.anthropic()) and "1h" not in _ttls(request.anthropic(prefix_ttl="5m"))


def test_the_default_plan_is_serialized_as_before():
    _, session, _ = open_session()
    session.user("hi")
    request = session.next_request()
    assert request.plan.cache_ttl == "5m" and "cache_ttl" not in request.plan.to_dict()
    assert "1h" not in _ttls(request.anthropic())


def test_a_different_ttl_is_a_different_plan_and_reopen_keeps_it(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    engine, session, clock = open_session(url=url)
    session.user("hi")
    first = session.next_request()
    session.adapter.record_assistant(_assistant("hello"))
    longer = engine.session("s1", agent=_with_ttl(session.agent, "1h"), model=session.model)
    longer.user("again")
    second = longer.next_request()
    rotated = [e.payload for e in longer.history.events if e.type == "context.epoch.rotated"]
    assert [r.reason for r in rotated] == ["cache_ttl_changed"] and second.plan.epoch == first.plan.epoch + 1
    assert second.prefix_sha256 == first.prefix_sha256
    longer.adapter.record_assistant(_assistant("again"))
    engine.close()
    reopened = reopen(Engine.open(url, clock=clock, secret=TEST_SECRET), "s1")
    reopened.user("once more")
    assert reopened.next_request().plan.epoch == second.plan.epoch and reopened.setup.plan.cache_ttl == "1h"


def test_an_unknown_ttl_is_refused():
    with pytest.raises(UsageError, match="cache_ttl"):
        AgentSpec(policy="p", cache_ttl="10m")


def test_replay_runs_as_the_agent_profile_it_is_given():
    transcript = Transcript(
        session_id="t1",
        format="test",
        source="inline",
        messages=(TranscriptMessage(role="user", text="Fix the export."), TranscriptMessage(role="assistant", text="Done.")),
    )
    engine = Engine.open("memory://", secret=TEST_SECRET)
    result = replay(transcript, engine=engine, model=anthropic_model("claude-sonnet-4-6"), cache_ttl="1h")
    [request] = result.requests
    assert request.plan.cache_ttl == "1h" and "1h" in _ttls(request.body())


def _assistant(text: str) -> AssistantMessage:
    return AssistantMessage(text=text)


def _with_ttl(agent: AgentSpec, ttl: str) -> AgentSpec:
    return replace(agent, cache_ttl=ttl)


def test_the_async_send_refuses_long_outputs_and_mismatched_wires_before_anything_is_built():
    import asyncio

    session = _long_output_session()
    client = anthropic.AsyncAnthropic(api_key="test", max_retries=0)
    before = session.history.events

    async def attempt(call) -> None:
        await session.aio.send(call)

    with pytest.raises(StreamingRequired):
        asyncio.run(attempt(client.messages.create))
    with pytest.raises(WireMismatch):
        asyncio.run(attempt(openai.AsyncOpenAI(api_key="test").responses.create))
    assert session.history.events == before


def test_a_create_method_given_to_stream_and_a_stream_method_given_to_send_are_refused():
    _, session, _ = open_session()
    client = anthropic.Anthropic(api_key="x")
    session.user("hi")
    before = session.history.events
    with pytest.raises(UsageError, match=r"client\.messages\.stream"):
        session.stream(client.messages.create)
    with pytest.raises(UsageError, match="session.stream"):
        session.send(client.messages.stream)
    assert session.history.events == before


def test_a_client_with_its_own_timeout_sends_long_outputs_as_the_sdk_does():
    session = _long_output_session()
    provider = Recorder(_message("A long guide."))
    client = anthropic.Anthropic(api_key="test", max_retries=0, timeout=1_800, http_client=provider.http())
    session.send(client.messages.create)
    assert provider.bodies[-1]["max_tokens"] == 64_000 and "stream" not in provider.bodies[-1]


def test_a_keyword_the_engine_sets_is_refused_by_name_and_others_pass_through():
    _, session, _ = open_session()
    provider = Recorder(_message("ok"))
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=provider.http())
    session.user("hi")
    with pytest.raises(UsageError, match="max_tokens is set by the engine"):
        session.send(client.messages.create, max_tokens=10)
    assert provider.bodies == []
    session.send(client.messages.create, metadata={"user_id": "u-1"})
    assert provider.bodies[-1]["metadata"] == {"user_id": "u-1"}
