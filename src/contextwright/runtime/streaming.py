"""Streamed model calls: the SDK's own stream object for the caller, its own accumulator for the log.

``with session.stream(client.messages.stream) as stream:`` opens the SDK's stream
manager on the engine's request and hands back the SDK's stream object unchanged.
When the block exits normally, the final answer comes from the SDK's accumulator
(``get_final_message``, ``get_final_completion``, ``get_final_response``) and is
recorded through the same path as a non-streamed answer. A block that raises, or
a stream that ends before its final event, records no answer: the built request
stays in the log and the next call can retry. A provider error raised when the
stream opens (before its first event) goes through the same one-shot overflow
recovery as ``send``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Protocol

from contextwright._threads import to_thread
from contextwright.events.envelope import Event
from contextwright.providers.errors import ProviderUnavailable, is_sdk_api_error
from contextwright.providers.wires import call_arguments, translated_error, wire_named
from contextwright.runtime.errors import StreamIncomplete
from contextwright.runtime.requests import BuiltRequest


class StreamHost(Protocol):
    """What a recording stream needs from the session: build, recover from an error, record."""

    def next_request(self) -> BuiltRequest:
        """Build and record the next request."""
        ...

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Translate ``exc``, or relieve once after an overflow and return the rebuilt request."""
        ...

    def record(self, response: Any) -> list[Event]:
        """Record a provider response and its usage."""
        ...


class _Opening:
    """What both recording streams share: the SDK method, the request, the wire and the caller's keywords."""

    def __init__(
        self,
        host: StreamHost,
        open_stream: Callable[..., Any],
        *,
        request: BuiltRequest | None,
        wire: str,
        extra: Mapping[str, Any],
    ) -> None:
        self._host = host
        self._open_stream = open_stream
        self._request = request
        self._wire = wire
        self._extra = dict(extra)
        self._manager: Any = None
        self._stream: Any = None

    @property
    def request(self) -> BuiltRequest | None:
        """The request the open stream was sent with (None before the block is entered)."""
        return self._request

    def _manager_for(self, request: BuiltRequest) -> Any:
        opened = self._open_stream(**call_arguments(request.body(self._wire), self._extra))
        return wire_named(self._wire).open_stream(opened)


class RecordingStream(_Opening):
    """``with session.stream(client.messages.stream) as stream:``; the SDK's stream inside, the answer logged after."""

    def __enter__(self) -> Any:
        request = self._request or self._host.next_request()
        for attempt in range(2):
            manager = self._manager_for(request)
            try:
                stream = manager.__enter__()
            except Exception as exc:
                request = self._host.after_send_error(exc, request, attempt)
                continue
            self._request, self._manager, self._stream = request, manager, stream
            return stream
        raise AssertionError("unreachable")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        try:
            if exc is not None:
                _raise_translated(exc, wire=self._wire)  # an error event or a lost connection: no answer
                return
            try:
                final = _final(self._stream)
            except Exception as error:  # the rest of the stream, read for the final answer, broke
                _raise_translated(error, wire=self._wire)
                raise
            self._host.record(_checked(final, wire=self._wire))
        finally:
            self._manager.__exit__(exc_type, exc, traceback)


class AsyncRecordingStream(_Opening):
    """``async with session.aio.stream(aclient.messages.stream) as stream:``; log work runs off the event loop."""

    async def __aenter__(self) -> Any:
        request = self._request if self._request is not None else await to_thread(self._host.next_request)
        for attempt in range(2):
            manager = self._manager_for(request)
            try:
                stream = await manager.__aenter__()
            except Exception as exc:
                request = await to_thread(self._host.after_send_error, exc, request, attempt)
                continue
            self._request, self._manager, self._stream = request, manager, stream
            return stream
        raise AssertionError("unreachable")

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            if exc is not None:
                _raise_translated(exc, wire=self._wire)  # an error event or a lost connection: no answer
                return
            try:
                final = _final(self._stream)
                if inspect.isawaitable(final):
                    final = await _awaited(final)
            except Exception as error:  # the rest of the stream, read for the final answer, broke
                _raise_translated(error, wire=self._wire)
                raise
            await to_thread(self._host.record, _checked(final, wire=self._wire))
        finally:
            await self._manager.__aexit__(exc_type, exc, traceback)


def _raise_translated(exc: BaseException, *, wire: str) -> None:
    """Raise the typed provider error for an SDK error or a lost connection inside the block; others go on as they are."""
    broken = _transport_break(exc)
    if broken is not None:
        # The connection dropped midway. SDK releases differ in whether they let the transport error through
        # or wrap it in their own connection error; the caller sees the same typed, retryable error either way.
        providers = wire_named(wire).providers
        provider = providers[0] if len(providers) == 1 else "openai"
        raise ProviderUnavailable(
            f"{provider} stream broke midway ({type(broken).__name__}: {broken}); "
            "no answer was recorded, the request can be retried",
            provider=provider,
            status=None,
            error_type=None,
            code="connection",
            provider_message=str(broken),
            request_id=None,
            retryable=True,
        ) from exc
    translated = translated_error(exc) if isinstance(exc, Exception) else None
    if translated is not None:
        raise translated from exc


def _transport_break(exc: BaseException) -> BaseException | None:
    """The httpx transport error behind ``exc``: ``exc`` itself, or the cause of an SDK connection error."""
    if _is_transport_error(exc):
        return exc
    if not (isinstance(exc, Exception) and is_sdk_api_error(exc)):
        return None
    if "APIConnectionError" not in _mro_names(exc) or "APITimeoutError" in _mro_names(exc):
        return None
    cause = exc.__cause__ or exc.__context__
    return cause if cause is not None and _is_transport_error(cause) else None


def _is_transport_error(exc: BaseException) -> bool:
    return "TransportError" in _mro_names(exc) and type(exc).__module__.startswith("httpx")


def _mro_names(exc: BaseException) -> list[str]:
    return [cls.__name__ for cls in type(exc).__mro__]


_ACCUMULATORS = ("get_final_message", "get_final_completion", "get_final_response")


def _final(stream: Any) -> Any:
    """The SDK accumulator's final answer (a coroutine for async streams); reading the rest of the stream if needed."""
    for name in _ACCUMULATORS:
        accumulate = getattr(stream, name, None)
        if accumulate is not None:
            try:
                return accumulate()
            except (AssertionError, RuntimeError) as exc:
                raise _incomplete(exc) from exc
    raise StreamIncomplete(
        f"{type(stream).__name__} has none of {', '.join(_ACCUMULATORS)}: open the stream with an SDK's .stream() method"
    )


async def _awaited(final: Any) -> Any:
    try:
        return await final
    except (AssertionError, RuntimeError) as exc:
        raise _incomplete(exc) from exc


def _checked(final: Any, *, wire: str) -> Any:
    """``final`` when the stream reached its end (the wire's own check), else :class:`StreamIncomplete` (nothing is recorded)."""
    problem = wire_named(wire).check_final(final)
    if problem is not None:
        raise StreamIncomplete(problem)
    return final


def _incomplete(exc: BaseException) -> StreamIncomplete:
    return StreamIncomplete(f"the stream ended before its final event ({exc or type(exc).__name__}); nothing was recorded")
