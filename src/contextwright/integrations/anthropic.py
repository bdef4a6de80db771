"""Drop-in for existing Anthropic code: client middleware that sends the engine's body instead of the caller's.

``anthropic.Anthropic(middleware=[ContextwrightMiddleware(session)])``: the caller keeps
its own ``messages`` list and calls ``client.messages.create`` as before. For each
logical call the middleware

* checks the caller's ``system`` and ``tools`` against the session's prefix: on the
  first request what the ``AgentSpec`` leaves open is taken from the call and pinned,
  and any difference is a :class:`~contextwright.integrations.errors.PrefixMismatch`
  naming it (:mod:`contextwright.integrations._caller_prefix`), never a silent swap,
* records what is new in the caller's history (user text, tool results; an assistant
  turn it recorded itself from the answer is recognised, not recorded twice),
* builds the engine's request and replaces the body with it (caller options such as
  ``thinking``, ``temperature`` or ``metadata`` are kept; ``max_tokens`` never exceeds
  the engine's output reserve),
* records the answer and its usage, and recovers once from a context-length error
  (compact, rebuild, send again).

The SDK runs client middleware once per attempt inside its retry loop
(``anthropic/_base_client.py``, ``_request``); every attempt of one call carries the
same idempotency key, so retries reuse the request already built and record nothing
new. A caller history that changes what is already recorded raises
:class:`~contextwright.integrations.errors.HistoryRewritten`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from contextwright._optional import require

require("anthropic", extra="anthropic", feature="the Anthropic client middleware")

from anthropic import Middleware  # noqa: E402

from contextwright.canonical import content_hash  # noqa: E402
from contextwright.integrations._caller_prefix import CallerPrefix, function_tools, settle_prefix, tool_spec  # noqa: E402
from contextwright.integrations._history import mirror, record_new_history  # noqa: E402
from contextwright.plan.plan import CacheTtl  # noqa: E402
from contextwright.providers.responses import parse_response  # noqa: E402
from contextwright.providers.wires.anthropic import check_thinking_budget  # noqa: E402
from contextwright.runtime.session import BuiltRequest, Session  # noqa: E402

__all__ = ["ContextwrightMiddleware"]

_ANNOTATED = object()
"""The span a streamed call records against when the SDK's span was annotated as the stream opened."""

# Body keys the engine owns; every other key of the caller's body is kept.
_ENGINE_KEYS = frozenset({"model", "system", "messages", "tools", "cache_control", "max_tokens"})


