"""OpenAI Chat Completions and Responses renderers, and the capabilities record they read."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason='property tests need hypothesis: pip install "contextwright[dev]"')
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Shared builders live with the Anthropic tests (tests/providers has no conftest of its own).
from test_render_anthropic import (
    SYSTEM,
    assert_golden,
    call,
    conversations,
    make_fanout_request,
    make_request,
    request_of,
    result,
    user_text,
)

from contextwright import models
from contextwright.assembly.request import Message, NeutralRequest
from contextwright.canonical import canonical_json
from contextwright.errors import UsageError
from contextwright.providers.capabilities import ProviderCapabilities, capabilities_for
from contextwright.providers.wires import openai_chat, openai_responses

GPT5 = capabilities_for(models.openai("gpt-5.1"))
GPT4O = capabilities_for(models.openai("gpt-4o"))


def openai_request(**kwargs: Any) -> NeutralRequest:
    """The realistic request, built for an OpenAI model."""
    return make_request(provider="openai", model="gpt-5.1", **kwargs)


class TestCapabilities:
    def test_anthropic_limits_come_from_the_model(self) -> None:
        caps = capabilities_for(models.anthropic("claude-opus-4-5-20251101"))
        assert (
            caps.provider,
            caps.max_breakpoints,
            caps.lookback_blocks,
            caps.min_cacheable_tokens,
        ) == ("anthropic", 4, 20, 4096)
        assert caps.ttls == ("5m", "1h")
        assert not caps.supports_cache_key and not caps.supports_cache_retention

    @pytest.mark.parametrize(
        ("model", "retention", "role"),
        [
            ("gpt-5.1", True, "developer"),
            ("gpt-5", True, "developer"),
            ("gpt-5-mini", False, "developer"),
            ("gpt-5.5", True, "developer"),
            ("gpt-4.1", True, "system"),
            ("gpt-4.1-mini", False, "system"),
            ("gpt-4o", False, "system"),
            ("gpt-4.1-2025-04-14", True, "system"),
        ],
    )
    def test_openai_options_per_family(self, model: str, retention: bool, role: str) -> None:
        caps = capabilities_for(models.openai(model))
        assert caps.supports_cache_key and caps.max_breakpoints == 0
        assert caps.supports_cache_retention is retention
        assert caps.instruction_role == role

    def test_future_numbered_models_get_retention(self) -> None:
        assert capabilities_for(models.openai("gpt-5.6", context_window=1_000_000)).supports_cache_retention

    def test_in_memory_retention_is_refused_where_only_24h_exists(self) -> None:
        assert capabilities_for(models.openai("gpt-5.1"), cache_retention="in_memory").cache_retention == "in_memory"
        with pytest.raises(UsageError, match="24h"):
            capabilities_for(models.openai("gpt-5.5"), cache_retention="in_memory")

    def test_negative_limits_are_refused(self) -> None:
        with pytest.raises(UsageError):
            replace(GPT5, max_breakpoints=-1)


def tool_call_rules_hold(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool_calls message is directly followed by exactly its tool messages."""
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            # Check a tool message only ever follows an assistant call or another tool message.
            assert messages[index - 1]["role"] in ("assistant", "tool")
        if message.get("tool_calls"):
            ids = [c["id"] for c in message["tool_calls"]]
            following = messages[index + 1 : index + 1 + len(ids)]
            assert [m["role"] for m in following] == ["tool"] * len(ids)
            assert sorted(m["tool_call_id"] for m in following) == sorted(ids)


