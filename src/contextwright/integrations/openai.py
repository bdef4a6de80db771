"""Drop-in for existing OpenAI code: ``wrap(client, session)`` sends the engine's body instead of the caller's.

The ``openai`` SDK has no client middleware, so the wrapper stands in front of the
four calls that carry a conversation: ``chat.completions.create`` / ``.stream`` and
``responses.create`` / ``.stream``, on ``OpenAI`` and ``AsyncOpenAI`` alike; every
other attribute is the client's own. Per call it

* checks the caller's system prompt (``instructions``, leading system/developer
  messages) and function ``tools`` against the session's prefix: on the first request
  what the ``AgentSpec`` leaves open is taken from the call and pinned, and any
  difference is a :class:`~contextwright.integrations.errors.PrefixMismatch` naming it
  (:mod:`contextwright.integrations._caller_prefix`), never a silent swap,
* records what is new in the caller's history (``messages`` or ``input``: user text,
  tool results; an answer it recorded itself is recognised, not recorded twice),
* builds the engine's request and sends its body (caller options such as
  ``temperature``, ``reasoning`` or ``include`` are kept; the output limit never
  exceeds the engine's reserve); reasoning items of the caller's Responses history
  go back unchanged before the call or message they preceded,
* records the answer and its usage (for a stream, the SDK's own final object when the
  ``with`` block ends), and recovers once from a context-length error.

The SDK retries inside one ``create``, so one logical call is one built request. A
history that changes what is already recorded raises
:class:`~contextwright.integrations.errors.HistoryRewritten`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextwright._optional import require

require("openai", extra="openai", feature="the OpenAI client wrapper")

import openai  # noqa: E402

from contextwright.canonical import content_hash  # noqa: E402
from contextwright.events.catalog import AssistantMessage, ToolCall  # noqa: E402
from contextwright.integrations._caller_prefix import CallerPrefix, function_tools, settle_prefix, tool_spec  # noqa: E402
from contextwright.integrations._history import mirror, record_new_history  # noqa: E402
from contextwright.integrations._responses_items import record_items, text_of, with_reasoning  # noqa: E402
from contextwright.integrations._telemetry import Reporter  # noqa: E402
from contextwright.runtime.session import BuiltRequest, Session  # noqa: E402
from contextwright.runtime.streaming import AsyncRecordingStream, RecordingStream  # noqa: E402

__all__ = ["wrap"]


def wrap(
    client: Any, session: Session, *, telemetry: bool = False, tracer_provider: Any = None, meter_provider: Any = None
) -> Any:
    """``client`` (``openai.OpenAI`` or ``openai.AsyncOpenAI``) with its conversation calls going through ``session``.

    ``telemetry=True`` reports each answered call to OpenTelemetry (the ``otel`` extra), as a
    ``chat`` span of the engine's own, or on another instrumentation's GenAI span when one is
    current (:mod:`contextwright.integrations._telemetry`)."""
    reporter = Reporter(telemetry, tracer_provider=tracer_provider, meter_provider=meter_provider)
    return _Client(client, session, asynchronous=isinstance(client, openai.AsyncOpenAI), reporter=reporter)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Wire:
    """How one OpenAI API carries a conversation."""

    name: str
    history_key: str
    engine_keys: frozenset[str]
    limit_key: str
    history: Callable[[Mapping[str, Any]], list[Any]]
    fingerprint: Callable[[Any], str]
    record: Callable[[Session, list[Any]], None]
    answer_items: Callable[[Any], list[Any]]
    finish: Callable[[dict[str, Any], list[Any]], dict[str, Any]]
    prefix: Callable[[Mapping[str, Any]], CallerPrefix]


class _Client:
    """The wrapped client: ``chat.completions`` and ``responses`` go through the session, the rest is the client's."""

    def __init__(self, client: Any, session: Session, *, asynchronous: bool, reporter: Reporter) -> None:
        self._client = client
        self.session = session
        self.chat = _Namespace(completions=_Endpoint(client.chat.completions, session, _CHAT, asynchronous, reporter))
        self.responses = _Endpoint(client.responses, session, _RESPONSES, asynchronous, reporter)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class _Namespace:
    def __init__(self, **members: Any) -> None:
        self.__dict__.update(members)


