"""Usage parsing: recorded provider shapes, real SDK types, normalisation of input counts."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("httpx2", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("openai", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")

import anthropic
import httpx2
import openai
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from contextwright.errors import UsageError
from contextwright.providers.errors import MalformedProviderResponse
from contextwright.providers.usage import Usage
from contextwright.providers.wires.anthropic import parse_usage as parse_anthropic_usage
from contextwright.providers.wires.openai_chat import parse_usage as parse_openai_chat_usage
from contextwright.providers.wires.openai_responses import parse_usage as parse_openai_responses_usage

# The usage block recorded from a real round trip through the Anthropic SDK
# (research/integrations.md, "Verified: offline round trip").
RECORDED_ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "output_tokens": 3,
    "cache_creation_input_tokens": 2048,
    "cache_read_input_tokens": 4096,
    "cache_creation": {"ephemeral_5m_input_tokens": 2048, "ephemeral_1h_input_tokens": 0},
}


def _anthropic_message(usage: dict) -> dict:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def _chat_completion(usage: dict) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-5.5",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
        "usage": usage,
    }


def _response(usage: dict) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-5.6-terra",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


class TestAnthropic:
    def test_recorded_shape_keeps_parts_apart(self) -> None:
        usage = parse_anthropic_usage(RECORDED_ANTHROPIC_USAGE)
        assert usage == Usage(
            input_tokens=12,
            cache_read_tokens=4096,
            cache_write_5m_tokens=2048,
            cache_write_1h_tokens=0,
            output_tokens=3,
        )
        # Check: the total matches what the SDK's own telemetry reported for that call (6156).
        assert usage.total_input == 6156
        assert usage.cache_write_tokens == 2048

    def test_one_hour_writes_go_to_their_own_field(self) -> None:
        raw = {
            "input_tokens": 5,
            "output_tokens": 1,
            "cache_creation_input_tokens": 3000,
            "cache_read_input_tokens": 0,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 1000,
                "ephemeral_1h_input_tokens": 2000,
            },
        }
        usage = parse_anthropic_usage(raw)
        assert (usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == (1000, 2000)
        assert usage.total_input == 3005

    def test_older_shape_without_ttl_split_counts_as_5m(self) -> None:
        usage = parse_anthropic_usage(
            {
                "input_tokens": 7,
                "output_tokens": 2,
                "cache_creation_input_tokens": 1500,
                "cache_read_input_tokens": 100,
            }
        )
        assert (
            usage.cache_write_5m_tokens,
            usage.cache_write_1h_tokens,
            usage.cache_read_tokens,
        ) == (1500, 0, 100)

    def test_no_cache_fields_at_all(self) -> None:
        usage = parse_anthropic_usage({"input_tokens": 40, "output_tokens": 9})
        assert usage == Usage(input_tokens=40, output_tokens=9)

    def test_vendor_extras_are_not_usage(self) -> None:
        # The one Usage type is what the log records: extras with no common meaning are left out.
        usage = parse_anthropic_usage({**RECORDED_ANTHROPIC_USAGE, "service_tier": "standard", "inference_geo": "us"})
        assert usage == parse_anthropic_usage(RECORDED_ANTHROPIC_USAGE)

    def test_sdk_message_and_its_usage_object(self) -> None:
        message = Message.model_validate(_anthropic_message(RECORDED_ANTHROPIC_USAGE))
        assert parse_anthropic_usage(message) == parse_anthropic_usage(message.usage)
        assert parse_anthropic_usage(message.usage).total_input == 6156

    def test_real_client_round_trip(self) -> None:
        def handler(request: httpx2.Request) -> httpx2.Response:
            assert json.loads(request.content)["model"] == "claude-sonnet-4-6"
            return httpx2.Response(200, json=_anthropic_message(RECORDED_ANTHROPIC_USAGE))

        client = anthropic.Anthropic(
            api_key="x",
            base_url="http://anthropic.test",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )
        response = client.messages.create(model="claude-sonnet-4-6", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
        assert parse_anthropic_usage(response).cache_read_tokens == 4096

    def test_missing_input_tokens_is_malformed(self) -> None:
        with pytest.raises(MalformedProviderResponse, match="input_tokens"):
            parse_anthropic_usage({"output_tokens": 3})

    def test_negative_count_is_malformed(self) -> None:
        with pytest.raises(MalformedProviderResponse):
            parse_anthropic_usage({"input_tokens": -1, "output_tokens": 0})

    def test_not_a_mapping(self) -> None:
        with pytest.raises(MalformedProviderResponse):
            parse_anthropic_usage(42)


class TestOpenAIChat:
    def test_prompt_tokens_include_cached_ones(self) -> None:
        # cached_tokens = 1536 is the value the verified offline chat call returned.
        raw = {
            "prompt_tokens": 2006,
            "completion_tokens": 5,
            "total_tokens": 2011,
            "prompt_tokens_details": {"cached_tokens": 1536},
        }
        usage = parse_openai_chat_usage(raw)
        assert usage.cache_read_tokens == 1536
        assert usage.input_tokens == 2006 - 1536
        assert usage.total_input == 2006  # normalised, not double counted
        assert usage.cache_write_tokens == 0

    def test_cache_write_tokens_are_excluded_from_uncached_input(self) -> None:
        raw = {
            "prompt_tokens": 5000,
            "completion_tokens": 10,
            "total_tokens": 5010,
            "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 2048},
            "completion_tokens_details": {"reasoning_tokens": 6},
        }
        usage = parse_openai_chat_usage(raw)
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_5m_tokens) == (
            5000 - 1024 - 2048,
            1024,
            2048,
        )
        assert usage.total_input == 5000
        assert usage.reasoning_output_tokens == 6

    def test_no_details_at_all(self) -> None:
        usage = parse_openai_chat_usage({"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34})
        assert usage == Usage(input_tokens=30, output_tokens=4)

    def test_sdk_chat_completion(self) -> None:
        completion = ChatCompletion.model_validate(
            _chat_completion(
                {
                    "prompt_tokens": 2000,
                    "completion_tokens": 5,
                    "total_tokens": 2005,
                    "prompt_tokens_details": {"cached_tokens": 1536},
                }
            )
        )
        usage = parse_openai_chat_usage(completion)
        assert usage == parse_openai_chat_usage(completion.usage)
        assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (464, 1536, 5)

    def test_real_client_round_trip(self) -> None:
        def handler(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(
                200,
                json=_chat_completion(
                    {
                        "prompt_tokens": 1800,
                        "completion_tokens": 2,
                        "total_tokens": 1802,
                        "prompt_tokens_details": {"cached_tokens": 1536},
                    }
                ),
            )

        client = openai.OpenAI(
            api_key="sk-test",
            base_url="http://oai.test/v1",
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        )
        completion = client.chat.completions.create(model="gpt-5.5", messages=[{"role": "user", "content": "hi"}])
        assert parse_openai_chat_usage(completion).cache_read_tokens == 1536

    def test_cached_more_than_prompt_is_malformed(self) -> None:
        with pytest.raises(MalformedProviderResponse, match="exceed"):
            parse_openai_chat_usage(
                {
                    "prompt_tokens": 10,
                    "completion_tokens": 0,
                    "prompt_tokens_details": {"cached_tokens": 11},
                }
            )


class TestOpenAIResponses:
    def test_recorded_cached_tokens(self) -> None:
        # cached_tokens = 1024 is the value the verified offline Responses call returned.
        raw = {
            "input_tokens": 3000,
            "output_tokens": 10,
            "total_tokens": 3010,
            "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 4},
        }
        usage = parse_openai_responses_usage(raw)
        assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
            3000 - 1024,
            1024,
            10,
        )
        assert usage.reasoning_output_tokens == 4

    def test_writes_of_every_retention_are_ordinary_writes(self) -> None:
        raw = {
            "input_tokens": 9000,
            "output_tokens": 1,
            "total_tokens": 9001,
            "input_tokens_details": {
                "cached_tokens": 2000,
                "cache_write_tokens": 3000,
                "cache_write_tokens_details": {"ttl_30m_tokens": 1000, "ttl_12h_tokens": 2000},
            },
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        usage = parse_openai_responses_usage(raw)
        assert usage.cache_write_5m_tokens == 3000 and usage.cache_write_1h_tokens == 0
        assert usage.input_tokens == 4000

    def test_sdk_response(self) -> None:
        response = Response.model_validate(
            _response(
                {
                    "input_tokens": 3000,
                    "output_tokens": 10,
                    "total_tokens": 3010,
                    "input_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 512},
                    "output_tokens_details": {"reasoning_tokens": 4},
                }
            )
        )
        usage = parse_openai_responses_usage(response)
        assert usage == parse_openai_responses_usage(response.usage)
        assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_5m_tokens) == (
            3000 - 1024 - 512,
            1024,
            512,
        )


class TestUsageValue:
    def test_addition_sums_every_count(self) -> None:
        a = Usage(
            input_tokens=1,
            cache_read_tokens=2,
            cache_write_5m_tokens=3,
            cache_write_1h_tokens=4,
            output_tokens=5,
        )
        b = Usage(
            input_tokens=10,
            cache_read_tokens=20,
            cache_write_5m_tokens=30,
            cache_write_1h_tokens=40,
            output_tokens=50,
        )
        total = a + b
        assert total == Usage(
            input_tokens=11,
            cache_read_tokens=22,
            cache_write_5m_tokens=33,
            cache_write_1h_tokens=44,
            output_tokens=55,
        )
        assert total.total_input == a.total_input + b.total_input

    def test_cache_read_share(self) -> None:
        assert Usage(input_tokens=25, cache_read_tokens=75).cache_read_share == 0.75
        assert Usage().cache_read_share == 0.0

    def test_negative_counts_are_refused(self) -> None:
        with pytest.raises(UsageError):
            Usage(input_tokens=-1)


def test_reasoning_output_is_read_from_each_provider_shape():

    chat = {"prompt_tokens": 100, "completion_tokens": 50, "completion_tokens_details": {"reasoning_tokens": 30}}
    responses = {"input_tokens": 100, "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 40}}
    anthropic_usage = {"input_tokens": 10, "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 20}}
    assert parse_openai_chat_usage(chat).reasoning_output_tokens == 30
    assert parse_openai_responses_usage(responses).reasoning_output_tokens == 40
    assert parse_anthropic_usage(anthropic_usage).reasoning_output_tokens == 20
    assert parse_anthropic_usage({"input_tokens": 1, "output_tokens": 2}).reasoning_output_tokens == 0


def test_reasoning_larger_than_the_output_is_refused():
    from contextwright.errors import UsageError

    with pytest.raises(UsageError, match="reasoning_output_tokens"):
        parse_openai_chat_usage(
            {"prompt_tokens": 1, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 9}}
        )


def test_litellm_usage_keeps_the_anthropic_ttl_split():
    # litellm 1.110 for an Anthropic model: prompt_tokens = input + read + writes, and the split
    # by TTL sits in prompt_tokens_details.cache_creation_token_details.

    usage = parse_openai_chat_usage(
        {
            "prompt_tokens": 6154,
            "completion_tokens": 5,
            "prompt_tokens_details": {
                "cached_tokens": 4096,
                "cache_write_tokens": 2048,
                "cache_creation_tokens": 2048,
                "cache_creation_token_details": {"ephemeral_5m_input_tokens": 48, "ephemeral_1h_input_tokens": 2000},
            },
            "cache_creation_input_tokens": 2048,
            "cache_read_input_tokens": 4096,
        }
    )
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == (
        10,
        4096,
        48,
        2000,
    )
    with pytest.raises(MalformedProviderResponse, match="1-hour cache writes"):
        parse_openai_chat_usage(
            {
                "prompt_tokens": 100,
                "completion_tokens": 1,
                "prompt_tokens_details": {
                    "cache_write_tokens": 10,
                    "cache_creation_token_details": {"ephemeral_1h_input_tokens": 20},
                },
            }
        )


def test_litellm_usage_falls_back_on_the_anthropic_names_for_reads_and_writes():

    usage = parse_openai_chat_usage(
        {
            "prompt_tokens": 6154,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cache_creation_token_details": {"ephemeral_1h_input_tokens": 2000}},
            "cache_creation_input_tokens": 2048,
            "cache_read_input_tokens": 4096,
        }
    )
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_5m_tokens, usage.cache_write_1h_tokens) == (
        10,
        4096,
        48,
        2000,
    )