class TestChat:
    def test_realistic_request(self) -> None:
        request = openai_request()
        body = openai_chat.render(request, GPT5)
        messages = body["messages"]
        # Check the prefix comes first as one developer message, blocks joined in order.
        assert messages[0] == {"role": "developer", "content": "\n\n".join(b.text for b in SYSTEM)}
        assert [m["role"] for m in messages] == [
            "developer",
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "user",
        ]
        # Check the assistant carries its text and canonical-JSON arguments.
        assistant = messages[2]
        assert assistant["content"].startswith("Let me look")
        assert assistant["tool_calls"][0] == {
            "id": "toolu_01",
            "type": "function",
            "function": {
                "name": "read_file",
                "arguments": '{"max_bytes":20000,"path":"tests/test_login.py"}',
            },
        }
        assert [m["tool_call_id"] for m in messages[3:6]] == ["toolu_01", "toolu_02", "toolu_03"]
        # Check the volatile tail is last, as its own user message.
        assert messages[-1]["content"].startswith("Runtime:")
        # Check tools, token limit and cache routing.
        assert body["tools"][1] == {
            "type": "function",
            "function": {
                "name": "run_tests",
                "description": "Run the test suite, optionally filtered by a -k expression.",
                "parameters": {"properties": {"k": {"type": "string"}}, "type": "object"},
            },
        }
        assert body["max_completion_tokens"] == 4096
        assert body["prompt_cache_key"] == "cw:sess-42:1"
        assert body["prompt_cache_retention"] == "24h"
        tool_call_rules_hold(messages)

    def test_older_model_gets_system_role_and_no_retention(self) -> None:
        body = openai_chat.render(make_request(provider="openai", model="gpt-4o"), GPT4O)
        assert body["messages"][0]["role"] == "system"
        assert "prompt_cache_retention" not in body
        assert body["prompt_cache_key"] == "cw:sess-42:1"

    def test_no_cache_key_support_means_no_key(self) -> None:
        body = openai_chat.render(
            openai_request(),
            replace(GPT5, supports_cache_key=False, supports_cache_retention=False),
        )
        assert "prompt_cache_key" not in body and "prompt_cache_retention" not in body

    def test_results_precede_user_text_and_blank_parts_vanish(self) -> None:
        messages = (
            Message(role="user", parts=(user_text("go", "e1"),)),
            Message(role="assistant", parts=(call("t1", "run_tests", {}, "e2"),)),
            Message(role="user", parts=(user_text("note", "e3"), result("t1", "run_tests", "ok", "e4"))),
        )
        body = openai_chat.render(request_of(messages, stable_messages=3, provider="openai", model="gpt-5.1"), GPT5)
        assert [m["role"] for m in body["messages"]] == [
            "developer",
            "user",
            "assistant",
            "tool",
            "user",
        ]
        assert body["messages"][2] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "run_tests", "arguments": "{}"},
                }
            ],
        }

    def test_misplaced_parts_and_wrong_provider_raise(self) -> None:
        bad = request_of((Message(role="assistant", parts=(result("t", "f", "x", "e"),)),), stable_messages=0)
        with pytest.raises(openai_chat.RenderError, match="results are user content"):
            openai_chat.render(bad, GPT5)
        with pytest.raises(openai_chat.RenderError, match="provider"):
            openai_chat.render(openai_request(), capabilities_for(models.anthropic("claude-sonnet-4-6")))

    def test_tool_names_the_api_rejects_are_mapped_not_refused(self) -> None:
        from contextwright.providers.tool_names import wire_tool_name

        messages = (
            Message(role="user", parts=(user_text("go", "e1"),)),
            Message(role="assistant", parts=(call("t1", "context.update", {}, "e2"),)),
        )
        odd = request_of(messages, stable_messages=2, provider="openai", model="gpt-5.1")
        chat = openai_chat.render(odd, GPT5)["messages"][-1]["tool_calls"][0]["function"]["name"]
        responses = openai_responses.render(odd, GPT5)["input"][-1]["name"]
        # Check both wires send the same valid name for the recorded one.
        assert chat == responses == wire_tool_name("context.update") != "context.update"

    def test_golden(self) -> None:
        assert_golden("openai_chat_multi_turn", openai_chat.render(openai_request(), GPT5))