class _Endpoint:
    """``create`` and ``stream`` of one API, through the session."""

    def __init__(self, inner: Any, session: Session, wire: _Wire, asynchronous: bool, reporter: Reporter) -> None:
        self._inner = inner
        self.session = session
        self.wire = wire
        self._async = asynchronous
        self._reporter = reporter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, **kwargs: Any) -> Any:
        """The SDK's ``create`` with the engine's body; the answer is recorded (a streamed one on the next call)."""
        if self._async:
            return self._acreate(kwargs)
        built = self._prepare(kwargs)
        for attempt in range(2):
            try:
                response = self._inner.create(**self._body(kwargs, built))
            except Exception as exc:
                built = self.session.adapter.after_send_error(exc, built, attempt)
                continue
            if not kwargs.get("stream"):
                self._record(response)
            return response
        raise AssertionError("unreachable")

    async def _acreate(self, kwargs: dict[str, Any]) -> Any:
        built = await asyncio.to_thread(self._prepare, kwargs)
        for attempt in range(2):
            try:
                response = await self._inner.create(**self._body(kwargs, built))
            except Exception as exc:
                built = await asyncio.to_thread(self.session.adapter.after_send_error, exc, built, attempt)
                continue
            if not kwargs.get("stream"):
                await asyncio.to_thread(self._record, response)
            return response
        raise AssertionError("unreachable")

    def stream(self, **kwargs: Any) -> Any:
        """The SDK's ``stream`` on the engine's body: the SDK's stream inside ``with``, the final answer recorded after.

        The session's own recording stream does the work (one overflow recovery when the
        stream opens; a stream cut short records nothing), with this endpoint as its host.
        """
        extra = {key: value for key, value in kwargs.items() if key not in self.wire.engine_keys}
        if self.wire.name == "openai_chat" and "stream_options" not in extra:
            # A chat stream reports usage only when asked to; the log needs it.
            extra["stream_options"] = {"include_usage": True}
        history = self.wire.history(kwargs)

        def open_stream(**body: Any) -> Any:
            return self._inner.stream(**self._capped(body, kwargs, history))

        host = _StreamHost(self, kwargs)
        opened = AsyncRecordingStream if self._async else RecordingStream
        return opened(host, open_stream, request=None, wire=self.wire.name, extra=extra)

    # -- internals -----------------------------------------------------------------------

    def _prepare(self, kwargs: Mapping[str, Any]) -> BuiltRequest:
        settle_prefix(self.session, self.wire.prefix(kwargs), adapter=f"OpenAI wrapper ({self.wire.name})")
        record_new_history(
            self.session, self.wire.history(kwargs), fingerprint=self.wire.fingerprint, record=self.wire.record, what="history"
        )
        return self.session.next_request()

    def _body(self, caller: Mapping[str, Any], built: BuiltRequest) -> dict[str, Any]:
        body = dict(built.render(self.wire.name))
        for key, value in caller.items():
            if key not in self.wire.engine_keys:
                body[key] = value
        return self._capped(body, caller, self.wire.history(caller))

    def _capped(self, body: dict[str, Any], caller: Mapping[str, Any], history: list[Any]) -> dict[str, Any]:
        """The output limit never above the engine's reserve; the caller's reasoning items put back."""
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            if isinstance(caller.get(key), int):
                body[self.wire.limit_key] = min(caller[key], body[self.wire.limit_key])
        return self.wire.finish(body, history)

    def _record(self, response: Any) -> None:
        self.session.record(response)
        mirror(self.session, [self.wire.fingerprint(item) for item in self.wire.answer_items(response)])
        self._reporter.report(self.session)


class _StreamHost:
    """What the session's recording stream needs, with the caller's history recorded first and the answer noted."""

    def __init__(self, endpoint: _Endpoint, kwargs: Mapping[str, Any]) -> None:
        self.endpoint = endpoint
        self.kwargs = kwargs

    def next_request(self) -> BuiltRequest:
        return self.endpoint._prepare(self.kwargs)

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        return self.endpoint.session.adapter.after_send_error(exc, request, attempt)

    def record(self, response: Any) -> list[Any]:
        self.endpoint._record(response)
        return []


# -- Chat Completions ---------------------------------------------------------------------


