"""A session: the one object an agent loop holds.

The session is the only place that does I/O for a conversation. It owns the
session's position in the log (:class:`~contextwright.runtime.core.SessionCore`)
and coordinates small collaborators, each with one concern: tool calls
(:mod:`~contextwright.runtime.tool_calls`), pressure relief
(:mod:`~contextwright.runtime.relief`), request building
(:mod:`~contextwright.runtime.requests`), sending and streaming
(:mod:`~contextwright.runtime.sending`) and stages with child runs
(:mod:`~contextwright.runtime.stages`).

Its own members are the agent loop (``user``, ``next_request``, ``send``, ``stream``,
``record``, ``pending_tool_calls``, ``tool_result``, ``compact``, ``close``) and what a
user asks afterwards (``working_state``, ``stats``, ``inspect``). Every other concern is
a small object reached from it (``setup``, ``history``, ``tools``, ``memories``,
``stages``, ``artifacts``, ``children``, ``adapter``; :mod:`~contextwright.runtime.session_parts`).
The names those members had on the session itself are in :data:`MOVED`.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, Final, Literal, ParamSpec, TypeVar, cast

from contextwright._threads import to_thread
from contextwright.assembly.request import NeutralRequest
from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator
from contextwright.clock import Clock
from contextwright.derive import _working_state as ws
from contextwright.errors import StorageCorrupted, UsageError
from contextwright.events.catalog import (
    CompactionTrigger,
    MemoryCandidates,
    ToolCall,
    TrustLevel,
    UserMessage,
)
from contextwright.events.envelope import Event
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.relief.compactor import Compactor
from contextwright.relief.compactor import compact as default_compact
from contextwright.runtime.core import Resumed, SessionCore
from contextwright.runtime.memory_rules import withhold_erased
from contextwright.runtime.operations import moved_names
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import BuiltRequest, Requests, RoundPolicy
from contextwright.runtime.sending import Sender
from contextwright.runtime.session_parts import (
    SessionAdapter,
    SessionArtifacts,
    SessionHistory,
    SessionMemories,
    SessionSetup,
    SessionStages,
    SessionTools,
)
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.stages import Stages
from contextwright.runtime.streaming import AsyncRecordingStream, RecordingStream
from contextwright.runtime.tool_calls import ToolCalls
from contextwright.telemetry.records import SessionSummary, summarize

__all__ = ["MOVED", "AsyncSession", "BuiltRequest", "RoundPolicy", "Session", "SessionChildren", "session_secret"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Session:
    """One conversation with the engine: record what happens, ask for the next request."""

    def __init__(
        self,
        *,
        log: EventLog,
        session_id: str,
        agent: AgentSpec,
        model: ResolvedModel,
        clock: Clock,
        secret: bytes,
        estimator: TokenEstimator | None = None,
        budgets: BudgetConfig | None = None,
        memory: MemoryPort | None = None,
        recall: RecallPort | None = None,
        rounds: RoundPolicy | None = None,
        compactor: Compactor = default_compact,
        reuse_recall_by_revision: bool = False,
        engine_session: Callable[..., Session] | None = None,
        resumed: Resumed | None = None,
        count_prefix: Callable[..., Any] | None = None,
        checkpoint_every: int = 0,
    ) -> None:
        self._core = core = SessionCore(
            log=log,
            session_id=session_id,
            agent=agent,
            model=model,
            clock=clock,
            secret=secret,
            estimator=estimator if estimator is not None else HeuristicEstimator(),
            budgets=budgets or BudgetConfig(),
            memory=memory,
            recall=recall,
            # Opt-in: e.g. anthropic.Anthropic().messages.count_tokens, called once per epoch.
            prefix_counter=count_prefix,
            checkpoint_every=checkpoint_every,
        )
        self._engine_session = engine_session
        if resumed is not None:
            # The caller read the log and found the plan already: neither is done twice.
            core.adopt(resumed.history)
            pinned: ContextPlan | None = resumed.plan
        else:
            core.restore_checkpoint()
            core.sync()
            pinned = core.planner().current
        core.settle_setup()
        # The memory port is read once, at open, for the first plan; once a plan exists (whoever
        # pinned it) its prefix holds the snapshot.
        snapshot = tuple(memory.snapshot()) if memory is not None and pinned is None else ()
        self._tool_calls = ToolCalls(core)
        self._relief = Relief(core, compactor)
        self._requests = Requests(
            core,
            self._relief,
            rounds=rounds or RoundPolicy(),
            memory_snapshot=snapshot,
            reuse_recall_by_revision=reuse_recall_by_revision,
        )
        if pinned is None:
            # B3/P4: a prefix over its caps fails here, before the caller logs anything.
            self._requests.check_prefix_fits()
        self._sender = Sender(core, self._requests, self._tool_calls, self._relief)
        self._children = SessionChildren(Stages(core, self._tool_calls, self._open_child), engine_session)
        stages = self._children._stages
        self._setup = SessionSetup(core, self._requests, self._relief)
        self._history = SessionHistory(core, self._requests)
        self._tools = SessionTools(self._tool_calls)
        self._memories = SessionMemories(core)
        self._stages = SessionStages(stages)
        self._artifacts = SessionArtifacts(stages)
        self._adapter = SessionAdapter(core, self._tool_calls, self._requests, self._sender)

    def _open_child(self, session_id: str, **options: Any) -> Session:
        return self._children.engine_session(session_id, **options)

    # -- the session's concerns besides the loop (see runtime/session_parts.py) ----------

    @property
    def setup(self) -> SessionSetup:
        """Log, clock, secret, estimator, budgets, ports, rounds, compactor, the current plan; ``edit_prefix``."""
        return self._setup

    @property
    def history(self) -> SessionHistory:
        """The session's log read back: events, events after a seq, requests built, rebuilds."""
        return self._history

    @property
    def tools(self) -> SessionTools:
        """Revoke and restore the agent's tools."""
        return self._tools

    @property
    def memories(self) -> SessionMemories:
        """Write, correct and erase memory items."""
        return self._memories

    @property
    def stages(self) -> SessionStages:
        """Open and close stages (a closed stage becomes a decision point)."""
        return self._stages

    @property
    def artifacts(self) -> SessionArtifacts:
        """Declare artifacts stored whole and move their current step."""
        return self._artifacts

    @property
    def children(self) -> SessionChildren:
        """Child runs: start, escalate, finish; a supervisor's view."""
        return self._children

    @property
    def adapter(self) -> SessionAdapter:
        """Hooks for an integration that parses, sends or keeps bookkeeping itself."""
        return self._adapter

    if not TYPE_CHECKING:
        # The names in MOVED still answer at run time, with a warning; a type checker flags them.

        def __getattr__(self, name: str) -> Any:
            # Only reached when normal lookup fails: a name that moved to one of the objects above.
            return getattr(_moved_owner(self, name), MOVED[name].split(".")[1])

        def __setattr__(self, name: str, value: Any) -> None:
            if name in MOVED:
                setattr(_moved_owner(self, name), MOVED[name].split(".")[1], value)
                return
            object.__setattr__(self, name, value)

    # -- setup -------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self._core.id

    @property
    def agent(self) -> AgentSpec:
        """The agent's setup (region A)."""
        return self._core.agent

    @property
    def model(self) -> ResolvedModel:
        """The model; a different one (e.g. a larger window) starts a new epoch at the next request."""
        return self._core.model

    @model.setter
    def model(self, model: ResolvedModel) -> None:
        self._core.sync()
        self._core.model = model
        self._core.settle_setup()

    # -- reading the log ---------------------------------------------------------------

    def _sync(self) -> None:
        self._core.sync()

    @property
    def working_state(self) -> ws.WorkingState:
        """Constraints, tasks, facts, open questions and next action, as of now."""
        self._core.sync()
        return self._core.working_state()

    # -- recording what happens --------------------------------------------------------

    def user(self, text: str, *, steering: bool = False, author: str = "user") -> Event:
        """Record a user (or operator) message. ``steering`` marks a note given during a run."""
        if not isinstance(text, str) or not text.strip():
            raise UsageError("a user message needs some text")
        # The event registry checks the author on append (MalformedPayload names the allowed values).
        message = UserMessage(text=text, steering=steering, author=cast(Literal["user", "operator"], author))
        return self._core.append([message])[0]

    def close(self) -> Event:
        """End the session: established facts are offered as memory candidates (never written)."""
        state = self.working_state
        offered = tuple(f.text for f in state.facts if not f.tainted)
        # A fact the user had erased is not offered back to memory.
        offered, _ = withhold_erased(offered, self._core.erased_texts(self._requests.memory_snapshot))
        return self._core.append([MemoryCandidates(facts=offered, withheld=len(state.facts) - len(offered))])[0]

    # -- tool calls --------------------------------------------------------------------

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last model answer that still need a result from the caller."""
        return self._tool_calls.pending_tool_calls()

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        exit_code: int | None = None,
        is_error: bool | None = None,
        trust: TrustLevel = "tool",
    ) -> Event:
        """Record the output of a tool call the model made."""
        return self._tool_calls.tool_result(call_id, output, exit_code=exit_code, is_error=is_error, trust=trust)

    # -- building requests -------------------------------------------------------------

    def next_request(self) -> BuiltRequest:
        """Plan, frame the turn, build, relieve pressure if needed, validate, record; return the request.

        Recall is asked for on every request; a recall port that raises never stops one (see
        :meth:`contextwright.runtime.requests.Requests.next_request`)."""
        return self._requests.next_request()

    def _pin_plan(self) -> ContextPlan:
        return self._requests.pin_plan()

    def compact(self, *, trigger: CompactionTrigger = "manual") -> Event | None:
        """Fold history before the current run into a summary now (archive first; :class:`ArchiveFailed` changes nothing)."""
        return self._relief.compact(trigger=trigger)

    # -- talking to a provider ---------------------------------------------------------

    def record(self, response: Any) -> list[Event]:
        """Record a provider response (Anthropic message, chat completion or response, or their JSON) and its usage."""
        return self._sender.record(response)

    def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create`` (e.g. ``client.messages.create``), record the answer.

        A context-length error from the provider is caught once: the session is
        compacted (pruning first when there is nothing to fold), the request is
        rebuilt and sent again. A second context-length error raises
        :class:`OverflowNotRecovered`.
        """
        return self._sender.send(create, request, wire=wire, **extra)

    def stream(
        self, open_stream: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> RecordingStream:
        """Stream a model call: ``with session.stream(client.messages.stream) as stream:`` gives the SDK's own stream.

        The request is built when the block is entered (unless given); the final
        answer is recorded from the SDK's accumulator when the block exits
        normally, exactly as :meth:`record` records a non-streamed one. A block that
        raises, or a stream cut before its end, records no answer. An overflow
        reported when the stream opens is recovered once, as in :meth:`send`.
        """
        return self._sender.stream(open_stream, request, wire=wire, **extra)

    @property
    def aio(self) -> AsyncSession:
        """The async twin of this session (same log, same logic, I/O off the event loop)."""
        return AsyncSession(self)

    # -- looking back ------------------------------------------------------------------

    def stats(self) -> SessionSummary:
        """Telemetry of this session: requests, tokens, cache reads, cost, relief, epochs."""
        self._core.sync()
        return summarize(self._core.events)

    def inspect(self, request_index: int) -> NeutralRequest:
        """Exactly what the model saw on request ``request_index``, rebuilt and checked against its hash."""
        rebuilt, record = self._requests.rebuild(request_index)
        if rebuilt.sha256() != record.request_sha256:
            raise StorageCorrupted(
                f"session {self.id!r} request {request_index}: the rebuilt request hashes to {rebuilt.sha256()}, "
                f"but {record.request_sha256} was recorded",
                session_id=self.id,
                request_index=request_index,
            )
        return rebuilt


class SessionChildren:
    """``session.children``: child runs, each a session of its own on the same log; only its result comes back."""

    def __init__(self, stages: Stages[Session], open_session: Callable[..., Session] | None) -> None:
        self._stages = stages
        self._open_session = open_session

    def start(
        self,
        purpose: str,
        *,
        task: str,
        call_id: str | None = None,
        pointers: tuple[str, ...] = (),
        include_working_state: bool = True,
        agent: AgentSpec | None = None,
        model: ResolvedModel | None = None,
    ) -> Session:
        """Start a child run in its own session (own plan and epoch, same log), seeded from a slice of this one."""
        return self._stages.start_child(
            purpose,
            task=task,
            call_id=call_id,
            pointers=pointers,
            include_working_state=include_working_state,
            agent=agent,
            model=model,
        )

    def escalate(self, *, call_id: str | None = None) -> Session:
        """Continue in a child run when compaction reached its depth cap (seeded with pointers to every archive)."""
        return self._stages.escalate(call_id=call_id)

    def finish(self, child: Session, result: str) -> list[Event]:
        """End a child run: only its final result returns, as the answer to the call that started it."""
        return self._stages.finish_child(child, result)

    def router_view(self) -> str:
        """A supervisor's context, rebuilt from the latest compressed-session snapshot (L2), not from the execution history."""
        return self._stages.router_view()

    def engine_session(self, session_id: str, **options: Any) -> Session:
        """Open another session on the same engine (what a child run is opened with)."""
        if self._open_session is None:
            raise UsageError("this session was not opened through an Engine, so it cannot start child runs")
        return self._open_session(session_id, **options)


MOVED: Final[Mapping[str, str]] = moved_names("local")
"""Session members that moved to one of its parts, old name to new spelling (``"revoke_tool": "tools.revoke"``).

The old names keep working for one release, with a :class:`DeprecationWarning` naming the new spelling."""


def _moved_owner(session: Session, name: str) -> Any:
    """The part of ``session`` that carries the moved member ``name``, after warning that it moved."""
    new = MOVED.get(name)
    if new is None:
        raise AttributeError(f"{type(session).__name__!r} object has no attribute {name!r}")
    warnings.warn(f"Session.{name} is deprecated: use session.{new}", DeprecationWarning, stacklevel=3)
    return object.__getattribute__(session, "_" + new.split(".")[0])


def _in_thread(
    method: Callable[Concatenate[Session, _P], _R],
) -> Callable[Concatenate[AsyncSession, _P], Coroutine[Any, Any, _R]]:
    """The async twin of a :class:`Session` method: the sync one run in a worker thread, with its
    parameters and result (so the two forms cannot drift apart; ``runtime/operations.py`` lists them)."""

    @functools.wraps(method)
    async def in_thread(self: AsyncSession, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await to_thread(method, self.sync, *args, **kwargs)

    in_thread.__doc__ = f"Async :meth:`Session.{method.__name__}`."
    return in_thread


class AsyncSession:
    """Async twin of :class:`Session`: every method runs the sync one in a worker thread,
    except :meth:`send` and :meth:`stream`, which await the async SDK call themselves."""

    def __init__(self, session: Session) -> None:
        self.sync = session

    user = _in_thread(Session.user)
    next_request = _in_thread(Session.next_request)
    record = _in_thread(Session.record)
    tool_result = _in_thread(Session.tool_result)
    pending_tool_calls = _in_thread(Session.pending_tool_calls)
    compact = _in_thread(Session.compact)

    async def send(
        self,
        create: Callable[..., Awaitable[Any]],
        request: BuiltRequest | None = None,
        *,
        wire: str | None = None,
        **extra: Any,
    ) -> Any:
        """Async :meth:`Session.send`: ``create`` is an async SDK method such as ``AsyncAnthropic().messages.create``."""
        return await self.sync._sender.send_async(create, request, wire=wire, in_thread=to_thread, **extra)

    def stream(
        self, open_stream: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> AsyncRecordingStream:
        """Async :meth:`Session.stream`: ``async with session.aio.stream(aclient.messages.stream) as stream:``."""
        return self.sync._sender.stream_async(open_stream, request, wire=wire, **extra)


def session_secret(store_secret: bytes, session_id: str) -> bytes:
    """The per-session envelope secret, derived from the store's secret."""
    return hmac.new(store_secret, f"session:{session_id}".encode(), hashlib.sha256).digest()
