"""LiteLLM: the engine's request through ``litellm.completion``, and a hook for LiteLLM's proxy.

Needs the ``litellm`` extra (``pip install "contextwright[litellm]"``; the proxy hook needs
``contextwright[litellm-proxy]``). In your own code, send through the session, which
records each answer before the call returns (a tool loop can answer its calls at once)::

    import litellm

    while True:
        response = session.send(litellm.completion, wire="litellm")
        calls = response.choices[0].message.tool_calls or []
        if not calls:
            break
        for call in calls:
            session.tool_result(call.id, run(call))

``await session.aio.send(litellm.acompletion, wire="litellm")`` is the async form; a
stream is recorded once it is read: ``chunks = list(litellm.completion(**session.next_request().render("litellm"), stream=True, stream_options={"include_usage": True}))``
then ``session.record(litellm.stream_chunk_builder(chunks))``.

:class:`ContextwrightProxyHook` puts the engine in LiteLLM's proxy (``callbacks`` in its
config): every ``/chat/completions`` call, and every ``/v1/messages`` call (Claude Code
through the proxy, on the Anthropic wire), is rebuilt by the engine before it goes
upstream (``async_pre_call_hook``), its answer recorded before the client gets it
(``async_post_call_success_hook``, or at the end of a stream), and an overflow compacts
the session so the client's retry fits (``async_post_call_failure_hook``).

:class:`ContextwrightLogger` only listens: a ``CustomLogger`` that records answers of
calls made elsewhere. LiteLLM runs loggers after the call has returned (on a worker
thread, or a background task for async and streamed calls), so its records are late
for a loop that goes on at once: use ``session.send`` there. LiteLLM keeps every logger
it is given in process-wide lists, per-call ``callbacks=`` included (litellm
``litellm_core_utils/logging_callback_manager.py``), so a logger hears every later
call: a logger for one session records only the calls whose metadata names it
(``metadata={"contextwright_session": id}``) and skips the rest, those that name no session
included, or takes a ``resolve`` function that picks the session from the call's keyword
arguments.
See https://docs.litellm.ai/docs/observability/custom_callback and
https://docs.litellm.ai/docs/proxy/call_hooks.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextwright._optional import require

if TYPE_CHECKING:
    from contextwright.events.envelope import Event
    from contextwright.runtime.session import Session

_CustomLogger: Any = require("litellm.integrations.custom_logger", extra="litellm", feature="the LiteLLM logger").CustomLogger

__all__ = ["HEADER", "METADATA_KEY", "ContextwrightLogger", "ContextwrightProxyHook", "call_metadata"]

Resolve = Callable[[dict[str, Any]], "Session | None"]
"""Picks the session a LiteLLM call belongs to from its keyword arguments; ``None`` skips it."""

METADATA_KEY = "contextwright_session"
"""The call metadata key that names the session a call belongs to."""

HEADER = "x-contextwright-session"
"""The request header that names the session of a call through the proxy (else ``metadata``, ``user``, the first message)."""

_REMEMBERED_CALLS = 4096
"""How many recent LiteLLM call ids a logger remembers to record each call once."""


class ContextwrightLogger(_CustomLogger):
    """A LiteLLM callback that records each successful answer and its usage into a session."""

    def __init__(self, session: Session | None = None, *, resolve: Resolve | None = None) -> None:
        if (session is None) == (resolve is None):
            from contextwright.errors import UsageError

            raise UsageError("give ContextwrightLogger either a session or a resolve function, not both or neither")
        super().__init__()
        self.session_id = session.id if session is not None else None
        """The session this logger records into, or None when ``resolve`` picks one per call.

        Public on purpose: LiteLLM tells loggers of one class apart by their public
        str/int/bool attributes, and would otherwise drop a second logger as a duplicate."""
        self._resolve: Resolve = resolve if resolve is not None else self._own_session(session)
        self.recorded: list[Event] = []
        """Events recorded through this logger, in order (for callers that report on them)."""
        # LiteLLM can hand one call to the same logger twice (it sits in the global list
        # and in the call's own ``callbacks=``), from different threads; record it once.
        self._seen_calls: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _own_session(session: Session | None) -> Resolve:
        def resolve(kwargs: dict[str, Any]) -> Session | None:
            named = call_metadata(kwargs).get(METADATA_KEY)
            # A call that names no session may be anyone's: every logger hears every later call.
            return session if session is not None and named == session.id else None

        return resolve

    def log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Record the answer of a finished call (LiteLLM calls this for sync calls)."""
        session = self._resolve(kwargs)
        if session is None:
            return
        with self._lock:
            if self._already_heard(kwargs):
                return
            self.recorded.extend(session.record(response_obj))

    def _already_heard(self, kwargs: dict[str, Any]) -> bool:
        call_id = kwargs.get("litellm_call_id")
        if not isinstance(call_id, str):
            return False
        if call_id in self._seen_calls:
            return True
        self._seen_calls[call_id] = None
        if len(self._seen_calls) > _REMEMBERED_CALLS:
            self._seen_calls.popitem(last=False)
        return False

    async def async_log_success_event(self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any) -> None:
        """Async twin: the log write runs in a worker thread, off the proxy's event loop."""
        await asyncio.to_thread(self.log_success_event, kwargs, response_obj, start_time, end_time)


