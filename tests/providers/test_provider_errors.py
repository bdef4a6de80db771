"""Provider error mapping: recorded error shapes, real SDK exceptions, and a completeness check."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable

import pytest

pytest.importorskip("anthropic", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("httpx2", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")
pytest.importorskip("openai", reason="needs the anthropic and openai SDKs (the anthropic and openai extras)")

import anthropic
import httpx2
import openai

from contextwright.errors import ContextLengthExceeded, ProviderError, UsageError
from contextwright.providers.errors import (
    AuthenticationFailed,
    InvalidRequest,
    MalformedProviderResponse,
    PermissionDenied,
    ProviderOverloaded,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    RequestTooLarge,
    classify_provider_error,
    from_sdk_exception,
    is_sdk_api_error,
    translated_sdk_errors,
)

# Verbatim error bodies and messages from research/provider-caching.md (§1.11, §2.5, A6, A22).
ANTHROPIC_TOO_LONG = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 208310 tokens > 200000 maximum",
    },
    "request_id": "req_011CTest",
}
ANTHROPIC_INPUT_PLUS_MAX = (
    "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
    "decrease input length or `max_tokens` and try again"
)
OPENAI_CHAT_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. "
        "Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OPENAI_RESPONSES_TOO_LONG = {
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "param": "input",
}
FOUR_BREAKPOINTS = "A maximum of 4 blocks with cache_control may be provided. Found 5."
TTL_ORDER = (
    "messages.0.content.4.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
    "cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`."
)


def _anthropic_body(error_type: str, message: str) -> dict:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": "req_1",
    }


def _openai_body(message: str, *, error_type: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class TestContextLength:
    def test_anthropic_prompt_too_long(self) -> None:
        error = classify_provider_error(400, ANTHROPIC_TOO_LONG, provider="anthropic")
        assert type(error) is ContextLengthExceeded
        assert (error.prompt_tokens, error.limit_tokens, error.max_tokens) == (208310, 200000, None)
        assert error.request_id == "req_011CTest"
        assert error.error_type == "invalid_request_error"
        assert error.retryable is False

    def test_anthropic_input_plus_max_tokens(self) -> None:
        error = classify_provider_error(
            400,
            _anthropic_body("invalid_request_error", ANTHROPIC_INPUT_PLUS_MAX),
            provider="anthropic",
        )
        assert type(error) is ContextLengthExceeded
        assert (error.prompt_tokens, error.max_tokens, error.limit_tokens) == (199759, 8192, 200000)

    def test_bedrock_plain_text(self) -> None:
        error = classify_provider_error(
            400,
            "ValidationException: prompt is too long: 210000 tokens > 200000 maximum",
            provider="anthropic",
        )
        assert type(error) is ContextLengthExceeded
        assert error.prompt_tokens == 210000

    def test_openai_chat(self) -> None:
        error = classify_provider_error(400, OPENAI_CHAT_TOO_LONG, provider="openai")
        assert type(error) is ContextLengthExceeded
        assert (error.prompt_tokens, error.limit_tokens) == (8227, 8192)
        assert error.code == "context_length_exceeded"

    def test_openai_chat_with_completion_share(self) -> None:
        message = (
            "This model's maximum context length is 4097 tokens. However, you requested 4130 tokens "
            "(3130 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."
        )
        error = classify_provider_error(
            400,
            _openai_body(message, error_type="invalid_request_error", code="context_length_exceeded"),
            provider="openai",
        )
        assert (error.prompt_tokens, error.max_tokens, error.limit_tokens) == (3130, 1000, 4097)

    def test_openai_responses_bare_object_and_stream_event(self) -> None:
        bare = classify_provider_error(400, OPENAI_RESPONSES_TOO_LONG, provider="openai")
        event = classify_provider_error(
            None,
            {"type": "error", "sequence_number": 2, "error": OPENAI_RESPONSES_TOO_LONG},
            provider="openai",
        )
        assert type(bare) is ContextLengthExceeded and type(event) is ContextLengthExceeded
        assert bare.prompt_tokens is None  # the message does not say

    def test_json_text_body(self) -> None:
        import json

        error = classify_provider_error(400, json.dumps(ANTHROPIC_TOO_LONG), provider="anthropic")
        assert type(error) is ContextLengthExceeded


class TestOtherShapes:
    @pytest.mark.parametrize(
        ("status", "body", "expected"),
        [
            (400, _anthropic_body("invalid_request_error", FOUR_BREAKPOINTS), InvalidRequest),
            (400, _anthropic_body("invalid_request_error", TTL_ORDER), InvalidRequest),
            (
                413,
                _anthropic_body("request_too_large", "Request exceeds the maximum allowed number of bytes."),
                RequestTooLarge,
            ),
            (
                401,
                _anthropic_body("authentication_error", "invalid x-api-key"),
                AuthenticationFailed,
            ),
            (403, _anthropic_body("permission_error", "no access"), PermissionDenied),
            (402, _anthropic_body("billing_error", "credit balance too low"), QuotaExceeded),
            (429, _anthropic_body("rate_limit_error", "slow down"), RateLimited),
            (500, _anthropic_body("api_error", "internal"), ProviderUnavailable),
            (529, _anthropic_body("overloaded_error", "Overloaded"), ProviderOverloaded),
            # Mid-stream errors arrive with the response's 200 status: the body decides.
            (200, _anthropic_body("overloaded_error", "Overloaded"), ProviderOverloaded),
            (None, _anthropic_body("rate_limit_error", "slow down"), RateLimited),
            (418, None, InvalidRequest),
            (503, "upstream unavailable", ProviderUnavailable),
        ],
    )
    def test_anthropic(self, status: int | None, body: object, expected: type[ProviderError]) -> None:
        error = classify_provider_error(status, body, provider="anthropic")  # type: ignore[arg-type]
        assert type(error) is expected
        assert error.provider == "anthropic" and error.status == status

    @pytest.mark.parametrize(
        ("status", "body", "expected"),
        [
            (
                429,
                _openai_body("Rate limit reached", error_type="requests", code="rate_limit_exceeded"),
                RateLimited,
            ),
            (
                429,
                _openai_body(
                    "You exceeded your current quota",
                    error_type="insufficient_quota",
                    code="insufficient_quota",
                ),
                QuotaExceeded,
            ),
            (
                401,
                _openai_body(
                    "Incorrect API key provided",
                    error_type="invalid_request_error",
                    code="invalid_api_key",
                ),
                AuthenticationFailed,
            ),
            (
                400,
                _openai_body(
                    "Unknown parameter",
                    error_type="invalid_request_error",
                    code="unknown_parameter",
                ),
                InvalidRequest,
            ),
            (
                500,
                _openai_body("The server had an error", error_type="server_error", code=None),
                ProviderUnavailable,
            ),
            (404, None, InvalidRequest),
        ],
    )
    def test_openai(self, status: int, body: object, expected: type[ProviderError]) -> None:
        assert type(classify_provider_error(status, body, provider="openai")) is expected  # type: ignore[arg-type]

    def test_retryable_flag(self) -> None:
        assert classify_provider_error(429, None, provider="openai").retryable is True
        assert classify_provider_error(529, None, provider="anthropic").retryable is True
        assert classify_provider_error(400, None, provider="anthropic").retryable is False

    def test_nothing_to_go_on_is_the_base_class(self) -> None:
        assert type(classify_provider_error(None, None, provider="anthropic")) is ProviderError

    def test_unknown_provider_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError):
            classify_provider_error(400, None, provider="gemini")

    def test_errors_pickle_with_their_fields(self) -> None:
        error = classify_provider_error(400, ANTHROPIC_TOO_LONG, provider="anthropic")
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is ContextLengthExceeded and copy.prompt_tokens == 208310


# -- real SDK exceptions, raised by real clients over a mock transport ---------------------


def _anthropic_client(handler: Callable[[httpx2.Request], httpx2.Response]) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="x",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def _openai_client(handler: Callable[[httpx2.Request], httpx2.Response]) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test",
        base_url="http://oai.test/v1",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


def _send_anthropic(handler: Callable[[httpx2.Request], httpx2.Response]) -> BaseException:
    with pytest.raises(anthropic.APIError) as caught:
        _anthropic_client(handler).messages.create(
            model="claude-sonnet-4-6", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    return caught.value


def _send_openai_chat(handler: Callable[[httpx2.Request], httpx2.Response]) -> BaseException:
    with pytest.raises(openai.APIError) as caught:
        _openai_client(handler).chat.completions.create(model="gpt-5.5", messages=[{"role": "user", "content": "hi"}])
    return caught.value


class TestAnthropicSdk:
    def test_prompt_too_long(self) -> None:
        exc = _send_anthropic(lambda r: httpx2.Response(400, json=ANTHROPIC_TOO_LONG, headers={"request-id": "req_hdr"}))
        assert isinstance(exc, anthropic.BadRequestError)
        error = from_sdk_exception(exc)
        assert type(error) is ContextLengthExceeded
        assert (error.prompt_tokens, error.limit_tokens, error.status) == (208310, 200000, 400)
        assert error.request_id == "req_hdr"

    def test_rate_limit_carries_retry_after(self) -> None:
        exc = _send_anthropic(
            lambda r: httpx2.Response(
                429,
                json=_anthropic_body("rate_limit_error", "slow down"),
                headers={"retry-after": "7"},
            )
        )
        error = from_sdk_exception(exc)
        assert type(error) is RateLimited and error.retry_after == 7.0 and error.retryable

    def test_overloaded(self) -> None:
        exc = _send_anthropic(lambda r: httpx2.Response(529, json=_anthropic_body("overloaded_error", "Overloaded")))
        assert isinstance(exc, anthropic.OverloadedError)
        assert type(from_sdk_exception(exc)) is ProviderOverloaded

    def test_authentication(self) -> None:
        exc = _send_anthropic(lambda r: httpx2.Response(401, json=_anthropic_body("authentication_error", "invalid x-api-key")))
        assert type(from_sdk_exception(exc)) is AuthenticationFailed

    def test_spend_limit_is_quota_not_rate_limit(self) -> None:
        body = {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "spend limit",
                "details": {"error_code": "enforced_spend_limit_reached"},
            },
        }
        exc = _send_anthropic(lambda r: httpx2.Response(429, json=body))
        assert type(exc).__name__ == "EnforcedSpendLimitReachedError"
        error = from_sdk_exception(exc)
        assert type(error) is QuotaExceeded and error.retryable is False

    def test_connection_and_timeout(self) -> None:
        def refuse(request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError("refused", request=request)

        def stall(request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ReadTimeout("stalled", request=request)

        refused = from_sdk_exception(_send_anthropic(refuse))
        stalled = from_sdk_exception(_send_anthropic(stall))
        assert type(refused) is ProviderUnavailable and refused.code == "connection"
        assert type(stalled) is ProviderUnavailable and stalled.code == "timeout"

    def test_mid_stream_error_event(self) -> None:
        events = (
            'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
            '"model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,'
            '"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
            'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
        )

        def handler(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(200, content=events.encode(), headers={"content-type": "text/event-stream"})

        with pytest.raises(anthropic.APIError) as caught:
            stream = _anthropic_client(handler).messages.create(
                model="claude-sonnet-4-6",
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
            for _ in stream:
                pass
        assert type(from_sdk_exception(caught.value)) is ProviderOverloaded

    def test_translated_context_manager(self) -> None:
        with pytest.raises(ContextLengthExceeded) as caught, translated_sdk_errors():
            _anthropic_client(lambda r: httpx2.Response(400, json=ANTHROPIC_TOO_LONG)).messages.create(
                model="claude-sonnet-4-6",
                max_tokens=16,
                messages=[{"role": "user", "content": "hi"}],
            )
        assert isinstance(caught.value.__cause__, anthropic.BadRequestError)

    def test_other_exceptions_pass_through_the_context_manager(self) -> None:
        with pytest.raises(KeyError), translated_sdk_errors():
            raise KeyError("x")


class TestOpenAISdk:
    def test_chat_context_length(self) -> None:
        exc = _send_openai_chat(lambda r: httpx2.Response(400, json=OPENAI_CHAT_TOO_LONG))
        error = from_sdk_exception(exc)
        assert type(error) is ContextLengthExceeded
        assert (error.prompt_tokens, error.limit_tokens, error.provider) == (8227, 8192, "openai")

    def test_responses_context_length(self) -> None:
        def handler(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(400, json={"error": OPENAI_RESPONSES_TOO_LONG})

        with pytest.raises(openai.BadRequestError) as caught:
            _openai_client(handler).responses.create(model="gpt-5.5", input="hi")
        assert type(from_sdk_exception(caught.value)) is ContextLengthExceeded

    def test_responses_stream_error_event(self) -> None:
        event = '{"type":"error","sequence_number":2,"error":' + __import__("json").dumps(OPENAI_RESPONSES_TOO_LONG) + "}"
        sse = f"event: error\ndata: {event}\n\n"

        def handler(request: httpx2.Request) -> httpx2.Response:
            return httpx2.Response(200, content=sse.encode(), headers={"content-type": "text/event-stream"})

        with pytest.raises(openai.APIError) as caught:
            for _ in _openai_client(handler).responses.create(model="gpt-5.5", input="hi", stream=True):
                pass
        assert type(from_sdk_exception(caught.value)) is ContextLengthExceeded

    def test_quota_vs_rate_limit(self) -> None:
        quota = _send_openai_chat(
            lambda r: httpx2.Response(
                429,
                json=_openai_body("quota", error_type="insufficient_quota", code="insufficient_quota"),
            )
        )
        limited = _send_openai_chat(
            lambda r: httpx2.Response(
                429,
                json=_openai_body("Rate limit reached", error_type="requests", code="rate_limit_exceeded"),
                headers={"retry-after-ms": "1500", "x-request-id": "req_abc"},
            )
        )
        assert type(from_sdk_exception(quota)) is QuotaExceeded
        error = from_sdk_exception(limited)
        assert type(error) is RateLimited and error.retry_after == 1.5 and error.request_id == "req_abc"

    def test_server_error(self) -> None:
        exc = _send_openai_chat(lambda r: httpx2.Response(500, json=_openai_body("oops", error_type="server_error", code=None)))
        assert type(from_sdk_exception(exc)) is ProviderUnavailable


def test_non_sdk_exception_is_a_usage_error() -> None:
    assert not is_sdk_api_error(ValueError("x"))
    with pytest.raises(UsageError):
        from_sdk_exception(ValueError("x"))


# -- completeness: no SDK APIError class escapes unmapped ---------------------------------


def _exported_api_errors(module: object) -> list[type[BaseException]]:
    classes = {obj for _, obj in inspect.getmembers(module, inspect.isclass) if issubclass(obj, module.APIError)}  # type: ignore[attr-defined]
    # Anthropic also raises classes chosen from a (status, error_code) table that are
    # not all re-exported at the top level; include them when the table exists.
    table = getattr(getattr(module, "_error_classes", None), "ERROR_CLASSES", {})
    classes.update(cls for cls in table.values() if inspect.isclass(cls))
    return sorted(classes, key=lambda cls: cls.__name__)


def _instantiate(cls: type[BaseException], sdk: object) -> BaseException:
    request = httpx2.Request("POST", "http://provider.test/v1/x")
    names = {c.__name__ for c in cls.__mro__}
    if "APITimeoutError" in names:
        return cls(request=request)  # type: ignore[call-arg]
    if "APIConnectionError" in names:
        return cls(request=request)  # type: ignore[call-arg]
    status = getattr(cls, "status_code", None)
    status = status if isinstance(status, int) else 500 if "InternalServerError" in names else 418
    response = httpx2.Response(status, request=request)
    if "APIResponseValidationError" in names:
        return cls(response, None)  # type: ignore[call-arg]
    if "APIStatusError" in names:
        if "message" not in inspect.signature(cls.__init__).parameters:  # e.g. openai.OAuthError
            return cls(response=response, body={"error": "invalid_grant"})  # type: ignore[call-arg]
        return cls("boom", response=response, body=None)  # type: ignore[call-arg]
    return cls("boom", request, body=None)  # type: ignore[call-arg]


@pytest.mark.parametrize("sdk", [anthropic, openai], ids=["anthropic", "openai"])
def test_every_sdk_api_error_maps_to_a_provider_error(sdk: object) -> None:
    classes = _exported_api_errors(sdk)
    assert len(classes) >= 10
    unmapped = []
    for cls in classes:
        exc = _instantiate(cls, sdk)
        assert is_sdk_api_error(exc), cls
        error = from_sdk_exception(exc)
        # Only the bare APIError with no body has nothing more specific to say.
        if not isinstance(error, ProviderError) or (type(error) is ProviderError and cls is not sdk.APIError):  # type: ignore[attr-defined]
            unmapped.append(cls.__name__)
    assert unmapped == []


@pytest.mark.parametrize("sdk", [anthropic, openai], ids=["anthropic", "openai"])
def test_sdk_class_families_map_where_expected(sdk: object) -> None:
    request = httpx2.Request("POST", "http://provider.test/v1/x")

    def status_error(cls: type, status: int) -> BaseException:
        return cls("boom", response=httpx2.Response(status, request=request), body=None)

    assert type(from_sdk_exception(status_error(sdk.RateLimitError, 429))) is RateLimited  # type: ignore[attr-defined]
    assert type(from_sdk_exception(status_error(sdk.AuthenticationError, 401))) is AuthenticationFailed  # type: ignore[attr-defined]
    assert type(from_sdk_exception(status_error(sdk.PermissionDeniedError, 403))) is PermissionDenied  # type: ignore[attr-defined]
    assert type(from_sdk_exception(status_error(sdk.BadRequestError, 400))) is InvalidRequest  # type: ignore[attr-defined]
    assert type(from_sdk_exception(status_error(sdk.InternalServerError, 500))) is ProviderUnavailable  # type: ignore[attr-defined]
    response = httpx2.Response(200, request=request)
    assert type(from_sdk_exception(sdk.APIResponseValidationError(response, None))) is MalformedProviderResponse  # type: ignore[attr-defined]
