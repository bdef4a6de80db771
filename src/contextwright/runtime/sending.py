"""Talking to a provider: send with one-shot overflow recovery, record answers and usage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from contextwright.events.catalog import ContextOverflow, ModelResponse, UsageRecord
from contextwright.events.envelope import Event
from contextwright.runtime.core import SessionCore
from contextwright.runtime.errors import OverflowNotRecovered
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import BuiltRequest, Requests
from contextwright.runtime.tool_calls import ToolCalls


class Sender:
    """Sends a session's requests through an SDK callable and records what comes back."""

    def __init__(self, core: SessionCore, requests: Requests, tool_calls: ToolCalls, relief: Relief) -> None:
        self.core = core
        self.requests = requests
        self.tool_calls = tool_calls
        self.relief = relief

    def record(self, response: Any) -> list[Event]:
        """Record a provider response (Anthropic message, chat completion or response, or their JSON).

        The answer is recorded like :meth:`ToolCalls.record_assistant`, and its usage as a
        ``model.response`` event that also tunes the token estimator.
        """
        from contextwright.providers.responses import parse_response

        message, usage = parse_response(response)
        stored = self.tool_calls.record_assistant(message)
        if usage is not None:
            stored += self._record_usage(usage, model=message.model)
        return stored

    def _record_usage(self, usage: Any, *, model: str | None) -> list[Event]:
        core = self.core
        built = [e.payload for e in core.events if e.type == "context.request.built"]
        last = built[-1] if built else None
        record = UsageRecord(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_5m_tokens=usage.cache_write_5m_tokens,
            cache_write_1h_tokens=usage.cache_write_1h_tokens,
        )
        reconciler = getattr(core.estimator, "reconciler", None)
        if last is not None and reconciler is not None and usage.total_input:
            # The reconciler learns from the uncorrected estimate.
            raw = max(1, round(last.total_tokens / reconciler.factor(core.model.id)))
            reconciler.observe(core.model.id, raw, usage.total_input)
        return core.append(
            [
                ModelResponse(
                    provider=core.model.provider,
                    model=model or core.model.id,
                    usage=record,
                    request_index=last.request_index if last else None,
                    estimated_input_tokens=last.total_tokens if last else None,
                )
            ]
        )

    def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create``, record the answer; recover once from an overflow."""
        request = request or self.requests.next_request()
        for attempt in range(2):
            try:
                response = create(**request.body(wire), **extra)
            except Exception as exc:
                request = self.after_send_error(exc, request, attempt)
                continue
            self.record(response)
            return response
        raise AssertionError("unreachable")

    async def send_async(
        self,
        create: Callable[..., Awaitable[Any]],
        request: BuiltRequest,
        *,
        wire: str | None,
        in_thread: Callable[..., Awaitable[Any]],
        **extra: Any,
    ) -> Any:
        """The async :meth:`send`: awaits ``create``; log work runs through ``in_thread``."""
        for attempt in range(2):
            try:
                response = await create(**request.body(wire), **extra)
            except Exception as exc:
                request = await in_thread(self.after_send_error, exc, request, attempt)
                continue
            await in_thread(self.record, response)
            return response
        raise AssertionError("unreachable")

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Translate a provider error, or (first overflow only) relieve once and rebuild."""
        from contextwright.errors import ContextLengthExceeded
        from contextwright.providers.errors import from_sdk_exception, is_sdk_api_error

        error = from_sdk_exception(exc) if is_sdk_api_error(exc) else exc
        if not isinstance(error, ContextLengthExceeded):
            if error is exc:
                raise exc
            raise error from exc
        self.core.append([ContextOverflow(request_index=request.index, recovered=attempt == 0, message=error.message[:500])])
        if attempt == 1:
            raise OverflowNotRecovered(
                f"session {self.core.id!r}: the provider still rejected request {request.index} as too long after compaction",
                session_id=self.core.id,
            ) from exc
        self.relief.relieve_overflow(request.plan)
        return self.requests.next_request()