def _caller_prefix(kwargs: Mapping[str, Any], history: list[Any], system: str | None, flat: bool) -> CallerPrefix:
    """The system text (``system`` and the history's leading system/developer messages) and function tools of a call."""
    texts = [system] if system else []
    for item in map(_plain, history):
        if not isinstance(item, Mapping) or item.get("role") not in ("system", "developer"):
            break
        texts.append(text_of(item.get("content")))
    joined = "\n\n".join(t for t in texts if t) or None
    if kwargs.get("tools") is None:
        return CallerPrefix(system=joined)
    specs = []
    for tool in map(_plain, kwargs["tools"]):
        function = tool if flat else tool.get("function") or {}
        if tool.get("type") == "function" and function.get("name"):
            specs.append(tool_spec(function["name"], function.get("description"), function.get("parameters")))
        else:
            specs.append(f"tool {tool.get('name') or tool.get('type')!r} (type {tool.get('type')!r})")
    pinnable, unpinnable = function_tools(specs)
    return CallerPrefix(system=joined, tools=pinnable, unpinnable=unpinnable)


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _chat_fingerprint(message: Any) -> str:
    message = _plain(message)
    calls = [[c.get("id"), c["function"]["name"], c["function"].get("arguments")] for c in message.get("tool_calls") or ()]
    shape = {"role": message.get("role"), "content": text_of(message.get("content")), "tool_calls": calls}
    if message.get("tool_call_id"):
        shape["tool_call_id"] = message["tool_call_id"]
    return content_hash(shape)


def _record_chat(session: Session, messages: list[Any]) -> None:
    import json

    for message in map(_plain, messages):
        role = message.get("role")
        if role == "user":
            session.user(text_of(message.get("content")) or "(empty message)")
        elif role == "assistant":
            calls = tuple(
                ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"].get("arguments") or "{}"))
                for c in message.get("tool_calls") or ()
            )
            session.adapter.record_assistant(AssistantMessage(text=text_of(message.get("content")), tool_calls=calls))
        elif role == "tool":
            if message.get("tool_call_id") in {c.id for c in session.pending_tool_calls()}:
                session.tool_result(message["tool_call_id"], text_of(message.get("content")))
        elif role in ("system", "developer") and session.adapter.has_history:
            # The engine owns the system prompt; a later system note reaches the model as an operator message.
            session.user(text_of(message.get("content")), author="operator")


_CHAT = _Wire(
    name="openai_chat",
    history_key="messages",
    engine_keys=frozenset(
        {"model", "messages", "tools", "max_tokens", "max_completion_tokens", "prompt_cache_key", "prompt_cache_retention"}
    ),
    limit_key="max_completion_tokens",
    history=lambda kwargs: list(kwargs.get("messages") or ()),
    fingerprint=_chat_fingerprint,
    record=_record_chat,
    answer_items=lambda response: [response.choices[0].message],
    finish=lambda body, history: body,
    prefix=lambda kwargs: _caller_prefix(kwargs, list(kwargs.get("messages") or ()), None, flat=False),
)


# -- Responses --------------------------------------------------------------------------------


def _responses_history(kwargs: Mapping[str, Any]) -> list[Any]:
    given = kwargs.get("input")
    if given is None:
        return []
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return [_plain(item) for item in given]


def _responses_fingerprint(item: Any) -> str:
    item = _plain(item)
    if isinstance(item, Mapping) and item.get("type", "message") == "message":
        # A message the caller typed ({"role", "content"}) and the same message as the API returns it are one message.
        return content_hash({"type": "message", "role": item.get("role"), "content": text_of(item.get("content"))})
    return content_hash({k: v for k, v in item.items() if k not in ("status",)})


def _responses_finish(body: dict[str, Any], history: list[Any]) -> dict[str, Any]:
    body["input"] = with_reasoning(body["input"], history)
    return body


_RESPONSES = _Wire(
    name="openai_responses",
    history_key="input",
    engine_keys=frozenset(
        {"model", "input", "instructions", "tools", "max_output_tokens", "prompt_cache_key", "prompt_cache_retention", "store"}
    ),
    limit_key="max_output_tokens",
    history=_responses_history,
    fingerprint=_responses_fingerprint,
    record=record_items,
    answer_items=lambda response: list(response.output),
    finish=_responses_finish,
    prefix=lambda kwargs: _caller_prefix(kwargs, _responses_history(kwargs), kwargs.get("instructions"), flat=True),
)
