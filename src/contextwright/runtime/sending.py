"""Talking to a provider: send with one-shot overflow recovery, record answers and usage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from contextwright.budget._reconcile import reconciled_total
from contextwright.errors import ContextLengthExceeded, UsageError
from contextwright.events.catalog import ContextOverflow, ModelResponse, Usage
from contextwright.events.envelope import Event
from contextwright.providers.responses import parse_response
from contextwright.providers.wires import call_arguments, choose_wire, inferred_wire, method_name, translated_error, wire_named
from contextwright.runtime.core import SessionCore
from contextwright.runtime.errors import OverflowNotRecovered
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import BuiltRequest, Requests
from contextwright.runtime.streaming import AsyncRecordingStream, RecordingStream
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
        ``model.response`` event, from which later requests fold their estimate correction.
        """
        message, usage = parse_response(response)
        stored = self.tool_calls.record_assistant(message)
        if usage is not None:
            stored += self._record_usage(usage, model=message.model)
        return stored

    def _record_usage(self, usage: Usage, *, model: str | None) -> list[Event]:
        core = self.core
        last = core.facts().last_built
        # No in-process learning here: the next request folds this event with the split its
        # request recorded (SessionCore.estimate_factor), so every worker learns the same.
        return core.append(
            [
                ModelResponse(
                    provider=core.model.provider,
                    model=model or core.model.id,
                    usage=usage,
                    request_index=last.request_index if last else None,
                    estimated_input_tokens=reconciled_total(last) if last else None,
                )
            ]
        )

    def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create``, record the answer; recover once from an overflow."""
        wire = self.wire_for(create, request, wire=wire, extra=extra, streamed=False)
        request = request or self.requests.next_request()
        for attempt in range(2):
            try:
                response = create(**call_arguments(request.body(wire), extra))
            except Exception as exc:
                request = self.after_send_error(exc, request, attempt)
                continue
            self.record(response)
            return response
        raise AssertionError("unreachable")

    async def send_async(
        self,
        create: Callable[..., Awaitable[Any]],
        request: BuiltRequest | None,
        *,
        wire: str | None,
        in_thread: Callable[..., Awaitable[Any]],
        **extra: Any,
    ) -> Any:
        """The async :meth:`send`: awaits ``create``; log work runs through ``in_thread``."""
        chosen = self.wire_for(create, request, wire=wire, extra=extra, streamed=False)
        request = request or await in_thread(self.requests.next_request)
        for attempt in range(2):
            try:
                response = await create(**call_arguments(request.body(chosen), extra))
            except Exception as exc:
                request = await in_thread(self.after_send_error, exc, request, attempt)
                continue
            await in_thread(self.record, response)
            return response
        raise AssertionError("unreachable")

    def stream(
        self, open_stream: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> RecordingStream:
        """A context manager around ``open_stream`` (e.g. ``client.messages.stream``) that records the final answer."""
        chosen = self.wire_for(open_stream, request, wire=wire, extra=extra, streamed=True)
        return RecordingStream(self, open_stream, request=request, wire=chosen, extra=wire_named(chosen).stream_options(extra))

    def stream_async(
        self, open_stream: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> AsyncRecordingStream:
        """The async :meth:`stream`, for ``AsyncAnthropic().messages.stream`` and the like."""
        chosen = self.wire_for(open_stream, request, wire=wire, extra=extra, streamed=True)
        return AsyncRecordingStream(
            self, open_stream, request=request, wire=chosen, extra=wire_named(chosen).stream_options(extra)
        )

    def next_request(self) -> BuiltRequest:
        """Build and record the next request (what a stream opens with)."""
        return self.requests.next_request()

    def wire_for(
        self,
        call: Callable[..., Any],
        request: BuiltRequest | None,
        *,
        wire: str | None,
        extra: dict[str, Any],
        streamed: bool,
    ) -> str:
        """The wire for ``call``, checked against the model; for a non-streamed call, the SDK's streaming rule first."""
        model = request.plan.model if request is not None else self.core.model
        chosen = choose_wire(call, provider=model.provider, model=model.id, wire=wire)
        name = method_name(call) if inferred_wire(call) else ""
        spoken = wire_named(chosen)
        if streamed and name == spoken.create_method:
            raise UsageError(
                f"session.stream opens the SDK's stream: pass its .{spoken.stream_method} method ({spoken.sdk_calls})"
            )
        if not streamed and name == spoken.stream_method:
            raise UsageError(
                f"send() takes the SDK's .{spoken.create_method} method; "
                f"a .{spoken.stream_method} method goes to `with session.stream(...)`"
            )
        max_tokens = request.neutral.max_output_tokens if request is not None else model.output_reserve
        # The wire's SDK rules (Anthropic: the thinking budget, and the streaming rule for a non-streamed call).
        spoken.check_call(call, model=model.id, max_tokens=max_tokens, extra=extra, streamed=streamed)
        if not streamed and extra.get("stream"):
            raise UsageError("send() records whole answers; for a streamed call use `with session.stream(...)`")
        return chosen

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Translate a provider error, or (first overflow only) relieve once and rebuild."""
        error = translated_error(exc, model=request.plan.model.id, max_tokens=request.neutral.max_output_tokens) or exc
        if not isinstance(error, ContextLengthExceeded):
            if error is exc:
                raise exc
            raise error from exc
        message = error.message[:500]
        if attempt == 1:
            self.core.append([ContextOverflow(request_index=request.index, recovered=False, message=message)])
            raise OverflowNotRecovered(
                f"session {self.core.id!r}: the provider still rejected request {request.index} as too long after compaction",
                session_id=self.core.id,
            ) from exc
        try:
            freed = self.relief.relieve_overflow(request.plan)
        except Exception:
            self.core.append([ContextOverflow(request_index=request.index, recovered=False, message=message)])
            raise
        if not freed:
            # Nothing could be folded or pruned: the retry would resend the same bytes.
            self.core.append([ContextOverflow(request_index=request.index, recovered=False, message=message)])
            raise OverflowNotRecovered(
                f"session {self.core.id!r}: request {request.index} is too long for the provider and relief freed "
                "nothing (no history left to compact or prune); nothing was resent",
                session_id=self.core.id,
            ) from exc
        self.core.append([ContextOverflow(request_index=request.index, recovered=True, message=message)])
        return self.requests.next_request()
