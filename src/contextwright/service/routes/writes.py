"""Record what happens: user messages, the model's answers, tool results, usage."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from contextwright.budget._reconcile import reconciled_total
from contextwright.events.catalog import ModelResponse
from contextwright.events.registry import decode_payload
from contextwright.providers.usage import Usage
from contextwright.runtime import Session
from contextwright.service.problems import Problem
from contextwright.service.routes._common import WRITE_PROBLEMS, bearer, write
from contextwright.service.routes.sessions import SessionPath
from contextwright.service.schemas import (
    MAX_USAGE_TOKENS,
    AppendOut,
    AssistantIn,
    ProviderResponseIn,
    ToolResultIn,
    UsageIn,
    UserMessageIn,
)
from contextwright.service.sessions import GuardedLog, guarantees

router = APIRouter(prefix="/v1/sessions/{session_id}", tags=["recording"], dependencies=[bearer])

_WRITTEN: dict[int | str, dict[str, Any]] = {
    200: {
        "model": AppendOut,
        "description": "Replayed: this idempotency key was used with this body before; nothing was written",
    },
    **WRITE_PROBLEMS,
}


def _answer(response: Response, result: tuple[AppendOut, bool]) -> AppendOut:
    answer, created = result
    response.status_code = 201 if created else 200
    return answer


def _guard(operation: str, body: Any) -> Any:
    return guarantees(
        operation, body.model_dump(mode="json"), expected_seq=body.expected_seq, idempotency_key=body.idempotency_key
    )


@router.post("/messages", status_code=201, response_model=AppendOut, responses=_WRITTEN)
def add_user_message(session_id: SessionPath, body: UserMessageIn, request: Request, response: Response) -> AppendOut:
    """Record a user (or operator) message."""
    action = lambda s: s.user(body.text, steering=body.steering, author=body.author)
    return _answer(response, write(request, session_id, _guard("user", body), action))


@router.post("/assistant", status_code=201, response_model=AppendOut, responses=_WRITTEN)
def add_assistant_message(session_id: SessionPath, body: AssistantIn, request: Request, response: Response) -> AppendOut:
    """Record the model's complete answer; control-tool calls are answered by the engine at once."""
    message = decode_payload(
        "message.assistant",
        {
            "text": body.text,
            "tool_calls": [c.model_dump(mode="json") for c in body.tool_calls],
            "model": body.model,
            "stop_reason": body.stop_reason,
        },
    )
    return _answer(response, write(request, session_id, _guard("assistant", body), lambda s: s.adapter.record_assistant(message)))


@router.post("/responses", status_code=201, response_model=AppendOut, responses=_WRITTEN)
def add_provider_response(session_id: SessionPath, body: ProviderResponseIn, request: Request, response: Response) -> AppendOut:
    """Record a raw provider response (answer and usage): Anthropic message, chat completion or response JSON."""
    from contextwright.providers.responses import parse_response

    try:
        _, usage = parse_response(body.response)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise Problem("invalid-operation", f"the response does not have the shape of a provider response: {exc!r}") from exc
    if usage is not None:
        _check_usage(usage)
    return _answer(response, write(request, session_id, _guard("response", body), lambda s: s.record(body.response)))


_USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens")


def _check_usage(usage: Usage) -> None:
    """Refuse a provider response whose usage no request can have had (it would inflate the session's cost for good)."""
    for name in _USAGE_COUNTS:
        value = getattr(usage, name)
        if value > MAX_USAGE_TOKENS:
            msg = f"{value} tokens is more than one request can use (at most {MAX_USAGE_TOKENS:,})"
            raise Problem(
                "invalid-request",
                f"response usage {name}: {msg}",
                errors=[{"loc": ["body", "response", "usage"], "msg": f"{name}: {msg}", "type": "less_than_equal"}],
            )


@router.post("/tool-results", status_code=201, response_model=AppendOut, responses=_WRITTEN)
def add_tool_result(session_id: SessionPath, body: ToolResultIn, request: Request, response: Response) -> AppendOut:
    """Record a tool's output: stored whole, shown to the model capped and compressed."""
    action = lambda s: s.tool_result(
        body.call_id, body.output, exit_code=body.exit_code, is_error=body.is_error, trust=body.trust
    )
    return _answer(response, write(request, session_id, _guard("tool_result", body), action))


_USAGE_FIELDS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens"}
"""The counts a ``POST /usage`` body gives; the rest of :class:`Usage` stays 0."""


@router.post("/usage", status_code=201, response_model=AppendOut, responses=_WRITTEN)
def add_usage(session_id: SessionPath, body: UsageIn, request: Request, response: Response) -> AppendOut:
    """Record provider usage for the last request built (when the answer was recorded without it)."""

    def record(session: Session) -> None:
        last = session.history.last_request
        usage = ModelResponse(
            provider=session.model.provider,
            model=body.model or session.model.id,
            usage=Usage(**body.model_dump(include=_USAGE_FIELDS)),
            request_index=last.request_index if last else None,
            estimated_input_tokens=reconciled_total(last) if last else None,
        )
        # The session's log is the guarded one: expected_seq and the idempotency key apply here too.
        log = session.setup.log
        assert isinstance(log, GuardedLog)
        log.append(session.id, [usage], expected_seq=session.history.last_seq)

    return _answer(response, write(request, session_id, _guard("usage", body), record))
