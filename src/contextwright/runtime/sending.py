"""Talking to a provider: send with one-shot overflow recovery, record answers and usage.

Methods of :class:`~contextwright.runtime.session.Session`, kept apart because they are one concern.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextwright.events.catalog import (
    ContextOverflow,
    ModelResponse,
    ToolCall,
    UsageRecord,
)
from contextwright.events.envelope import Event
from contextwright.runtime.errors import (
    OverflowNotRecovered,
)

if TYPE_CHECKING:
    from contextwright.runtime.session import BuiltRequest, Session


class SendingMixin:
    """Talking to a provider: send with one-shot overflow recovery, record answers and usage."""

    def record(self, response: Any) -> list[Event]:
        """Record a provider response (Anthropic message, chat completion or response, or their JSON).

        The answer is recorded like :meth:`record_assistant`, and its usage as a
        ``model.response`` event that also tunes the token estimator.
        """
        from contextwright.providers.responses import parse_response

        message, usage = parse_response(response)
        stored = self.record_assistant(message)
        if usage is not None:
            stored += self._record_usage(usage, model=message.model)
        return stored

    def _record_usage(self, usage: Any, *, model: str | None) -> list[Event]:
        built = [e.payload for e in self._events if e.type == "context.request.built"]
        last = built[-1] if built else None
        record = UsageRecord(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_5m_tokens=usage.cache_write_5m_tokens,
            cache_write_1h_tokens=usage.cache_write_1h_tokens,
            reasoning_output_tokens=usage.reasoning_output_tokens,
        )
        reconciler = getattr(self.estimator, "reconciler", None)
        if last is not None and reconciler is not None and usage.total_input:
            # The reconciler learns from the uncorrected estimate.
            raw = max(1, round(last.total_tokens / reconciler.factor(self.model.id)))
            reconciler.observe(self.model.id, raw, usage.total_input)
        return self._append(
            [
                ModelResponse(
                    provider=self.model.provider,
                    model=model or self.model.id,
                    usage=record,
                    request_index=last.request_index if last else None,
                    estimated_input_tokens=last.total_tokens if last else None,
                )
            ]
        )

    def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create`` (e.g. ``client.messages.create``), record the answer.

        A context-length error from the provider is caught once: the session is
        compacted (pruning first when there is nothing to fold), the request is
        rebuilt and sent again. A second context-length error raises
        :class:`OverflowNotRecovered`.
        """
        request = request or self.next_request()
        for attempt in range(2):
            try:
                response = create(**request.body(wire), **extra)
            except Exception as exc:
                request = self._after_send_error(exc, request, attempt)
                continue
            self.record(response)
            return response
        raise AssertionError("unreachable")

    def _after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Shared by the sync and async send: translate the error, or relieve once and rebuild."""
        from contextwright.errors import ContextLengthExceeded
        from contextwright.providers.errors import from_sdk_exception, is_sdk_api_error

        error = from_sdk_exception(exc) if is_sdk_api_error(exc) else exc
        if not isinstance(error, ContextLengthExceeded):
            if error is exc:
                raise exc
            raise error from exc
        self._append([ContextOverflow(request_index=request.index, recovered=attempt == 0, message=error.message[:500])])
        if attempt == 1:
            raise OverflowNotRecovered(
                f"session {self.id!r}: the provider still rejected request {request.index} as too long after compaction",
                session_id=self.id,
            ) from exc
        self._relieve_overflow(request.plan)
        return self.next_request()

    @property
    def aio(self) -> AsyncSession:
        """The async twin of this session (same log, same logic, I/O off the event loop)."""
        return AsyncSession(self)


class AsyncSession:
    """Async twin of :class:`Session`: every method runs the sync one in a worker thread,
    except :meth:`send`, which awaits the async SDK call itself."""

    def __init__(self, session: Session) -> None:
        self.sync = session

    async def user(self, text: str, **options: Any) -> Event:
        """Async :meth:`Session.user`."""
        return await asyncio.to_thread(self.sync.user, text, **options)

    async def next_request(self) -> BuiltRequest:
        """Async :meth:`Session.next_request`."""
        return await asyncio.to_thread(self.sync.next_request)

    async def record(self, response: Any) -> list[Event]:
        """Async :meth:`Session.record`."""
        return await asyncio.to_thread(self.sync.record, response)

    async def tool_result(self, call_id: str, output: str, **options: Any) -> Event:
        """Async :meth:`Session.tool_result`."""
        return await asyncio.to_thread(self.sync.tool_result, call_id, output, **options)

    async def pending_tool_calls(self) -> list[ToolCall]:
        """Async :meth:`Session.pending_tool_calls`."""
        return await asyncio.to_thread(self.sync.pending_tool_calls)

    async def compact(self) -> Event | None:
        """Async :meth:`Session.compact`."""
        return await asyncio.to_thread(self.sync.compact)

    async def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Async :meth:`Session.send`: ``create`` is an async SDK method such as ``AsyncAnthropic().messages.create``."""
        request = request or await self.next_request()
        for attempt in range(2):
            try:
                response = await create(**request.body(wire), **extra)
            except Exception as exc:
                request = await asyncio.to_thread(self.sync._after_send_error, exc, request, attempt)
                continue
            await self.record(response)
            return response
        raise AssertionError("unreachable")