class TestResponses:
    def test_realistic_request(self) -> None:
        body = openai_responses.render(openai_request(), GPT5)
        items = body["input"]
        # Check the prefix is the leading developer item and `instructions` is not used.
        assert "instructions" not in body
        assert items[0] == {"role": "developer", "content": "\n\n".join(b.text for b in SYSTEM)}
        kinds = [item.get("type", item.get("role")) for item in items]
        assert kinds == ["developer", "user", "assistant"] + ["function_call"] * 3 + ["function_call_output"] * 3 + ["user"]
        assert items[3] == {
            "type": "function_call",
            "call_id": "toolu_01",
            "name": "read_file",
            "arguments": '{"max_bytes":20000,"path":"tests/test_login.py"}',
        }
        assert items[8]["call_id"] == "toolu_03" and "FAILED" in items[8]["output"]
        assert items[-1]["content"].startswith("Runtime:")
        # Check tools are flat, strict off, and the cache fields are set.
        assert body["tools"][0]["name"] == "read_file" and body["tools"][0]["strict"] is False
        assert body["max_output_tokens"] == 4096
        assert body["prompt_cache_key"] == "cw:sess-42:1"
        # Check the deprecated retention field is gone (openai 3.57: use prompt_cache_options.ttl),
        # and that a stateless request of a reasoning model asks for its encrypted reasoning back.
        assert "prompt_cache_retention" not in body and "prompt_cache_options" not in body
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]

    def test_golden(self) -> None:
        assert_golden("openai_responses_multi_turn", openai_responses.render(openai_request(), GPT5))

    def test_a_calls_namespace_and_a_texts_phase_go_back_and_are_left_out_when_unset(self) -> None:
        answer = {
            "object": "response",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "phase": "commentary",
                    "content": [{"type": "output_text", "text": "On it."}],
                },
                {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": "{}"},
            ],
        }
        message, _ = openai_responses.parse_answer(answer)
        assert message.phase == "commentary" and [c.namespace for c in message.tool_calls] == ["agents", None]
        text = replace(user_text("On it.", "ev:1"), trust="assistant", source="assistant", phase=message.phase)
        parts = (text, replace(call("c1", "spawn", {}, "ev:1"), namespace="agents"), call("c2", "read_file", {}, "ev:1"))
        messages = (Message(role="user", parts=(user_text("Go.", "ev:0"),)), Message(role="assistant", parts=parts))
        request = request_of(messages, stable_messages=1, provider="openai", model="gpt-5.1")
        items = openai_responses.render(request, GPT5)["input"]
        assert items[2]["phase"] == "commentary"
        assert items[3] == {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"}
        assert "namespace" not in items[4] and "phase" not in items[1]
        # Unset, they are not in the canonical request either (requests recorded before them keep their hash).
        canonical = request.canonical()
        assert canonical.count('"namespace"') == 1 and canonical.count('"phase"') == 1
        # Other wires have no place for them: their bodies are as before.
        plain = request_of(
            (
                messages[0],
                Message(role="assistant", parts=(replace(text, phase=None), *(replace(p, namespace=None) for p in parts[1:]))),
            ),
            stable_messages=1,
            provider="openai",
            model="gpt-5.1",
        )
        assert openai_chat.render(request, GPT5) == openai_chat.render(plain, GPT5)
        # Mixed phases keep no phase: the text is one.
        mixed = {**answer, "output": [*answer["output"], {**answer["output"][0], "phase": "final_answer"}]}
        assert openai_responses.parse_answer(mixed)[0].phase is None


RENDERERS = {
    "chat": (openai_chat.render, "messages"),
    "responses": (openai_responses.render, "input"),
}


@pytest.mark.parametrize("kind", sorted(RENDERERS))
class TestBothWires:
    def test_history_renders_as_a_byte_prefix_of_the_next_request(self, kind: str) -> None:
        render, key = RENDERERS[kind]
        earlier = replace(openai_request(), messages=openai_request().messages[:-1], stable_messages=2)
        later = make_fanout_request(provider="openai", model="gpt-5.1")
        before, after = render(earlier, GPT5)[key], render(later, GPT5)[key]
        # Check the cacheable prefix: every item of the shorter history reappears unchanged.
        assert canonical_json(after[: len(before)]) == canonical_json(before)

    def test_determinism(self, kind: str) -> None:
        render, _ = RENDERERS[kind]
        request = make_fanout_request(provider="openai", model="gpt-5.1")
        assert json.dumps(render(request, GPT5)) == json.dumps(render(request, GPT5))

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(pair=conversations(), data=st.data())
    def test_random_requests(self, kind: str, pair: tuple[NeutralRequest, NeutralRequest | None], data: st.DataObject) -> None:
        render, key = RENDERERS[kind]
        request = replace(pair[0], provider="openai", model="gpt-5.1")
        body = render(request, GPT5)
        items = body[key]
        # Check the prefix is first (when there is one) and no blank text is sent.
        if any(b.text.strip() for b in request.system):
            assert items[0]["role"] == "developer"
        assert all(item["content"].strip() for item in items if isinstance(item.get("content"), str))
        if kind == "chat":
            tool_call_rules_hold(items)
        else:
            # Check each output comes after its call.
            seen: set[str] = set()
            for item in items:
                if item.get("type") == "function_call":
                    seen.add(item["call_id"])
                if item.get("type") == "function_call_output":
                    assert item["call_id"] in seen
        # Check a shorter history renders as a prefix of this body.
        cut = data.draw(st.integers(0, len(request.messages)))
        shorter = render(replace(request, messages=request.messages[:cut], stable_messages=0), GPT5)[key] if cut else []
        if shorter:
            assert canonical_json(items[: len(shorter)]) == canonical_json(shorter)
        assert canonical_json(body) == canonical_json(render(request, GPT5))


def test_capabilities_are_a_frozen_record() -> None:
    caps: ProviderCapabilities = GPT5
    with pytest.raises(AttributeError):
        caps.max_breakpoints = 4  # type: ignore[misc]


def test_only_reasoning_models_ask_for_encrypted_reasoning_and_only_newer_ones_get_cache_options() -> None:
    body = openai_responses.render(openai_request(), GPT4O)
    assert "include" not in body and "prompt_cache_options" not in body and "prompt_cache_retention" not in body
    newer = capabilities_for(models.openai("gpt-5.6", context_window=400_000))
    body = openai_responses.render(openai_request(), newer)
    assert body["include"] == ["reasoning.encrypted_content"] and body["prompt_cache_options"] == {"ttl": "12h"}
    assert openai_responses.render(openai_request(), replace(newer, cache_ttl="30m"))["prompt_cache_options"] == {"ttl": "30m"}
