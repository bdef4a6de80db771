"""OpenAI Agents SDK: a ``Session`` kept in the event log, and a model input filter that hands the model the engine's surface.

* :class:`ContextwrightSession` implements the SDK's ``Session`` protocol. Items are stored
  exactly as the SDK hands them over, append-only: ``pop_item`` and ``clear_session``
  are new events, never deletes, so the whole history stays in the log.
* :class:`ContextwrightModel` is the one object that bounds context by itself: an SDK
  ``Model`` set once on the ``Agent`` (``Agent(model=ContextwrightModel("gpt-5.5", session))``)
  that, on every model call of every run, records what is new in the SDK's input, hands
  the wrapped model the engine's request with the session's ``prompt_cache_key``, and
  records the call's usage. Any SDK session (``SQLiteSession``, :class:`ContextwrightSession`)
  keeps the whole history; nothing else is wired per run.
* :func:`model_input_filter` is a ``RunConfig.call_model_input_filter``: before every
  model call it records what is new in the SDK's input into an engine session and
  replaces the input with the engine's request (bounded tool outputs, pointers,
  compaction summaries, the task kept visible) rendered as Responses items; its
  ``hooks()`` record the usage.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from contextwright._optional import require

require("agents", extra="agents", feature="the OpenAI Agents SDK integration")

from agents import Model, ModelSettings, RunConfig, RunHooks  # noqa: E402
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

from contextwright.canonical import content_hash  # noqa: E402
from contextwright.derive._framework_items import fold_framework_items  # noqa: E402
from contextwright.errors import SeqConflict  # noqa: E402
from contextwright.events.catalog import (  # noqa: E402
    FrameworkItemPopped,
    FrameworkItemsAdded,
    FrameworkItemsCleared,
)
from contextwright.events.envelope import Event  # noqa: E402
from contextwright.integrations._history import record_new_history  # noqa: E402
from contextwright.integrations._responses_items import record_items, with_reasoning  # noqa: E402
from contextwright.integrations._telemetry import Reporter  # noqa: E402
from contextwright.integrations.errors import FrameworkSessionClosed  # noqa: E402
from contextwright.log import EventLog, open_log  # noqa: E402
from contextwright.log.memory import InMemoryEventLog  # noqa: E402
from contextwright.providers.usage import Usage  # noqa: E402
from contextwright.runtime.engine import Engine  # noqa: E402
from contextwright.runtime.session import Session  # noqa: E402
from contextwright.runtime.spec import AgentSpec, Tool  # noqa: E402

__all__ = ["ContextwrightModel", "ContextwrightSession", "ModelInputFilter", "agent_spec_for", "model_input_filter"]

# Appends retry when another writer got in first; the fold is re-read each time.
_MAX_CONFLICT_RETRIES = 20


class ContextwrightSession:
    """An Agents SDK ``Session`` whose items live in a Contextwright event log (append-only)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        store: str | os.PathLike[str] | EventLog | Engine = ":memory:",
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        db_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """``store`` is a store URL or path (``":memory:"`` by default), an ``EventLog`` or an ``Engine``.

        ``db_path`` is ``SQLiteSession``'s name for it, accepted so code written for that class runs unchanged.
        """
        if db_path is not None:
            store = db_path
        self.session_id = session_id
        self.session_settings = coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        self._owns_log = not isinstance(store, (EventLog, Engine))
        self.log = _log_for(store)
        self._events: list[Event] = []
        # The cached events are shared by worker threads; other processes are kept apart by expected_seq.
        self._lock = threading.Lock()
        self._closed = False

    # -- the Session protocol -------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items in order; ``limit`` (or the settings' limit) keeps the latest N."""
        self._check_open()
        effective = resolve_session_limit(limit, self.session_settings)
        items = await asyncio.to_thread(self._items)
        if effective is None or effective < 0:
            # SQLiteSession passes a negative limit to SQL's LIMIT, which means no limit.
            return items
        return items[-effective:] if effective else []

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` exactly as given, in one event."""
        self._check_open()
        if not items:
            return
        payload = FrameworkItemsAdded(items=tuple(items))
        await _outcome_first(asyncio.to_thread(self._append_with_retry, lambda _items: payload))

    async def pop_item(self) -> Any | None:
        """Take back the most recent item (recorded as an event; the item stays in the log)."""
        self._check_open()
        popped: list[Any] = []

        def pop(items: list[Any]) -> FrameworkItemPopped | None:
            popped[:] = items[-1:]
            return FrameworkItemPopped(position=len(items) - 1) if items else None

        await _outcome_first(asyncio.to_thread(self._append_with_retry, pop))
        return popped[0] if popped else None

    async def clear_session(self) -> None:
        """Start the item list afresh (recorded as an event; nothing is deleted)."""
        self._check_open()
        await _outcome_first(
            asyncio.to_thread(self._append_with_retry, lambda items: FrameworkItemsCleared(count=len(items)) if items else None)
        )

    def close(self) -> None:
        """Close the session (and the store, when the session opened it)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_log:
            self.log.close()

    # -- internals --------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise FrameworkSessionClosed(f"ContextwrightSession {self.session_id!r} is closed", session_id=self.session_id)

    def _sync(self) -> None:
        last = self._events[-1].seq if self._events else 0
        self._events.extend(self.log.read(self.session_id, after_seq=last))

    def _items(self) -> list[Any]:
        with self._lock:
            self._sync()
            return fold_framework_items(self._events)

    def _append_with_retry(self, decide: Callable[[list[Any]], Any]) -> None:
        """Append what ``decide`` makes of the current items, re-deciding after a lost race."""
        for _ in range(_MAX_CONFLICT_RETRIES):
            with self._lock:
                self._sync()
                payload = decide(fold_framework_items(self._events))
                if payload is None:
                    return
                last = self._events[-1].seq if self._events else 0
                try:
                    stored = self.log.append(self.session_id, [payload], expected_seq=last)
                except SeqConflict:
                    continue
                self._events.extend(stored)
                return
        raise SeqConflict(
            self.session_id,
            expected_seq=self._events[-1].seq if self._events else 0,
            actual_seq=self.log.last_seq(self.session_id),
        )


class ModelInputFilter:
    """A ``RunConfig.call_model_input_filter`` that records what is new and hands the model the engine's request.

    The SDK's input (its session history plus this run's items) is the framework's
    record; the engine session records the messages, tool calls and tool results it
    carries once, and notes their content hashes (``framework.history.seen``, so a
    restarted process knows where it stopped). The model then receives the engine's request as
    Responses items; reasoning items travel with the tool call or message they precede.
    """

    def __init__(self, session: Session, *, reporter: Reporter | None = None) -> None:
        self.session = session
        self._run_config: RunConfig | None = None
        self._reporter = reporter or Reporter(False)

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """Record what is new in ``data.model_data.input``, build, and return the engine's input."""
        # The log and the builder block; keep them off the runner's event loop.
        return await asyncio.to_thread(self.filter, data)

    def filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The synchronous filter (what ``__call__`` runs in a worker thread)."""
        engine_input, key = _engine_input(self.session, list(data.model_data.input))
        self._set_cache_key(key)
        return ModelInputData(input=engine_input, instructions=None)

    def hooks(self) -> RunHooks[Any]:
        """``RunHooks`` that record each model call's usage (``Runner.run(..., hooks=filter.hooks())``)."""
        return _UsageHooks(self.session, self._reporter)

    def run_config(self, **options: Any) -> RunConfig:
        """A ``RunConfig`` with this filter and the session's ``prompt_cache_key`` (kept current per epoch)."""
        settings = options.pop("model_settings", None) or ModelSettings()
        self._run_config = RunConfig(call_model_input_filter=self, model_settings=settings, **options)
        return self._run_config

    # -- internals --------------------------------------------------------------------

    def _set_cache_key(self, key: str | None) -> None:
        if key is None or self._run_config is None:
            return
        settings = self._run_config.model_settings or ModelSettings()
        extra = dict(settings.extra_args or {})
        if extra.get("prompt_cache_key") != key:
            extra["prompt_cache_key"] = key
            self._run_config.model_settings = replace(settings, extra_args=extra)


class _UsageHooks(RunHooks[Any]):
    """Records the SDK's usage of every model call against the request the filter built for it."""

    def __init__(self, session: Session, reporter: Reporter) -> None:
        self.session = session
        self._reporter = reporter

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        model = getattr(agent, "model", None)
        await asyncio.to_thread(
            _record_usage, self.session, response.usage, model if isinstance(model, str) else None, self._reporter
        )


def _engine_input(session: Session, items: list[Any]) -> tuple[list[Any], str | None]:
    """Record what is new in the SDK's input items, build; the engine's input and its ``prompt_cache_key``."""
    record_new_history(session, items, fingerprint=content_hash, record=record_items, what="run input items")
    body = session.next_request().openai_responses()
    return with_reasoning(body["input"], items), body.get("prompt_cache_key")


def _record_usage(session: Session, usage: Any, model: str | None, reporter: Reporter) -> None:
    """Record an SDK ``Usage`` against the request just built (and report it when telemetry is on)."""
    details = usage.input_tokens_details
    read = int(getattr(details, "cached_tokens", 0) or 0)
    written = int(getattr(details, "cache_write_tokens", 0) or 0)
    # The SDK counts input as OpenAI does: cached reads and writes included.
    parsed = Usage(
        input_tokens=max(0, usage.input_tokens - read - written),
        cache_read_tokens=read,
        cache_write_5m_tokens=written,
        output_tokens=usage.output_tokens,
    )
    session.adapter.record_usage(parsed, model=model)
    reporter.report(session)


class ContextwrightModel(Model):
    """An SDK ``Model`` that bounds every call through an engine session, with nothing else wired per run.

    ``model`` is the model to call (a ``Model``, or a name the SDK's default provider resolves);
    ``session`` an engine session opened with ``agent_spec_for(agent)``. Each call records what
    is new in the SDK's input, sends the engine's request (the SDK's own system text stays out:
    the prefix carries it) with the session's ``prompt_cache_key``, and records the usage;
    ``telemetry=True`` reports each call to OpenTelemetry. Instructions the spec does not hold
    are pinned on the session's first call (when its ``instructions`` are empty) or refused with
    :class:`~contextwright.integrations.errors.PrefixMismatch`, never dropped."""

    def __init__(
        self,
        model: Model | str,
        session: Session,
        *,
        telemetry: bool = False,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        if isinstance(model, str):
            from agents.models.multi_provider import MultiProvider

            model = MultiProvider().get_model(model)
        self.inner = model
        self.session = session
        self._reporter = Reporter(telemetry, tracer_provider=tracer_provider, meter_provider=meter_provider)
        self._lock = asyncio.Lock()

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> Any:
        """The wrapped model's answer to the engine's request; its usage recorded."""
        async with self._lock:  # one call at a time per session: build, send, record
            engine_input, settings = await self._prepare(input, model_settings, system_instructions)
            response = await self.inner.get_response(
                None, engine_input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt,
            )  # fmt: skip
            await asyncio.to_thread(_record_usage, self.session, response.usage, self._name(), self._reporter)
            return response

    async def stream_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> Any:
        """The wrapped model's stream of the engine's request, passed through; the usage recorded at its end."""
        async with self._lock:
            engine_input, settings = await self._prepare(input, model_settings, system_instructions)
            events = self.inner.stream_response(
                None, engine_input, settings, tools, output_schema, handoffs, tracing,
                previous_response_id=previous_response_id, conversation_id=conversation_id, prompt=prompt,
            )  # fmt: skip
            async for event in events:
                yield event
                completed: Any = event
                if getattr(completed, "type", None) == "response.completed" and completed.response.usage is not None:
                    usage = _sdk_usage(completed.response.usage)
                    await asyncio.to_thread(_record_usage, self.session, usage, self._name(), self._reporter)

    async def close(self) -> None:
        """Close the wrapped model."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            await close()

    async def _prepare(self, given: Any, settings: ModelSettings, system: str | None) -> tuple[list[Any], ModelSettings]:
        from contextwright.integrations._caller_prefix import CallerPrefix, settle_prefix

        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        # The agent's instructions reach the model through the prefix: pinned on the first call
        # when the spec leaves them open, and a difference is refused rather than dropped.
        prefix = CallerPrefix(system=system)
        await asyncio.to_thread(settle_prefix, self.session, prefix, adapter="Agents SDK model")
        engine_input, key = await asyncio.to_thread(_engine_input, self.session, items)
        if key is not None:
            extra = {**(settings.extra_args or {}), "prompt_cache_key": key}
            settings = replace(settings, extra_args=extra)
        return engine_input, settings

    def _name(self) -> str | None:
        name = getattr(self.inner, "model", None)
        return name if isinstance(name, str) else None


def _sdk_usage(usage: Any) -> Any:
    """A Responses API usage as the SDK's ``Usage`` (what the SDK hands ``on_llm_end``)."""
    from agents.usage import Usage as SdkUsage

    return SdkUsage(
        requests=1,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
        input_tokens_details=usage.input_tokens_details,
        output_tokens_details=usage.output_tokens_details,
    )


def model_input_filter(
    session: Session, *, telemetry: bool = False, tracer_provider: Any = None, meter_provider: Any = None
) -> ModelInputFilter:
    """The filter for ``RunConfig(call_model_input_filter=...)`` over an engine ``session``.

    ``filter.run_config(...)`` also sets the session's stable ``prompt_cache_key``. With
    ``telemetry=True`` its hooks report each model call to OpenTelemetry once its usage is
    recorded (the ``otel`` extra; see :mod:`contextwright.integrations._telemetry`).
    """
    return ModelInputFilter(session, reporter=Reporter(telemetry, tracer_provider=tracer_provider, meter_provider=meter_provider))


def agent_spec_for(agent: Any, *, policy: str | None = None, instructions: str = "") -> AgentSpec:
    """An :class:`AgentSpec` with an SDK agent's function tools pinned (the SDK sends the tools itself)."""
    tools = [
        Tool(tool.name, getattr(tool, "description", "") or "", getattr(tool, "params_json_schema", None))
        for tool in getattr(agent, "tools", ())
        if hasattr(tool, "name")
    ]
    text = policy if policy is not None else (agent.instructions if isinstance(agent.instructions, str) else "")
    # The SDK runs tools itself and would not know the engine's control tools.
    return AgentSpec(policy=text or "You are a helpful agent.", instructions=instructions, tools=tools, control_tools=False)


async def _outcome_first(write: Any) -> Any:
    """Await a write to its outcome even when the caller is cancelled, then let the cancellation through.

    A cancelled caller must not believe a write that happened did not (and retry it); the
    SDK's own sessions behave the same way.
    """
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    result = task.result()
    if cancelled is not None:
        raise cancelled
    return result


def _log_for(store: str | os.PathLike[str] | EventLog | Engine) -> EventLog:
    if isinstance(store, Engine):
        return store.log
    if isinstance(store, EventLog):
        return store
    if os.fspath(store) == ":memory:":
        return InMemoryEventLog()
    return open_log(store)
