"""The Gemini wire: rendered bodies, answers, usage and errors through the real google-genai SDK (mock transport, no network).

Each body is passed as ``**body`` to ``client.models.generate_content``; the mock transport
captures the JSON the SDK put on the wire and answers with the REST shape of a
``generateContent`` response (or an error body). The wire JSON must hold the rendered
conversation, system instruction and tools; the SDK's answer must read back as the neutral
message and the one usage type; the SDK's errors must become the typed provider errors.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

pytest.importorskip("google.genai", reason="needs the google-genai SDK (the gemini extra)")
pytest.importorskip("httpx2", reason="needs httpx2 (a dependency of the google-genai SDK)")

import httpx2
from google import genai
from google.genai import types
from test_render_anthropic import assert_golden, make_fanout_request, make_request

from contextwright.assembly.request import Message, NeutralRequest, ReasoningPart, TextPart, ToolResultPart
from contextwright.canonical import canonical_json
from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.events.catalog import Usage
from contextwright.providers import errors
from contextwright.providers._render_common import RenderError
from contextwright.providers.responses import parse_response
from contextwright.providers.wire import WireMismatch
from contextwright.providers.wires import WIRES, choose_wire, gemini, inferred_wire, translated_error, wire_named

MODEL = "gemini-2.5-flash"
CAPS = gemini.capabilities(MODEL)

ANSWER: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Planning the fix.", "thought": True},
                    {"text": "The session store drops the key; "},
                    {"text": "reading the handler."},
                    {
                        "functionCall": {"id": "call_7", "name": "read_file", "args": {"path": "src/app/session.py"}},
                        "thoughtSignature": "c2lnbmVk",
                    },
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 5000,
        "cachedContentTokenCount": 4096,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 60,
        "totalTokenCount": 5100,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "resp-1",
}


class Transport:
    """A mock transport that records every request and answers with one canned status and body."""

    def __init__(self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.requests: list[httpx2.Request] = []
        self._body, self._status, self._headers = body, status, headers or {}

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self._status, json=self._body, headers=self._headers)

    def client(self) -> genai.Client:
        http = httpx2.Client(transport=httpx2.MockTransport(self.handler))
        return genai.Client(api_key="test", http_options=types.HttpOptions(httpx_client=http))

    @property
    def sent(self) -> dict[str, Any]:
        return json.loads(self.requests[-1].content)


def send(body: dict[str, Any], answer: dict[str, Any] = ANSWER, status: int = 200) -> tuple[Any, Transport]:
    transport = Transport(answer, status)
    return transport.client().models.generate_content(**body), transport


def gemini_request(request: NeutralRequest) -> NeutralRequest:
    return replace(request, provider="google", model=MODEL)


# ---------------------------------------------------------------------------
# Render
# ---------------------------------------------------------------------------


def test_the_wire_is_registered_with_its_sdk_method() -> None:
    assert set(WIRES) == {"anthropic", "gemini", "litellm", "openai_chat", "openai_responses"}
    assert wire_named("gemini") is gemini.WIRE
    client = Transport(ANSWER).client()
    assert inferred_wire(client.models.generate_content) == "gemini"
    assert choose_wire(client.models.generate_content, provider="google", model=MODEL) == "gemini"
    with pytest.raises(WireMismatch, match="gemini wire is what this SDK method speaks"):
        choose_wire(client.models.generate_content, provider="anthropic", model="claude-sonnet-4-6")


def test_the_multi_turn_request_renders_to_its_golden_body() -> None:
    body = gemini.render(gemini_request(make_request()), CAPS)
    assert_golden("gemini_multi_turn", body)
    assert json.loads(canonical_json(body)) == body  # plain JSON: the service and inspect can show it


def test_the_body_goes_through_the_sdk_as_rendered() -> None:
    request = gemini_request(make_fanout_request(3))
    body = gemini.render(request, CAPS)
    _, transport = send(body)
    sent = transport.sent
    assert transport.requests[-1].url.path.endswith(f"/models/{MODEL}:generateContent")
    # The SDK writes the config's parts at the top level, in camelCase.
    assert sent["systemInstruction"] == {"parts": [{"text": block.text} for block in request.system]}
    declarations = sent["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == [tool.name for tool in request.tools]
    assert (
        declarations[0]["parameters_json_schema"]
        == body["config"]["tools"][0]["function_declarations"][0]["parameters_json_schema"]
    )
    assert sent["generationConfig"] == {"maxOutputTokens": request.max_output_tokens}
    assert [turn["role"] for turn in sent["contents"]] == [turn["role"] for turn in body["contents"]]
    for sent_turn, turn in zip(sent["contents"], body["contents"], strict=True):
        assert len(sent_turn["parts"]) == len(turn["parts"])
    # The last model turn: text, then the three parallel calls; only the first carries the signature sentinel.
    model_turn = sent["contents"][-2]
    calls = [part for part in model_turn["parts"] if "functionCall" in part]
    assert [call["functionCall"]["id"] for call in calls] == ["toolu_100", "toolu_101", "toolu_102"]
    assert [call.get("thoughtSignature") for call in calls] == [gemini.SIGNATURE_SENTINEL, None, None]
    # The results open the next user turn, before its text, answering the calls by id and name.
    last = sent["contents"][-1]["parts"]
    assert [part["functionResponse"]["id"] for part in last[:3]] == ["toolu_100", "toolu_101", "toolu_102"]
    assert last[0]["functionResponse"]["name"] == "read_file"
    assert last[0]["functionResponse"]["response"]["output"].endswith('handler 0: ok\n</cw-data id="0f3c9a7e12b4d6e8">')
    assert "text" in last[-1]


def test_roles_alternate_and_blank_text_and_foreign_reasoning_stay_out() -> None:
    request = gemini_request(make_request())
    thinking = ReasoningPart(provider="anthropic", block={"type": "thinking", "thinking": "x", "signature": "s"}, ref="r")
    blank = TextPart(text="  ", trust="user", source="user", ref="b", budget_class="history", layer="live")
    first = request.messages[0]
    messages = (
        replace(first, parts=(blank, *first.parts)),
        Message(
            role="user",
            parts=(TextPart(text="again", trust="user", source="user", ref="a", budget_class="history", layer="live"),),
        ),
    )
    messages += tuple(replace(m, parts=(thinking, *m.parts)) if m.role == "assistant" else m for m in request.messages[1:])
    body = gemini.render(replace(request, messages=messages, stable_messages=0), CAPS)
    roles = [turn["role"] for turn in body["contents"]]
    assert all(a != b for a, b in zip(roles, roles[1:])), roles  # consecutive messages of one role are merged
    assert roles[0] == "user"
    for turn in body["contents"]:
        for part in turn["parts"]:
            assert set(part) <= {"text", "function_call", "function_response", "thought_signature"}
            assert part.get("text", "x").strip()


def test_a_failed_tool_result_goes_back_under_error() -> None:
    request = gemini_request(make_request())
    messages = tuple(
        replace(m, parts=tuple(replace(p, is_error=True) if isinstance(p, ToolResultPart) else p for p in m.parts))
        for m in request.messages
    )
    body = gemini.render(replace(request, messages=messages), CAPS)
    responses = [p["function_response"]["response"] for t in body["contents"] for p in t["parts"] if "function_response" in p]
    assert responses and all(set(r) == {"error"} for r in responses)


def test_the_body_does_not_depend_on_the_previous_request_or_a_ttl() -> None:
    request = gemini_request(make_fanout_request(2))
    assert gemini.render(request, CAPS, previous=gemini_request(make_request()), prefix_ttl="1h") == gemini.render(request, CAPS)


def test_capabilities_of_another_provider_are_refused() -> None:
    from contextwright import models
    from contextwright.providers.capabilities import capabilities_for

    with pytest.raises(RenderError, match="this renderer writes 'google' bodies"):
        gemini.render(make_request(), capabilities_for(models.anthropic("claude-sonnet-4-6")))


def test_minimum_prefix_for_implicit_caching_by_model() -> None:
    assert gemini.min_cacheable_tokens("gemini-2.5-flash") == 2048
    assert gemini.min_cacheable_tokens("models/gemini-2.5-pro") == 2048
    assert gemini.min_cacheable_tokens("gemini-3.8-flash") == 4096
    assert gemini.min_cacheable_tokens("gemini-2.5-flash-lite") == 2048  # the flash family's figure
    assert gemini.min_cacheable_tokens("gemini-9-ultra") == 4096  # unknown: the largest documented minimum


# ---------------------------------------------------------------------------
# Answers and usage
# ---------------------------------------------------------------------------


def test_the_sdk_answer_reads_as_the_neutral_message_and_usage() -> None:
    response, _ = send(gemini.render(gemini_request(make_request()), CAPS))
    assert isinstance(response, types.GenerateContentResponse)
    message, usage = parse_response(response)  # the wire is detected among all registered ones
    assert message.text == "The session store drops the key; reading the handler."  # the thought summary is left out
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("call_7", "read_file", {"path": "src/app/session.py"})]
    assert (message.model, message.stop_reason) == ("gemini-2.5-flash", "STOP")
    # prompt_token_count includes the cached tokens; thoughts are billed as output.
    assert usage == Usage(input_tokens=904, cache_read_tokens=4096, output_tokens=100, reasoning_output_tokens=60)
    assert usage.total_input == 5000


def test_the_rest_json_reads_the_same_as_the_sdk_object() -> None:
    response, _ = send(gemini.render(gemini_request(make_request()), CAPS))
    assert parse_response(ANSWER) == parse_response(response)
    assert gemini.parse_usage(ANSWER) == gemini.parse_usage(response) == gemini.parse_usage(response.usage_metadata)


def test_a_call_without_an_id_gets_a_stable_one() -> None:
    answer = json.loads(json.dumps(ANSWER))
    del answer["candidates"][0]["content"]["parts"][3]["functionCall"]["id"]
    first, _ = parse_response(answer)
    again, _ = parse_response(answer)
    assert first.tool_calls[0].id == again.tool_calls[0].id
    assert first.tool_calls[0].id.startswith("gemini_")


def test_a_blocked_prompt_is_an_empty_answer_with_its_reason() -> None:
    answer = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12}}
    message, usage = parse_response(answer)
    assert (message.text, message.tool_calls, message.stop_reason) == ("", (), "SAFETY")
    assert usage == Usage(input_tokens=12)


def test_malformed_usage_is_refused() -> None:
    with pytest.raises(errors.MalformedProviderResponse, match="cached tokens"):
        gemini.parse_usage({"promptTokenCount": 10, "cachedContentTokenCount": 11})
    with pytest.raises(errors.MalformedProviderResponse, match="prompt_token_count"):
        gemini.parse_usage({"candidatesTokenCount": 3})


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def _raised(status: int, body: dict[str, Any]) -> BaseException:
    transport = Transport(body, status)
    with pytest.raises(Exception) as info:
        transport.client().models.generate_content(**gemini.render(gemini_request(make_request()), CAPS))
    return info.value


def _error(code: int, status: str, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    inner: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        inner["details"] = details
    return {"error": inner}


def test_a_prompt_over_the_window_is_a_context_length_error_with_its_numbers() -> None:
    message = "The input token count (1054016) exceeds the maximum number of tokens allowed (1048576)."
    raised = _raised(400, _error(400, "INVALID_ARGUMENT", message))
    error = translated_error(raised)
    assert isinstance(error, ContextLengthExceeded)
    assert (error.fields["prompt_tokens"], error.fields["limit_tokens"]) == (1054016, 1048576)
    assert error.fields["provider"] == "google" and not error.fields["retryable"]


@pytest.mark.parametrize(
    ("status", "body", "expected", "retryable"),
    [
        (400, _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received."), errors.InvalidRequest, False),
        (
            400,
            _error(
                400,
                "INVALID_ARGUMENT",
                "API key not valid. Please pass a valid API key.",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}],
            ),
            errors.AuthenticationFailed,
            False,
        ),
        (400, _error(400, "FAILED_PRECONDITION", "User location is not supported for the API use."), errors.QuotaExceeded, False),
        (403, _error(403, "PERMISSION_DENIED", "The caller does not have permission"), errors.PermissionDenied, False),
        (404, _error(404, "NOT_FOUND", "models/gemini-0 is not found"), errors.InvalidRequest, False),
        (500, _error(500, "INTERNAL", "An internal error has occurred."), errors.ProviderUnavailable, True),
        (503, _error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), errors.ProviderOverloaded, True),
        (
            504,
            _error(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
            errors.ProviderUnavailable,
            True,
        ),
    ],
)
def test_sdk_errors_become_typed_provider_errors(status: int, body: dict[str, Any], expected: type, retryable: bool) -> None:
    error = translated_error(_raised(status, body))
    assert type(error) is expected
    assert error.fields["status"] == status and error.fields["retryable"] is retryable
    assert error.fields["provider_message"] == body["error"]["message"]


def test_a_rate_limit_says_when_to_retry() -> None:
    body = _error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota.",
        [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "21s"}],
    )
    error = translated_error(_raised(429, body))
    assert isinstance(error, errors.RateLimited)
    assert error.fields["retry_after"] == 21.0 and error.fields["retryable"]


def test_other_exceptions_are_not_the_wires() -> None:
    assert gemini.translate_error(ValueError("no")) is None
    assert gemini.translate_error(UsageError("no")) is None


def test_a_session_records_the_answer_to_its_request_sent_on_the_gemini_wire() -> None:
    from contextwright.testing.fakes import open_session

    _, session, _ = open_session()
    session.user("The login test fails on CI. Please fix it.")
    built = session.next_request()
    body = gemini.render(gemini_request(built.neutral), CAPS)
    response, transport = send(body)
    sent_text = "".join(part.get("text", "") for part in transport.sent["contents"][-1]["parts"])
    assert "Please fix it." in sent_text and transport.sent["systemInstruction"]["parts"]
    stored = session.record(response)
    assert [event.type for event in stored] == ["message.assistant", "model.response"]
    assert stored[0].payload.tool_calls[0].id == "call_7"
    assert stored[1].payload.usage == Usage(
        input_tokens=904, cache_read_tokens=4096, output_tokens=100, reasoning_output_tokens=60
    )
    assert stored[1].payload.request_index == built.index
