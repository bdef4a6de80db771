"""Rendered bodies go through the official SDKs unchanged (mock transport, no network).

Each body is passed as ``**body`` to ``messages.create``, ``chat.completions.create``
or ``responses.create``; the mock transport captures the JSON the SDK put on the
wire and answers with a response of the recorded shape. The wire JSON must equal
the rendered body, cache markers and cache key included. Bodies are also checked
structurally against the SDKs' own request TypedDicts.
"""

from __future__ import annotations

import collections.abc
import functools
import json
import types
import typing
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("httpx2", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("openai", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")

import anthropic as anthropic_sdk
import httpx2
import openai as openai_sdk
import typing_extensions
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from hypothesis import HealthCheck, given, settings
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from test_render_anthropic import ANTHROPIC_CAPS, conversations, make_fanout_request, make_request

from contextwright import models
from contextwright.assembly.request import NeutralRequest
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.wires import anthropic, openai_chat, openai_responses

GPT5 = capabilities_for(models.openai("gpt-5.1"))
GPT4O = capabilities_for(models.openai("gpt-4o"))

# Response bodies in the shapes the providers return (usage as in the research notes).
ANTHROPIC_RESPONSE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [{"type": "text", "text": "The session store drops the key; fixing it now."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 12,
        "output_tokens": 3,
        "cache_creation_input_tokens": 2048,
        "cache_read_input_tokens": 4096,
        "cache_creation": {"ephemeral_5m_input_tokens": 2048, "ephemeral_1h_input_tokens": 0},
    },
}
CHAT_RESPONSE = {
    "id": "chatcmpl-C1x2y3",
    "object": "chat.completion",
    "created": 1_764_400_000,
    "model": "gpt-5.1-2025-11-13",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Fixed.",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    },
    "service_tier": "default",
}
RESPONSES_RESPONSE = {
    "id": "resp_67ccd2bed1ec8190b14f964abc054267",
    "object": "response",
    "created_at": 1_764_400_000,
    "status": "completed",
    "model": "gpt-5.1-2025-11-13",
    "output": [
        {
            "type": "message",
            "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Fixed.", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "store": False,
    "usage": {
        "input_tokens": 2006,
        "input_tokens_details": {"cached_tokens": 1920},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2306,
    },
}


class Wire:
    """A mock transport that records every request body and answers with one canned response."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.bodies: list[Any] = []
        self.paths: list[str] = []
        self._response = response

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.paths.append(request.url.path)
        return httpx2.Response(200, json=self._response)

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))


def send_anthropic(body: dict[str, Any]) -> tuple[Any, Wire]:
    wire = Wire(ANTHROPIC_RESPONSE)
    client = anthropic_sdk.Anthropic(api_key="test", max_retries=0, http_client=wire.client())
    return client.messages.create(**body), wire


def send_chat(body: dict[str, Any]) -> tuple[Any, Wire]:
    wire = Wire(CHAT_RESPONSE)
    client = openai_sdk.OpenAI(api_key="test", max_retries=0, http_client=wire.client())
    return client.chat.completions.create(**body), wire


def send_responses(body: dict[str, Any]) -> tuple[Any, Wire]:
    wire = Wire(RESPONSES_RESPONSE)
    client = openai_sdk.OpenAI(api_key="test", max_retries=0, http_client=wire.client())
    return client.responses.create(**body), wire


# ---------------------------------------------------------------------------
# A structural check of a JSON value against an SDK TypedDict
# ---------------------------------------------------------------------------

_LIST_ORIGINS = (list, collections.abc.Iterable, collections.abc.Sequence)


def conforms(value: Any, hint: Any, path: str = "$") -> list[str]:
    """Problems found checking ``value`` against ``hint`` (empty when it conforms)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (Any, object):
        return []
    if origin in (typing.Annotated, typing_extensions.Required, typing_extensions.NotRequired):
        return conforms(value, args[0], path)
    if origin in (typing.Union, types.UnionType):
        attempts = [conforms(value, member, path) for member in args]
        return [] if any(not a for a in attempts) else min(attempts, key=len)
    if origin in (typing.Literal, typing_extensions.Literal):
        return [] if value in args else [f"{path}: {value!r} not in {args}"]
    if typing_extensions.is_typeddict(hint):
        return _conforms_typeddict(value, hint, path)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        return [p for k, v in value.items() for p in conforms(v, args[1] if args else Any, f"{path}.{k}")]
    if origin in _LIST_ORIGINS or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        return [p for i, v in enumerate(value) for p in conforms(v, args[0], f"{path}[{i}]")]
    if hint is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if hint in (str, int, float, bool):
        ok = isinstance(value, hint) and not (hint is int and isinstance(value, bool))
        return [] if ok else [f"{path}: expected {hint.__name__}, got {value!r}"]
    # Fail closed: response models (pydantic classes) and other exotic hints never
    # describe a plain JSON request value here.
    return [f"{path}: no JSON reading of {hint!r}"]


@functools.cache
def _type_hints(hint: Any) -> dict[str, Any]:
    return typing.get_type_hints(hint, include_extras=True)


def _conforms_typeddict(value: Any, hint: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {hint.__name__}"]
    hints = _type_hints(hint)
    problems = [f"{path}: unknown key {k!r} for {hint.__name__}" for k in value if k not in hints]
    for key, key_hint in hints.items():
        # String annotations hide Required[] from __required_keys__, so read the hint itself.
        required = typing.get_origin(key_hint) is typing_extensions.Required or (
            hint.__total__ and typing.get_origin(key_hint) is not typing_extensions.NotRequired
        )
        if key not in value:
            if required:
                problems.append(f"{path}: missing {key!r} for {hint.__name__}")
            continue
        problems += conforms(value[key], key_hint, f"{path}.{key}")
    return problems


# ---------------------------------------------------------------------------
# Bodies under test
# ---------------------------------------------------------------------------


def anthropic_bodies() -> dict[str, dict[str, Any]]:
    return {
        "multi_turn_1h": anthropic.render(make_request(), ANTHROPIC_CAPS, prefix_ttl="1h"),
        "fanout_lookback": anthropic.render(make_fanout_request(30), ANTHROPIC_CAPS, previous=make_request()),
        "no_system": anthropic.render(replace(make_request(), system=()), ANTHROPIC_CAPS),
    }


def chat_bodies() -> dict[str, dict[str, Any]]:
    return {
        "gpt-5.1": openai_chat.render(make_request(provider="openai", model="gpt-5.1"), GPT5),
        "gpt-4o": openai_chat.render(make_request(provider="openai", model="gpt-4o"), GPT4O),
        "fanout": openai_chat.render(make_fanout_request(provider="openai", model="gpt-5.1"), GPT5),
    }


def responses_bodies() -> dict[str, dict[str, Any]]:
    return {
        "gpt-5.1": openai_responses.render(make_request(provider="openai", model="gpt-5.1"), GPT5),
        "fanout": openai_responses.render(make_fanout_request(provider="openai", model="gpt-5.1"), GPT5),
    }


class TestAnthropicWire:
    @pytest.mark.parametrize("name", sorted(anthropic_bodies()))
    def test_sdk_sends_the_body_unchanged(self, name: str) -> None:
        body = anthropic_bodies()[name]
        message, wire = send_anthropic(body)
        # Check what went on the wire is exactly the rendered body.
        assert wire.paths == ["/v1/messages"]
        assert wire.bodies == [body]
        assert message.usage.cache_read_input_tokens == 4096
        # Check the cache markers survived the SDK.
        sent = wire.bodies[0]
        marked = [
            b
            for b in [*sent.get("tools", []), *sent.get("system", [])] + [c for m in sent["messages"] for c in m["content"]]
            if "cache_control" in b
        ]
        assert 1 <= len(marked) <= 4
        assert sent.get("system", sent["tools"])[-1]["cache_control"]["type"] == "ephemeral"

    def test_1h_prefix_ttl_on_the_wire(self) -> None:
        _, wire = send_anthropic(anthropic_bodies()["multi_turn_1h"])
        assert wire.bodies[0]["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}

    @pytest.mark.parametrize("name", sorted(anthropic_bodies()))
    def test_body_matches_the_sdk_param_types(self, name: str) -> None:
        assert conforms(anthropic_bodies()[name], MessageCreateParamsNonStreaming) == []


class TestChatWire:
    @pytest.mark.parametrize("name", sorted(chat_bodies()))
    def test_sdk_sends_the_body_unchanged(self, name: str) -> None:
        body = chat_bodies()[name]
        completion, wire = send_chat(body)
        assert wire.paths == ["/v1/chat/completions"]
        assert wire.bodies == [body]
        assert wire.bodies[0]["prompt_cache_key"] == "cw:sess-42:1"
        assert completion.usage.prompt_tokens_details.cached_tokens == 1920

    def test_retention_only_where_supported(self) -> None:
        assert send_chat(chat_bodies()["gpt-5.1"])[1].bodies[0]["prompt_cache_retention"] == "24h"
        assert "prompt_cache_retention" not in send_chat(chat_bodies()["gpt-4o"])[1].bodies[0]

    @pytest.mark.parametrize("name", sorted(chat_bodies()))
    def test_body_matches_the_sdk_param_types(self, name: str) -> None:
        assert conforms(chat_bodies()[name], CompletionCreateParamsNonStreaming) == []


class TestResponsesWire:
    @pytest.mark.parametrize("name", sorted(responses_bodies()))
    def test_sdk_sends_the_body_unchanged(self, name: str) -> None:
        body = responses_bodies()[name]
        response, wire = send_responses(body)
        assert wire.paths == ["/v1/responses"]
        assert wire.bodies == [body]
        assert wire.bodies[0]["prompt_cache_key"] == "cw:sess-42:1"
        assert response.usage.input_tokens_details.cached_tokens == 1920
        assert response.output_text == "Fixed."

    @pytest.mark.parametrize("name", sorted(responses_bodies()))
    def test_body_matches_the_sdk_param_types(self, name: str) -> None:
        assert conforms(responses_bodies()[name], ResponseCreateParamsNonStreaming) == []


def test_the_type_check_notices_a_wrong_body() -> None:
    # Check the structural checker is not vacuous.
    body = anthropic_bodies()["multi_turn_1h"]
    broken = {**body, "messages": [{"role": "user", "content": [{"type": "txt", "text": "x"}]}]}
    assert conforms(broken, MessageCreateParamsNonStreaming)
    assert conforms({**body, "max_tokens": "4096"}, MessageCreateParamsNonStreaming)
    assert conforms({**body, "bogus": 1}, MessageCreateParamsNonStreaming)
    chat = chat_bodies()["gpt-5.1"]
    assert conforms({**chat, "prompt_cache_retention": "1w"}, CompletionCreateParamsNonStreaming)


SENDERS: dict[str, tuple[Callable[..., dict[str, Any]], Callable[..., Any], Any]] = {
    "anthropic": (anthropic.render, send_anthropic, MessageCreateParamsNonStreaming),
    "chat": (openai_chat.render, send_chat, CompletionCreateParamsNonStreaming),
    "responses": (openai_responses.render, send_responses, ResponseCreateParamsNonStreaming),
}


@pytest.mark.parametrize("kind", sorted(SENDERS))
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(pair=conversations(max_messages=30))
def test_random_bodies_cross_the_sdk_unchanged(kind: str, pair: tuple[NeutralRequest, NeutralRequest | None]) -> None:
    render, send, params = SENDERS[kind]
    request, previous = pair
    if kind == "anthropic":
        body = render(request, ANTHROPIC_CAPS, previous=previous)
    else:
        body = render(replace(request, provider="openai", model="gpt-5.1"), GPT5)
    _, wire = send(body)
    assert wire.bodies == [body]
    assert conforms(body, params) == []