def call_metadata(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The metadata a LiteLLM call was made with (``litellm_params.metadata``), or an empty dict."""
    params = kwargs.get("litellm_params") or {}
    metadata = params.get("metadata") if isinstance(params, dict) else None
    return metadata if isinstance(metadata, dict) else {}


# -- the proxy ------------------------------------------------------------------------------

_CHAT_CALLS = frozenset({"completion", "acompletion"})
_MESSAGES_CALLS = frozenset({"anthropic_messages", "aanthropic_messages"})
# Body keys the engine's LiteLLM request sets; the caller's others (temperature, stream, ...) are kept.
_ENGINE_KEYS = frozenset(
    {"messages", "tools", "max_tokens", "max_completion_tokens", "prompt_cache_key", "prompt_cache_retention", "system"}
)


class ContextwrightProxyHook(_CustomLogger):
    """LiteLLM proxy hooks: each chat or messages call goes upstream as the engine's request, its answer recorded in time.

    ``model`` is the engine's model for every proxy model name, or a mapping from the proxy's
    ``model_name`` to it. ``agent`` is the platform's part of the prefix; on each session's first
    call the client's own system prompt and tools are pinned after it (a later call that changes
    them is refused, see :mod:`contextwright.integrations._caller_prefix`). The session of a call
    is named by the ``x-contextwright-session`` header, else ``metadata.contextwright_session``,
    else the body's ``user``, else the hash of the conversation's first message."""

    def __init__(self, engine: Any, agent: Any, model: Any) -> None:
        super().__init__()
        self.engine = engine
        self.agent = agent
        self._models = model
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    # -- LiteLLM's hooks ----------------------------------------------------------------------

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str) -> Any:
        """Record what is new in the client's messages and hand LiteLLM the engine's request instead."""
        if call_type not in (_CHAT_CALLS | _MESSAGES_CALLS) or not isinstance(data.get("messages"), list):
            return data
        return await asyncio.to_thread(self._rebuilt, data, call_type in _MESSAGES_CALLS)

    async def async_post_call_success_hook(self, data: dict[str, Any], user_api_key_dict: Any, response: Any) -> Any:
        """Record the answer before the client gets it."""
        session = self._session_of(data)
        if session is not None and (getattr(response, "choices", None) or _is_message(response)):
            await asyncio.to_thread(self._record, session, response)
        return response

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> Any:
        """Pass a stream through as it arrives; record the answer it assembles once it has ended."""
        import litellm

        chunks = []
        async for chunk in response:
            chunks.append(chunk)
            yield chunk
        session = self._session_of(request_data)
        if session is None or not chunks:
            return
        if isinstance(chunks[0], (bytes, str)):  # /v1/messages: the Anthropic stream's server-sent events
            assembled: Any = _anthropic_message_of(chunks)
        else:
            assembled = litellm.stream_chunk_builder(chunks)
        if assembled is not None:
            await asyncio.to_thread(self._record, session, assembled)

    async def async_post_call_failure_hook(
        self, request_data: dict[str, Any], original_exception: Exception, user_api_key_dict: Any, traceback_str: Any = None
    ) -> Any:
        """After a context-length error, compact the session so that the client's retry is built smaller."""
        session = self._session_of(request_data)
        if session is not None and _is_overflow(original_exception):
            await asyncio.to_thread(self._relieve, session)
        return None

    # -- internals ----------------------------------------------------------------------------

    def _rebuilt(self, data: dict[str, Any], anthropic_messages: bool = False) -> dict[str, Any]:
        from contextwright.integrations._caller_prefix import settle_prefix
        from contextwright.integrations._history import record_new_history

        session_id = _session_id(data)
        session = self._session(session_id, str(data.get("model") or ""))
        with self._session_lock(session_id):
            if anthropic_messages:  # /v1/messages (Claude Code through the proxy): the Anthropic wire
                from contextwright.integrations import anthropic as wire

                settle_prefix(session, wire.caller_prefix(data), adapter="LiteLLM proxy hook (/v1/messages)")
                record_new_history(session, list(data["messages"]), fingerprint=wire.fingerprint, record=wire.record_messages)
            else:
                from contextwright.integrations.openai import _CHAT

                settle_prefix(session, _CHAT.prefix(data), adapter="LiteLLM proxy hook")
                record_new_history(
                    session, _CHAT.history(data), fingerprint=_CHAT.fingerprint, record=_CHAT.record, what="messages"
                )
            built = session.next_request()
        body = dict(built.anthropic()) if anthropic_messages else built.render("litellm")
        out = {key: value for key, value in data.items() if key not in _ENGINE_KEYS}
        out.update({key: value for key, value in body.items() if key != "model"})
        for key in ("max_tokens", "max_completion_tokens"):
            if isinstance(data.get(key), int) and isinstance(body.get("max_tokens"), int):
                out["max_tokens"] = min(data[key], body["max_tokens"])
        metadata = dict(out.get("metadata") or {})
        metadata[METADATA_KEY] = session_id
        out["metadata"] = metadata
        return out

    def _record(self, session: Session, response: Any) -> None:
        from contextwright.integrations._history import mirror
        from contextwright.integrations.openai import _CHAT

        with self._session_lock(session.id):
            session.record(response)
            if _is_message(response):
                from contextwright.integrations.anthropic import fingerprint

                content = response["content"] if isinstance(response, dict) else response.content
                mirror(session, [fingerprint({"role": "assistant", "content": content})])
            else:
                mirror(session, [_CHAT.fingerprint(response.choices[0].message)])

    def _relieve(self, session: Session) -> None:
        with self._session_lock(session.id):
            session.compact(trigger="overflow")

    def _session_of(self, data: dict[str, Any]) -> Session | None:
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        session_id = (metadata or {}).get(METADATA_KEY)
        with self._lock:
            return self._sessions.get(session_id) if isinstance(session_id, str) else None

    def _session(self, session_id: str, proxy_model: str) -> Session:
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                model = self._models.get(proxy_model) if isinstance(self._models, dict) else self._models
                if model is None:
                    from contextwright.errors import UsageError

                    raise UsageError(
                        f"the proxy model {proxy_model!r} has no engine model: add it to ContextwrightProxyHook(model={{...}})"
                    )
                session = self._sessions[session_id] = self.engine.session(session_id, agent=self.agent, model=model)
                while len(self._sessions) > _REMEMBERED_CALLS:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(session_id)
            return session

    def _session_lock(self, session_id: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(session_id, threading.Lock())


def _session_id(data: dict[str, Any]) -> str:
    """The session a proxy call belongs to (see :class:`ContextwrightProxyHook`)."""
    from contextwright.canonical import content_hash

    request = data.get("proxy_server_request") if isinstance(data.get("proxy_server_request"), dict) else {}
    headers = {str(k).lower(): v for k, v in ((request or {}).get("headers") or {}).items()}
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    for named in (headers.get(HEADER), (metadata or {}).get(METADATA_KEY), data.get("user")):
        if isinstance(named, str) and named.strip():
            return named.strip()
    first = next((m for m in data.get("messages") or () if isinstance(m, dict) and m.get("role") == "user"), {})
    return "litellm-" + content_hash({"first": first.get("content")}).removeprefix("sha256:")[:24]


def _is_overflow(exc: Exception) -> bool:
    import litellm

    return isinstance(exc, litellm.ContextWindowExceededError)


def _is_message(response: Any) -> bool:
    """True for an Anthropic Messages answer (what the proxy's ``/v1/messages`` returns)."""
    kind = response.get("type") if isinstance(response, dict) else getattr(response, "type", None)
    return kind == "message"


_STREAM_EVENTS = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)


def _anthropic_message_of(chunks: list[Any]) -> Any:
    """The message an Anthropic event stream assembles to (the SDK's own accumulator), or None if it did not end."""
    import json

    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent
    from pydantic import TypeAdapter

    text = b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks).decode()
    adapter: Any = TypeAdapter(RawMessageStreamEvent)
    snapshot: Any = None
    complete = False
    buffers: dict[int, bytes] = {}
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "".join(line[len("data:") :].strip() for line in block.splitlines() if line.startswith("data:"))
        if not data:
            continue
        payload = json.loads(data)
        if payload.get("type") not in _STREAM_EVENTS:
            continue
        snapshot = accumulate_event(event=adapter.validate_python(payload), current_snapshot=snapshot, json_bufs=buffers)
        complete = complete or payload["type"] == "message_stop"
    return snapshot if complete else None
