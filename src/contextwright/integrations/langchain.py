"""LangChain 1.x: agent middleware that keeps the graph's history whole and hands the model the engine's request.

``create_agent(model, tools, middleware=[ContextwrightMiddleware(engine, model=...)])``:

* graph state is never touched; on every model call the middleware records what is
  new in ``request.messages`` (human, AI and tool messages with their tool calls and
  ids) into the engine session of the thread, and calls the handler with
  ``request.override(...)`` carrying the engine's system message, messages and tools:
  envelopes, bounded tool outputs, pointers, compaction summaries and, for
  ``ChatAnthropic``, the engine's cache breakpoints (at most 4);
* the answer is recorded with its ``usage_metadata`` (cache reads and writes);
* the engine's control tools (working state, reading an artifact back) are the
  middleware's ``tools``; their calls are answered by the engine, never run;
* thinking blocks of an AI message go back to the model exactly as they came, from the log
  (where a compaction made them stale on a prefix-checking model, they stay out);
* ``ChatOpenAI`` (and the other ``langchain_openai`` chat models) get the session's
  ``prompt_cache_key`` as a model setting, so every request of a session shares one cache;
* LangChain's ``AnthropicPromptCachingMiddleware`` places its own breakpoints on the
  same request, so combining the two is refused with :class:`ConflictingCacheMiddleware`;
  its ``SummarizationMiddleware`` replaces the graph's messages with a summary, so
  combining the two is refused from the first call with :class:`ConflictingContextMiddleware`.

What the session has seen is mirrored in its log (``framework.items.added``, one
content hash per message), so a restarted worker resumes where the last one stopped,
and a history rewritten under it (for example by a summarising middleware) is a
:class:`HistoryRewritten` error instead of a silent divergence.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from contextwright._optional import require

require("langchain.agents", extra="langchain", feature="the LangChain integration")

from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse  # noqa: E402
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.tools import BaseTool, StructuredTool  # noqa: E402

from contextwright.integrations._history import mirror, record_new_history  # noqa: E402
from contextwright.integrations._langchain_messages import (  # noqa: E402
    assistant_message,
    fingerprint,
    from_chat_body,
    openai_tool,
    record_messages,
    to_langchain,
    usage_of,
)
from contextwright.integrations._telemetry import Reporter  # noqa: E402
from contextwright.integrations.errors import ConflictingCacheMiddleware, ConflictingContextMiddleware  # noqa: E402
from contextwright.models import ResolvedModel  # noqa: E402
from contextwright.plan.plan import CacheTtl  # noqa: E402
from contextwright.providers.shared_json import mutable  # noqa: E402
from contextwright.runtime.engine import Engine  # noqa: E402
from contextwright.runtime.session import BuiltRequest, Session  # noqa: E402
from contextwright.runtime.spec import CONTROL_TOOLS, AgentSpec, Tool  # noqa: E402

__all__ = ["ContextwrightMiddleware"]

_DEFAULT_SESSION = "langchain-default"
_OPEN_SESSIONS = 256


class ContextwrightMiddleware(AgentMiddleware):
    """``AgentMiddleware`` that gives the model the engine's request while graph state keeps everything."""

    def __init__(
        self,
        engine: Engine,
        agent: AgentSpec | None = None,
        *,
        model: ResolvedModel,
        session_id: str | Callable[[ModelRequest], str] | None = None,
        prefix_ttl: CacheTtl | None = None,
        telemetry: bool = False,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        """``telemetry=True`` reports each answered model call to OpenTelemetry (the ``otel`` extra);
        see :mod:`contextwright.integrations._telemetry`."""
        super().__init__()
        self._reporter = Reporter(telemetry, tracer_provider=tracer_provider, meter_provider=meter_provider)
        self.engine = engine
        self.agent_spec = agent
        self.model = model
        self.session_id = session_id
        self.prefix_ttl = prefix_ttl
        # The engine's control tools, answered in wrap_tool_call; none when the spec leaves them out.
        wanted = agent is None or agent.control_tools
        self.tools = [_control_tool(spec.name, spec.description, spec.input_schema) for spec in CONTROL_TOOLS] if wanted else []
        # Open sessions by id, least recently used first; an evicted one is reopened from the log.
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    # -- hooks ---------------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Record what is new, call the model with the engine's request, record the answer."""
        session, built = self._prepare(request, handler)
        for attempt in range(2):
            try:
                response = handler(self._engine_request(request, built))
            except Exception as exc:
                built = session.adapter.after_send_error(exc, built, attempt)
                continue
            self._record_answer(session, response)
            return response
        raise AssertionError("unreachable")

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Async :meth:`wrap_model_call`."""
        session, built = await asyncio.to_thread(self._prepare, request, handler)
        for attempt in range(2):
            try:
                response = await handler(self._engine_request(request, built))
            except Exception as exc:
                built = await asyncio.to_thread(session.adapter.after_send_error, exc, built, attempt)
                continue
            await asyncio.to_thread(self._record_answer, session, response)
            return response
        raise AssertionError("unreachable")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Answer the engine's control tools from the log (the engine already answered them); run the rest."""
        answer = self._control_answer(request)
        return answer if answer is not None else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_tool_call`."""
        answer = self._control_answer(request)
        return answer if answer is not None else await handler(request)

    # -- sessions ------------------------------------------------------------------------

    def session(self, session_id: str, request: ModelRequest | None = None) -> Session:
        """The engine session called ``session_id`` (opened on first use)."""
        key = session_id
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                spec = self.agent_spec or _spec_from_request(request)
                session = self._sessions[key] = self.engine.session(key, agent=spec, model=self.model)
                while len(self._sessions) > _OPEN_SESSIONS:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return session

    def _session_for(self, request: ModelRequest | None = None) -> Session:
        """The current run's session: ``session_id`` (a name or a function of the request), else the thread id."""
        if callable(self.session_id) and request is not None:
            return self.session(self.session_id(request), request)
        return self.session(
            (self.session_id if isinstance(self.session_id, str) else None) or _thread_id() or _DEFAULT_SESSION, request
        )

    # -- internals -----------------------------------------------------------------------

    def _prepare(self, request: ModelRequest, handler: Callable[..., Any]) -> tuple[Session, BuiltRequest]:
        _refuse_other_cache_markers(request, handler)
        _refuse_summarization(request)
        session = self._session_for(request)
        record_new_history(
            session, list(request.messages), fingerprint=fingerprint, record=record_messages, what="graph messages"
        )
        return session, session.next_request()

    def _record_answer(self, session: Session, response: Any) -> None:
        messages = response.result if isinstance(response, ModelResponse) else [response]
        for message in messages:
            if isinstance(message, AIMessage):
                session.adapter.record_assistant(assistant_message(message))
                usage = usage_of(message)
                if usage is not None:
                    session.adapter.record_usage(usage, model=message.response_metadata.get("model_name"))
                mirror(session, [fingerprint(message)])
                self._reporter.report(session)

    def _engine_request(self, request: ModelRequest, built: BuiltRequest) -> ModelRequest:
        if built.plan.model.provider != "anthropic":
            body = built.openai_chat()
            plain = from_chat_body(request, body)
            if not _is_chat_openai(request.model):
                return plain
            # ChatOpenAI sends model settings as request fields: the session's cache key keeps its prefix on one cache.
            keys: dict[str, Any] = {key: body[key] for key in ("prompt_cache_key", "prompt_cache_retention") if key in body}
            return plain.override(model_settings={**request.model_settings, **keys})
        anthropic_native = _is_chat_anthropic(request.model)
        # LangChain and its chat models get containers of their own, not the ones later requests share.
        body = mutable(built.anthropic(prefix_ttl=self.prefix_ttl))
        messages = [m for message in body["messages"] for m in to_langchain(message, anthropic_native)]
        if anthropic_native:
            system = SystemMessage(content=[dict(block) for block in body["system"]])
            tools: list[Any] = [dict(tool) for tool in body.get("tools", ())]
        else:
            system = SystemMessage(content="\n\n".join(block["text"] for block in body["system"]))
            tools = [openai_tool(tool) for tool in body.get("tools", ())]
        return request.override(system_message=system, messages=messages, tools=tools)

    def _control_answer(self, request: Any) -> ToolMessage | None:
        call = request.tool_call
        if call.get("name") not in {spec.name for spec in CONTROL_TOOLS}:
            return None
        # The session that recorded the call answered it: the thread's own first, then any other open one.
        with self._lock:
            sessions = list(reversed(self._sessions.values()))
        for event in (e for session in sessions for e in reversed(session.history.events)):
            if event.type == "tool.result" and event.payload.call_id == call.get("id"):
                result = event.payload
                return ToolMessage(
                    content=result.output,
                    tool_call_id=result.call_id,
                    name=result.tool_name,
                    status="error" if result.is_error else "success",
                )
        return None


def _thread_id() -> str | None:
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # outside a graph run
        return None
    value = configurable.get("thread_id")
    return str(value) if value is not None else None


def _refuse_other_cache_markers(request: ModelRequest, handler: Callable[..., Any]) -> None:
    """Refuse LangChain's Anthropic prompt caching: before us it has marked the request, after us it sits in the handler chain."""
    marked = "cache_control" in request.model_settings or _caching_middleware_inside(handler)
    system = request.system_message
    if system is not None and isinstance(system.content, list):
        marked = marked or any(isinstance(b, Mapping) and "cache_control" in b for b in system.content)
    for tool in request.tools:
        extras = getattr(tool, "extras", None) or {}
        marked = marked or "cache_control" in extras or (isinstance(tool, Mapping) and "cache_control" in tool)
    if marked:
        raise ConflictingCacheMiddleware(
            "the request already carries prompt-cache markers (AnthropicPromptCachingMiddleware or similar): "
            "Contextwright places the cache breakpoints itself, and Anthropic accepts at most 4 per request; "
            "remove the other caching middleware"
        )


def _refuse_summarization(request: ModelRequest) -> None:
    """Refuse LangChain's ``SummarizationMiddleware`` on the same agent: it rewrites the graph's messages under us.

    Found by the running graph's nodes (``SummarizationMiddleware.before_model``) from the first
    call on, or by the summary message it leaves in state (``lc_source="summarization"``)."""
    summarised = any(
        (getattr(message, "additional_kwargs", None) or {}).get("lc_source") == "summarization" for message in request.messages
    )
    if summarised or any(node.startswith("SummarizationMiddleware.") for node in _graph_nodes()):
        raise ConflictingContextMiddleware(
            "SummarizationMiddleware is on the same agent: it replaces the graph's messages with its own summary, "
            "which changes the history Contextwright already recorded; Contextwright bounds what the model sees "
            "itself (compaction summaries, pointers to tool output) and leaves graph state whole, so remove "
            "SummarizationMiddleware from create_agent(middleware=[...])"
        )


def _graph_nodes() -> set[str]:
    """The node names of the running graph, read from the channels LangGraph hands a node (empty outside a run)."""
    try:
        from langgraph.config import get_config

        channels = get_config()["configurable"]["__pregel_read"].args[1]
    except (RuntimeError, KeyError, AttributeError, IndexError, TypeError):
        return set()
    return {name[len("branch:to:") :] for name in channels if isinstance(name, str) and name.startswith("branch:to:")}


def _caching_middleware_inside(handler: Callable[..., Any]) -> bool:
    """True when an ``AnthropicPromptCachingMiddleware`` runs inside ``handler`` (the chain of inner middlewares).

    LangChain composes ``wrap_model_call`` hooks as closures (``langchain/agents/factory.py``,
    ``_chain_model_call_handlers``), so the inner middlewares are reachable through them.
    """
    seen: set[int] = set()
    todo: list[Any] = [handler]
    while todo and len(seen) < 200:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        owner = getattr(item, "__self__", None)
        if type(owner).__name__ == "AnthropicPromptCachingMiddleware":
            return True
        function = getattr(item, "__func__", item)
        for cell in getattr(function, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if callable(value):
                todo.append(value)
    return False


def _spec_from_request(request: ModelRequest | None) -> AgentSpec:
    """An agent spec from the graph's own system prompt and tools (when none was given)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    if request is None:
        return AgentSpec(policy="You are a helpful agent.")
    control = {spec.name for spec in CONTROL_TOOLS}
    tools = []
    for tool in request.tools:
        function = convert_to_openai_tool(tool)["function"]
        if function["name"] not in control:
            tools.append(Tool(function["name"], function.get("description", ""), function.get("parameters")))
    policy = request.system_prompt or "You are a helpful agent."
    return AgentSpec(policy=policy, tools=tools)


def _control_tool(name: str, description: str, schema: Mapping[str, Any]) -> BaseTool:
    def answered_by_the_engine(**_: Any) -> str:
        return "This tool is answered by Contextwright; the call did not pass through its middleware."

    return StructuredTool.from_function(
        func=answered_by_the_engine, name=name, description=description, args_schema=json.loads(json.dumps(schema))
    )


def _is_chat_anthropic(model: Any) -> bool:
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError:
        return False
    return isinstance(model, ChatAnthropic)


def _is_chat_openai(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:
        return False
    return isinstance(model, BaseChatOpenAI)
