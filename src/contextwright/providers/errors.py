"""Provider errors, translated at the boundary into the Contextwright error tree.

::

    ProviderError                         (contextwright.errors)
    ├── ContextLengthExceeded             (contextwright.errors) prompt (+ max_tokens) over the window
    ├── InvalidRequest                    the provider refused the request as malformed
    │   └── RequestTooLarge               the request body is over the byte limit
    ├── AuthenticationFailed              the API key was not accepted
    ├── PermissionDenied                  the key is valid but may not do this
    ├── QuotaExceeded                     billing, credit or spend limit: waiting will not help
    ├── RateLimited                       too many requests or tokens per minute: wait and retry
    ├── ProviderUnavailable               server error, timeout, lost connection: retry later
    │   └── ProviderOverloaded            the provider says it is overloaded
    └── MalformedProviderResponse         a response (or its usage) has an unexpected shape

Every error carries ``provider``, ``status``, ``error_type``, ``code``,
``provider_message``, ``request_id`` and ``retryable``; context-length errors add
``prompt_tokens``, ``max_tokens`` and ``limit_tokens`` when the message states them,
so that the runtime can size its forced compaction (spec R6).

:func:`classify_provider_error` reads a status and a body (a mapping, JSON text or
plain text). :func:`from_sdk_exception` does the same for the exceptions of the
official ``anthropic`` and ``openai`` SDKs without importing either: it recognises
their classes by name along the MRO, so this module stays importable without the
extras.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from contextwright.errors import ContextLengthExceeded, ProviderError, UsageError

__all__ = [
    "AuthenticationFailed",
    "ContextLengthExceeded",
    "InvalidRequest",
    "MalformedProviderResponse",
    "PermissionDenied",
    "ProviderError",
    "ProviderOverloaded",
    "ProviderUnavailable",
    "QuotaExceeded",
    "RateLimited",
    "RequestTooLarge",
    "classify_provider_error",
    "from_sdk_exception",
    "is_sdk_api_error",
    "sdk_family",
    "translated_sdk_errors",
]

PROVIDERS: Final = ("anthropic", "openai")


class InvalidRequest(ProviderError):
    """The provider refused the request as malformed or unsupported; fix the request."""


class RequestTooLarge(InvalidRequest):
    """The request body (bytes, not tokens) is larger than the provider accepts."""


class AuthenticationFailed(ProviderError):
    """The provider did not accept the credentials."""


class PermissionDenied(ProviderError):
    """The credentials are valid but not allowed to do this."""


class QuotaExceeded(ProviderError):
    """A billing, credit or spend limit was reached; retrying soon will not help."""


class RateLimited(ProviderError):
    """A per-minute rate limit was hit; retry after ``retry_after`` seconds if given."""


class ProviderUnavailable(ProviderError):
    """The provider failed or could not be reached; the same request may succeed later."""


class ProviderOverloaded(ProviderUnavailable):
    """The provider reported that it is overloaded."""


class MalformedProviderResponse(ProviderError):
    """A provider response did not have the shape this code expects."""


# Anthropic's error object is {"type": "error", "error": {"type", "message"}, "request_id"}
# (https://platform.claude.com/docs/en/api/errors); the type names are the SDK's
# ``ErrorType`` literal (anthropic/types/shared/error_type.py).
_ANTHROPIC_TYPES: Final[dict[str, type[ProviderError]]] = {
    "invalid_request_error": InvalidRequest,
    "not_found_error": InvalidRequest,
    "conflict_error": InvalidRequest,
    "memory_precondition_failed_error": InvalidRequest,
    "memory_path_conflict_error": InvalidRequest,
    "request_too_large": RequestTooLarge,
    "authentication_error": AuthenticationFailed,
    "permission_error": PermissionDenied,
    "billing_error": QuotaExceeded,
    "rate_limit_error": RateLimited,
    "timeout_error": ProviderUnavailable,
    "api_error": ProviderUnavailable,
    "overloaded_error": ProviderOverloaded,
}

# Stable codes in ``error.details.error_code`` whose status alone would mislead
# (a spend limit arrives as 429 but waiting a minute does not lift it).
_ANTHROPIC_CODES: Final[dict[str, type[ProviderError]]] = {
    "contract_spend_limit_reached": QuotaExceeded,
    "enforced_spend_limit_reached": QuotaExceeded,
    "linked_organization_spend_limit_reached": QuotaExceeded,
    "linked_organization_billing_unavailable": QuotaExceeded,
    "organization_on_hold": PermissionDenied,
}

# OpenAI's error object is {"error": {"message", "type", "param", "code"}}
# (https://github.com/crewAIInc/crewAI-examples/issues/121); the SDK hands over the
# inner object. Only context_length_exceeded is documented in our research; the other
# codes are OpenAI's long-standing ones, and the status code is the fallback anyway.
_OPENAI_CODES: Final[dict[str, type[ProviderError]]] = {
    "rate_limit_exceeded": RateLimited,
    "insufficient_quota": QuotaExceeded,
    "billing_hard_limit_reached": QuotaExceeded,
    "invalid_api_key": AuthenticationFailed,
    "server_error": ProviderUnavailable,
}
_OPENAI_TYPES: Final[dict[str, type[ProviderError]]] = {
    "invalid_request_error": InvalidRequest,
    "authentication_error": AuthenticationFailed,
    "permission_error": PermissionDenied,
    "insufficient_quota": QuotaExceeded,
    "rate_limit_error": RateLimited,
    "server_error": ProviderUnavailable,
}

_BY_STATUS: Final[dict[int, type[ProviderError]]] = {
    400: InvalidRequest,
    401: AuthenticationFailed,
    402: QuotaExceeded,
    403: PermissionDenied,
    404: InvalidRequest,
    408: ProviderUnavailable,
    409: InvalidRequest,
    412: InvalidRequest,
    413: RequestTooLarge,
    422: InvalidRequest,
    429: RateLimited,
    431: RequestTooLarge,
    499: ProviderUnavailable,
    529: ProviderOverloaded,
}

_RETRYABLE: Final = (RateLimited, ProviderUnavailable)

# SDK subclasses chosen from a stable error code, whose cause the status cannot tell
# (a spend limit arrives as 429, yet waiting a minute does not lift it).
_SDK_CLASS_OVERRIDES: Final[dict[str, type[ProviderError]]] = {
    "ContractSpendLimitReachedError": QuotaExceeded,
    "EnforcedSpendLimitReachedError": QuotaExceeded,
    "LinkedOrganizationSpendLimitReachedError": QuotaExceeded,
    "LinkedOrganizationBillingUnavailableError": QuotaExceeded,
    "OrganizationOnHoldError": PermissionDenied,
}

# Context-length messages, verbatim shapes from the providers:
#  Anthropic: https://platform.claude.com/docs/en/build-with-claude/context-windows
#  OpenAI Chat: https://github.com/crewAIInc/crewAI-examples/issues/121
#  OpenAI Responses: https://github.com/anomalyco/opencode/issues/6071
_TOO_LONG = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum", re.IGNORECASE)
_INPUT_PLUS_MAX = re.compile(r"input length and `?max_tokens`? exceed context limit: (\d+) \+ (\d+) > (\d+)", re.IGNORECASE)
_OPENAI_LIMIT = re.compile(r"maximum context length is (\d+) tokens", re.IGNORECASE)
_OPENAI_RESULTED = re.compile(r"your messages resulted in (\d+) tokens", re.IGNORECASE)
_OPENAI_REQUESTED = re.compile(r"you requested (\d+) tokens \((\d+) in the messages, (\d+) in the completion\)", re.IGNORECASE)
_CONTEXT_PHRASES: Final = (
    "prompt is too long",
    "exceed context limit",
    "maximum context length",
    "exceeds the context window",
)


def classify_provider_error(
    status: int | None,
    body: Mapping[str, Any] | str | None,
    *,
    provider: str,
    request_id: str | None = None,
    retry_after: float | None = None,
) -> ProviderError:
    """Return the most specific :class:`ProviderError` for a provider's status and error body.

    ``body`` may be the whole response body, the inner error object, a streaming
    ``error`` event, JSON text or plain text. Context-length errors are recognised
    by code or message before anything else, because they arrive as ordinary 400s.
    """
    family = _provider_family(provider)
    fields = _read_body(body)
    error_type, code, message = fields["error_type"], fields["code"], fields["message"]
    request_id = request_id or fields["request_id"]

    cls: type[ProviderError] | None = None
    extra: dict[str, Any] = {}
    if code == "context_length_exceeded" or _mentions_context_limit(message):
        cls = ContextLengthExceeded
        extra = _context_numbers(message)
    elif family == "anthropic":
        cls = _ANTHROPIC_CODES.get(fields["detail_code"] or "") or _ANTHROPIC_TYPES.get(error_type or "")
    else:
        cls = _OPENAI_CODES.get(code or "") or _OPENAI_TYPES.get(error_type or "")
    if cls is None and status is not None:
        cls = _BY_STATUS.get(status)
        if cls is None and 400 <= status < 500:
            cls = InvalidRequest
        elif cls is None and status >= 500:
            cls = ProviderUnavailable
    if cls is None:
        cls = ProviderError  # no status and a body we cannot read: say so, do not guess

    summary = message or (f"HTTP {status}" if status is not None else "no error details")
    what = f"{family} error" + (f" {status}" if status is not None else "")
    if error_type or code:
        what += f" ({', '.join(str(part) for part in (error_type, code) if part)})"
    if cls is RateLimited:
        extra["retry_after"] = retry_after
    return cls(
        f"{what}: {summary}",
        provider=family,
        status=status,
        error_type=error_type,
        code=code,
        provider_message=message,
        request_id=request_id,
        retryable=issubclass(cls, _RETRYABLE),
        **extra,
    )


def is_sdk_api_error(exc: BaseException) -> bool:
    """True when ``exc`` is an ``APIError`` of the ``anthropic`` or ``openai`` SDK."""
    return sdk_family(exc) is not None and "APIError" in _mro_names(exc)


def from_sdk_exception(exc: BaseException) -> ProviderError:
    """Translate an ``anthropic`` or ``openai`` SDK ``APIError`` into a :class:`ProviderError`.

    The caller raises the result ``from exc``; see :func:`translated_sdk_errors`.
    Anything that is not an SDK ``APIError`` is a :class:`~contextwright.errors.UsageError`.
    """
    family = sdk_family(exc)
    names = _mro_names(exc)
    if family is None or "APIError" not in names:
        raise UsageError(f"not an anthropic/openai SDK APIError: {type(exc).__module__}.{type(exc).__name__}")
    body = getattr(exc, "body", None)
    message = str(getattr(exc, "message", "") or exc)

    if "APIResponseValidationError" in names or "APIWebhookValidationError" in names:
        return MalformedProviderResponse(
            f"{family} response failed validation: {message}",
            provider=family,
            status=getattr(exc, "status_code", None),
            error_type=None,
            code=None,
            provider_message=message,
            request_id=None,
            retryable=False,
        )
    if "APIConnectionError" in names:  # includes APITimeoutError
        reason = "timeout" if "APITimeoutError" in names else "connection"
        return ProviderUnavailable(
            f"{family} {reason} error: {message}",
            provider=family,
            status=None,
            error_type=None,
            code=reason,
            provider_message=message,
            request_id=None,
            retryable=True,
        )

    status = getattr(exc, "status_code", None) if "APIStatusError" in names else None
    headers = _headers(exc)
    request_id = headers.get("request-id") or headers.get("x-request-id")
    if not isinstance(body, (Mapping, str)) and body is not None:
        body = None
    if body is None and "APIStatusError" not in names:
        body = message  # mid-stream errors without a JSON body still carry the text
    error = classify_provider_error(
        status if isinstance(status, int) else None,
        body,
        provider=family,
        request_id=request_id,
        retry_after=_retry_after(headers),
    )
    # Some SDK subclasses encode a cause the status cannot (e.g. a spend limit sent as 429).
    override = next((_SDK_CLASS_OVERRIDES[name] for name in names if name in _SDK_CLASS_OVERRIDES), None)
    if override is not None and type(error) is not ContextLengthExceeded and not isinstance(error, override):
        fields = dict(error.fields)
        fields["retryable"] = issubclass(override, _RETRYABLE)
        fields.pop("retry_after", None)
        error = override(error.message, **fields)
    return error


@contextmanager
def translated_sdk_errors() -> Iterator[None]:
    """Re-raise SDK ``APIError`` exceptions raised inside the block as :class:`ProviderError`."""
    try:
        yield
    except Exception as exc:
        if is_sdk_api_error(exc):
            raise from_sdk_exception(exc) from exc
        raise


def _provider_family(provider: str) -> str:
    family = provider.split("_", 1)[0].split(".", 1)[0].lower()
    if family not in PROVIDERS:
        raise UsageError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    return family


def _read_body(body: Mapping[str, Any] | str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_type": None,
        "code": None,
        "message": None,
        "detail_code": None,
        "request_id": None,
    }
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body.strip()
        try:
            parsed = json.loads(text)
        except ValueError:
            out["message"] = text or None
            return out
        if not isinstance(parsed, Mapping):
            out["message"] = text or None
            return out
        body = parsed
    if not isinstance(body, Mapping):
        return out
    inner = body.get("error")
    error: Mapping[str, Any] = inner if isinstance(inner, Mapping) else body
    error_type = error.get("type")
    # A bare Anthropic envelope without an inner object says only "error".
    out["error_type"] = error_type if isinstance(error_type, str) and error_type != "error" else None
    code = error.get("code")
    out["code"] = code if isinstance(code, str) else None
    message = error.get("message")
    if not isinstance(message, str) and isinstance(inner, str):
        message = inner
    out["message"] = message if isinstance(message, str) else None
    details = error.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("error_code"), str):
        out["detail_code"] = details["error_code"]
    request_id = body.get("request_id")
    out["request_id"] = request_id if isinstance(request_id, str) else None
    return out


def _mentions_context_limit(message: str | None) -> bool:
    if not message:
        return False
    lowered = message.lower()
    return any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def _context_numbers(message: str | None) -> dict[str, int | None]:
    numbers: dict[str, int | None] = {
        "prompt_tokens": None,
        "max_tokens": None,
        "limit_tokens": None,
    }
    if not message:
        return numbers
    if match := _TOO_LONG.search(message):
        numbers["prompt_tokens"], numbers["limit_tokens"] = int(match[1]), int(match[2])
    elif match := _INPUT_PLUS_MAX.search(message):
        numbers["prompt_tokens"], numbers["max_tokens"], numbers["limit_tokens"] = (
            int(match[1]),
            int(match[2]),
            int(match[3]),
        )
    else:
        if match := _OPENAI_LIMIT.search(message):
            numbers["limit_tokens"] = int(match[1])
        if match := _OPENAI_REQUESTED.search(message):
            numbers["prompt_tokens"], numbers["max_tokens"] = int(match[2]), int(match[3])
        elif match := _OPENAI_RESULTED.search(message):
            numbers["prompt_tokens"] = int(match[1])
    return numbers


def sdk_family(exc: BaseException) -> str | None:
    """``anthropic`` or ``openai`` when ``exc`` is an exception of that SDK, else None."""
    for cls in type(exc).__mro__:
        top = cls.__module__.split(".", 1)[0]
        if top in PROVIDERS:
            return top
    return None


def _mro_names(exc: BaseException) -> tuple[str, ...]:
    return tuple(cls.__name__ for cls in type(exc).__mro__ if cls.__module__.split(".", 1)[0] in PROVIDERS)


def _headers(exc: BaseException) -> dict[str, str]:
    response = getattr(exc, "response", None)
    raw = getattr(response, "headers", None)
    if raw is None:
        return {}
    try:
        return {str(key).lower(): str(value) for key, value in raw.items()}
    except (AttributeError, TypeError):
        return {}


def _retry_after(headers: Mapping[str, str]) -> float | None:
    # Seconds or milliseconds only: an HTTP-date would need the wall clock, which
    # this module never reads.
    if (value := headers.get("retry-after-ms")) is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    if (value := headers.get("retry-after")) is not None:
        try:
            return float(value)
        except ValueError:
            return None
    return None