class ContextwrightMiddleware(Middleware):
    """Anthropic client middleware: the caller's history in, the engine's request out, the answer recorded."""

    def __init__(
        self,
        session: Session,
        *,
        prefix_ttl: CacheTtl | None = None,
        telemetry: bool = False,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        """``telemetry=True`` reports each answered request to OpenTelemetry (the ``otel`` extra).

        With the SDK's own tracing on (``open_telemetry=``) the SDK's span of the call gets
        the ``contextwright.*`` attributes and keeps the only ``gen_ai.usage.*`` counts;
        without it the engine's own ``chat`` span carries them. The providers default to
        the global ones.
        """
        self.session = session
        self.prefix_ttl = prefix_ttl
        self._telemetry = (tracer_provider, meter_provider) if telemetry else None
        self._built: tuple[str, BuiltRequest] | None = None
        self._lock = threading.Lock()

    def handle(self, request: Any, call_next: Any) -> Any:
        """Sync client: swap the body, send, recover once from an overflow, record the answer."""
        if not _is_messages_create(request):
            return call_next(request)
        built = self._built_for(request)
        for attempt in range(2):
            response = call_next(request.copy(body=self._body(request.json, built)))
            error = _overflow(response)
            if error is None:
                self._record(response, request, self._streamed_span(request, self._sdk_span()))
                return response
            response.close()
            built = self._recover(error, built, attempt, request)
        raise AssertionError("unreachable")

    async def handle_async(self, request: Any, call_next: Any) -> Any:
        """Async client: as :meth:`handle`, with the log and the builder off the event loop."""
        if not _is_messages_create(request):
            return await call_next(request)
        built = await asyncio.to_thread(self._built_for, request)
        for attempt in range(2):
            response = await call_next(request.copy(body=self._body(request.json, built)))
            error = _overflow(response)
            if error is None:
                span = await asyncio.to_thread(self._streamed_span, request, self._sdk_span())
                if response.http_response.is_success and request.stream:
                    await self._arecord_when_done(await response.parse(), span)
                elif response.http_response.is_success:
                    await asyncio.to_thread(self._record_parsed, await response.parse(), span)
                return response
            await response.close()
            built = await asyncio.to_thread(self._recover, error, built, attempt, request)
        raise AssertionError("unreachable")

    # -- internals -----------------------------------------------------------------------

    def _built_for(self, request: Any) -> BuiltRequest:
        """The request for this logical call: built once, reused by the SDK's retries of it."""
        key = str(request.options.idempotency_key or "")
        with self._lock:
            if self._built is not None and key and self._built[0] == key:
                return self._built[1]
            settle_prefix(self.session, caller_prefix(request.json or {}), adapter="anthropic middleware")
            record_new_history(
                self.session,
                list((request.json or {}).get("messages") or ()),
                fingerprint=fingerprint,
                record=record_messages,
            )
            built = self.session.next_request()
            self._built = (key, built)
            return built

    def _recover(self, error: Exception, built: BuiltRequest, attempt: int, request: Any) -> BuiltRequest:
        with self._lock:
            rebuilt = self.session.adapter.after_send_error(error, built, attempt)
            self._built = (str(request.options.idempotency_key or ""), rebuilt)
            return rebuilt

    def _body(self, caller: Mapping[str, Any] | None, built: BuiltRequest) -> dict[str, Any]:
        body = dict(built.anthropic(prefix_ttl=self.prefix_ttl))
        for key, value in (caller or {}).items():
            if key not in _ENGINE_KEYS:
                body[key] = value
        if caller and isinstance(caller.get("max_tokens"), int):
            body["max_tokens"] = min(caller["max_tokens"], body["max_tokens"])
        # Capping max_tokens can leave a budget that fit the caller's own max_tokens too large for the API.
        check_thinking_budget(body.get("thinking"), max_tokens=body["max_tokens"], model=str(body.get("model")))
        return body

    def _record(self, response: Any, request: Any, span: Any) -> None:
        if not response.http_response.is_success:
            return
        if request.stream:
            self._record_when_done(response.parse(), span)
        else:
            self._record_parsed(response.parse(), span)

    def _sdk_span(self) -> Any:
        """The SDK's own GenAI span of this call, taken while the call runs (None without telemetry or SDK tracing)."""
        if self._telemetry is None:
            return None
        from contextwright.telemetry.otel import current_genai_span

        return current_genai_span()

    def _streamed_span(self, request: Any, span: Any) -> Any:
        """For a stream, annotate the SDK's span with the built request now, while it is still open.

        The SDK ends its span when the response headers arrive, before the stream is read; the
        ``contextwright.*`` attributes of the request go on it here (its ``gen_ai.usage.*`` stay
        the SDK's), and the answer recorded later reports nothing more. Returns what the
        recording gets as its span: the sentinel for an annotated stream, else ``span``."""
        if span is None or not request.stream or not span.is_recording():
            return span
        from contextwright.telemetry import otel
        from contextwright.telemetry.records import request_records

        _, meter_provider = self._telemetry or (None, None)
        with self._lock:
            record = request_records(self.session.history.events)[-1]
        otel.annotate(span, record, meter_provider=meter_provider)
        return _ANNOTATED

    def _record_when_done(self, stream: Any, span: Any) -> None:
        """Record a streamed answer once the caller has read it to the end, with the SDK's own accumulator."""
        from anthropic.lib.streaming._messages import accumulate_event

        events = stream._iterator

        def recording() -> Any:
            snapshot, complete = None, False
            buffers: dict[int, bytes] = {}
            for event in events:
                snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
                complete = complete or event.type == "message_stop"
                yield event
            # Only a stream that reached message_stop is an answer; one cut midway leaves the request built, nothing recorded.
            if snapshot is not None and complete:
                self._record_parsed(snapshot, span)

        stream.__dict__["_iterator"] = recording()

    async def _arecord_when_done(self, stream: Any, span: Any) -> None:
        """Async :meth:`_record_when_done`."""
        from anthropic.lib.streaming._messages import accumulate_event

        events = stream._iterator

        async def recording() -> Any:
            snapshot, complete = None, False
            buffers: dict[int, bytes] = {}
            async for event in events:
                snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
                complete = complete or event.type == "message_stop"
                yield event
            if snapshot is not None and complete:
                await asyncio.to_thread(self._record_parsed, snapshot, span)

        stream.__dict__["_iterator"] = recording()

    def _record_parsed(self, message: Any, span: Any = None) -> None:
        """Record an answer and note it as seen, so the caller's copy of it is not recorded again."""
        with self._lock:
            self.session.record(message)
            data = message.model_dump() if hasattr(message, "model_dump") else dict(message)
            mirror(self.session, [fingerprint({"role": "assistant", "content": data["content"]})])
            self._report(span)

    def _report(self, span: Any) -> None:
        """Report the request just answered: on the SDK's span when the call had one, else as a span of its own."""
        if self._telemetry is None:
            return
        from contextwright.telemetry import otel
        from contextwright.telemetry.records import request_records

        if span is _ANNOTATED:
            return  # a stream whose SDK span was annotated when it opened
        tracer_provider, meter_provider = self._telemetry
        record = request_records(self.session.history.events)[-1]
        if span is None:
            otel.emit([record], tracer_provider=tracer_provider, meter_provider=meter_provider)
        elif span.is_recording():
            otel.annotate(span, record, meter_provider=meter_provider)
        # A stream read after the SDK ended its span: that span has the usage; a second one would double it.


def caller_prefix(body: Mapping[str, Any]) -> CallerPrefix:
    """The ``system`` and ``tools`` a Messages API body passes (see :mod:`contextwright.integrations._caller_prefix`)."""
    system = body.get("system")
    if isinstance(system, list):
        system = "\n\n".join(str(_plain(block).get("text", "")) for block in system if isinstance(_plain(block), Mapping))
    tools = body.get("tools")
    if tools is None:
        return CallerPrefix(system=system if isinstance(system, str) else None)
    specs = []
    for tool in map(_plain, tools):
        if "input_schema" in tool and tool.get("type") in (None, "custom"):
            specs.append(tool_spec(tool.get("name"), tool.get("description"), tool.get("input_schema")))
        else:
            specs.append(f"tool {tool.get('name') or tool.get('type')!r} (type {tool.get('type')!r})")
    pinnable, unpinnable = function_tools(specs)
    return CallerPrefix(system=system if isinstance(system, str) else None, tools=pinnable, unpinnable=unpinnable)


def _is_messages_create(request: Any) -> bool:
    # Messages and beta Messages (``/v1/messages?beta=true``); not count_tokens or batches.
    path = str(request.url).split("?", 1)[0].rstrip("/")
    return str(request.method).lower() == "post" and path.endswith("/messages")


def _overflow(response: Any) -> Exception | None:
    """The typed context-length error of a failed response, or None (other failures go back to the SDK)."""
    http = response.http_response
    if http.is_success or http.status_code not in (400, 413):
        return None
    from contextwright.errors import ContextLengthExceeded
    from contextwright.providers.errors import classify_provider_error

    http.read()
    try:
        body: Any = http.json()
    except ValueError:
        body = http.text
    error = classify_provider_error(http.status_code, body, provider="anthropic", request_id=http.headers.get("request-id"))
    return error if isinstance(error, ContextLengthExceeded) else None


def fingerprint(message: Any) -> str:
    """A content hash of what a Messages API message says, in a form the SDK's serialisation does not change."""
    message = _plain(message)
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
    return content_hash({"role": message.get("role"), "content": [_block_shape(b) for b in blocks]})


def _block_shape(block: Any) -> Any:
    block = _plain(block)
    if not isinstance(block, Mapping):
        return block
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": block.get("input")}
    if kind == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block.get("tool_use_id"),
            "content": _result_text(block.get("content")),
            "is_error": bool(block.get("is_error")),
        }
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.get("thinking"), "signature": block.get("signature")}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data")}
    return {k: v for k, v in block.items() if k not in ("cache_control", "citations") and v is not None}


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(_plain(part).get("text", "")) for part in content if isinstance(_plain(part), Mapping))


def record_messages(session: Session, messages: list[Any]) -> None:
    for message in messages:
        _record_message(session, message)


def _record_message(session: Session, message: Any) -> None:
    """Record one new message of the caller's history."""
    message = _plain(message)
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
    if message.get("role") == "assistant":
        # An answer the caller got some other way (a stream, for example): read it as the Messages API answer it was.
        answer, _ = parse_response({"type": "message", "role": "assistant", "content": blocks})
        session.adapter.record_assistant(answer)
        return
    pending = {call.id for call in session.pending_tool_calls()}
    texts = []
    for block in blocks:
        if block.get("type") == "tool_result":
            if block.get("tool_use_id") in pending:
                session.tool_result(
                    block["tool_use_id"], _result_text(block.get("content")), is_error=bool(block.get("is_error"))
                )
            # Otherwise the engine answered it already (its control tools, calls to revoked tools).
        elif block.get("type") == "text" and block.get("text", "").strip():
            texts.append(block["text"])
    if texts:
        session.user("\n\n".join(texts), author="operator" if message.get("role") == "system" else "user")
