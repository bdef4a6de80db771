"""A session: the one object an agent loop holds.

The session is the only place that does I/O for a conversation. It owns the
session's position in the log (:class:`~contextwright.runtime.core.SessionCore`)
and coordinates small collaborators, each with one concern: tool calls
(:mod:`~contextwright.runtime.tool_calls`), pressure relief
(:mod:`~contextwright.runtime.relief`), request building
(:mod:`~contextwright.runtime.requests`), sending and streaming
(:mod:`~contextwright.runtime.sending`) and stages with child runs
(:mod:`~contextwright.runtime.stages`).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, cast

from contextwright._threads import to_thread
from contextwright.assembly.request import NeutralRequest
from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator
from contextwright.clock import Clock
from contextwright.derive import _working_state as ws
from contextwright.errors import StorageCorrupted, UsageError
from contextwright.events.catalog import (
    AssistantMessage,
    CompactionTrigger,
    MemoryCandidates,
    MemoryCorrected,
    MemoryErased,
    MemoryWritten,
    RequestBuilt,
    ToolCall,
    TrustLevel,
    UserMessage,
)
from contextwright.events.envelope import Event
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.planner import PlanDecision
from contextwright.providers.usage import Usage
from contextwright.relief.compactor import Compactor
from contextwright.relief.compactor import compact as default_compact
from contextwright.runtime.core import Resumed, SessionCore
from contextwright.runtime.memory_rules import withhold_erased
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import BuiltRequest, Requests, RoundPolicy
from contextwright.runtime.sending import Sender
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.stages import Stages
from contextwright.runtime.streaming import AsyncRecordingStream, RecordingStream
from contextwright.runtime.tool_calls import ToolCalls
from contextwright.telemetry.records import SessionSummary, summarize

__all__ = ["AsyncSession", "BuiltRequest", "RoundPolicy", "Session", "session_secret"]

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
        self._stages: Stages[Session] = Stages(core, self._tool_calls, self.engine_session)

    # -- setup -------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The session id."""
        return self._core.id

    @property
    def log(self) -> EventLog:
        """The event log the session reads and appends to."""
        return self._core.log

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

    @property
    def clock(self) -> Clock:
        """The clock that stamps frames and recall reads."""
        return self._core.clock

    @property
    def secret(self) -> bytes:
        """The per-session envelope secret."""
        return self._core.secret

    @property
    def estimator(self) -> TokenEstimator:
        """The token estimator."""
        return self._core.estimator

    @property
    def budgets(self) -> BudgetConfig:
        """The budgets a new plan is made with."""
        return self._core.budgets

    @budgets.setter
    def budgets(self, budgets: BudgetConfig) -> None:
        self._core.budgets = budgets

    @property
    def memory(self) -> MemoryPort | None:
        """The memory port (read once, at open)."""
        return self._core.memory

    @property
    def recall(self) -> RecallPort | None:
        """The recall port (read on every assembly)."""
        return self._core.recall

    @property
    def rounds(self) -> RoundPolicy:
        """Round governance."""
        return self._requests.rounds

    @property
    def compactor(self) -> Compactor:
        """The compactor relief and :meth:`compact` use (a plugged one's proposals are checked; see :meth:`Engine.session`)."""
        return self._relief.plugged

    @compactor.setter
    def compactor(self, compactor: Compactor) -> None:
        self._relief.plugged = compactor

    def adopt_agent(self, agent: AgentSpec) -> None:
        """Take ``agent`` as the session's setup without an edit: for an adapter whose caller sends the
        prefix on every call, once that prefix is the one the session's plan holds (no new epoch)."""
        self._core.agent = agent

    def engine_session(self, session_id: str, **options: Any) -> Session:
        """Open another session on the same engine (used for child runs)."""
        if self._engine_session is None:
            raise UsageError("this session was not opened through an Engine, so it cannot start child runs")
        return self._engine_session(session_id, **options)

    # -- reading the log ---------------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        """All events of the session, in order (a copy)."""
        self._core.sync()
        return list(self._core.events)

    def events_after(self, seq: int) -> list[Event]:
        """The session's events after ``seq``, in order (a copy; only those are read from the log)."""
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise UsageError(f"seq must be an integer >= 0, got {seq!r}")
        self._core.sync()
        return list(self._core.read_after(seq))

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event read."""
        return self._core.last_seq

    @property
    def requests_built(self) -> int:
        """How many requests were recorded so far."""
        self._core.sync()
        return self._core.facts().requests_built

    @property
    def last_request(self) -> RequestBuilt | None:
        """The record of the last request built (None before the first)."""
        self._core.sync()
        return self._core.facts().last_built

    def _sync(self) -> None:
        self._core.sync()

    @property
    def plan(self) -> ContextPlan | None:
        """The current plan (None before the first request)."""
        self._core.sync()
        return self._core.planner().current

    @property
    def working_state(self) -> ws.WorkingState:
        """Constraints, tasks, facts, open questions and next action, as of now."""
        self._core.sync()
        return self._core.working_state()

    @property
    def has_history(self) -> bool:
        """True once the session's surface shows anything (a system note after that is an operator's message)."""
        self._core.sync()
        return bool(self._core.surface().entries)

    # -- recording what happens --------------------------------------------------------

    def user(self, text: str, *, steering: bool = False, author: str = "user") -> Event:
        """Record a user (or operator) message. ``steering`` marks a note given during a run."""
        if not isinstance(text, str) or not text.strip():
            raise UsageError("a user message needs some text")
        # The event registry checks the author on append (MalformedPayload names the allowed values).
        message = UserMessage(text=text, steering=steering, author=cast(Literal["user", "operator"], author))
        return self._core.append([message])[0]

    def remember(self, memory_id: str, text: str) -> Event:
        """Write a memory item (to the memory port when it accepts writes); the prefix is untouched."""
        write = getattr(self.memory, "write", None)
        if write is not None:
            write(memory_id, text)
        return self._core.append([MemoryWritten(memory_id=memory_id, text=text)])[0]

    def correct_memory(self, memory_id: str, text: str) -> Event:
        """Correct a memory item; evidence already shown gets a correction line."""
        write = getattr(self.memory, "write", None)
        if write is not None:
            write(memory_id, text)
        return self._core.append([MemoryCorrected(memory_id=memory_id, text=text)])[0]

    def forget(self, memory_id: str, *, reason: str = "") -> Event:
        """Erase a memory item; evidence already shown is removed from the surface."""
        erase = getattr(self.memory, "erase", None)
        if erase is not None:
            erase(memory_id)
        return self._core.append([MemoryErased(memory_id=memory_id, reason=reason)])[0]

    def close(self) -> Event:
        """End the session: established facts are offered as memory candidates (never written)."""
        state = self.working_state
        offered = tuple(f.text for f in state.facts if not f.tainted)
        # A fact the user had erased is not offered back to memory.
        offered, _ = withhold_erased(offered, self._core.erased_texts(self._requests.memory_snapshot))
        return self._core.append([MemoryCandidates(facts=offered, withheld=len(state.facts) - len(offered))])[0]

    def append(self, payloads: Sequence[Any]) -> list[Event]:
        """Append events of the caller's own (an adapter's bookkeeping) after the log's tail; payloads are validated."""
        return self._core.append(payloads)

    # -- tool calls --------------------------------------------------------------------

    def record_assistant(self, message: AssistantMessage) -> list[Event]:
        """Record the model's answer; control-tool calls and calls to revoked tools are answered here."""
        return self._tool_calls.record_assistant(message)

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

    def revoke_tool(self, name: str, *, reason: str = "") -> Event:
        """Stop a tool from being called; it stays in the prefix and calls are denied."""
        return self._tool_calls.revoke_tool(name, reason=reason)

    def restore_tool(self, name: str) -> Event:
        """Allow a revoked tool again."""
        return self._tool_calls.restore_tool(name)

    def edit_prefix(self, agent: AgentSpec, *, note: str) -> ContextPlan | None:
        """Change the agent's prefix (policy, instructions, tools) on purpose: a new epoch, recorded with ``note``.

        Before the first request there is no epoch yet: the new agent is checked against the
        caps and pinned by the first request. Returns the new plan, or None in that case.
        """
        if not note.strip():
            raise UsageError("say why the prefix changes (note=...): it is recorded with the new epoch")
        self._core.sync()
        return self._requests.edit_prefix(agent, note=note)

    def force_revoke_tool(self, name: str) -> PlanDecision:
        """Operator-forced immediate revocation: the tool leaves the prefix and a new epoch starts."""
        return self._tool_calls.force_revoke_tool(name)

    # -- building requests -------------------------------------------------------------

    def next_request(self) -> BuiltRequest:
        """Plan, frame the turn, build, relieve pressure if needed, validate, record; return the request.

        Recall is asked for on every request; a recall port that raises never stops one (see
        :meth:`contextwright.runtime.requests.Requests.next_request`)."""
        return self._requests.next_request()

    def _pin_plan(self) -> ContextPlan:
        return self._requests.pin_plan()

    @property
    def awaiting_model(self) -> bool:
        """True when a request can be built now: something to answer and no tool call waiting for its result."""
        return self._requests.awaiting_model()

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

    def record_usage(self, usage: Usage, *, model: str | None = None) -> list[Event]:
        """Record usage an adapter parsed already against the last request built (and tune the estimator), as :meth:`record` does."""
        return self._sender._record_usage(usage, model=model)

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Translate an error from sending ``request``: on a first overflow relieve once and return the rebuilt
        request to send again, as :meth:`send` does; otherwise raise the translated error."""
        return self._sender.after_send_error(exc, request, attempt)

    @property
    def aio(self) -> AsyncSession:
        """The async twin of this session (same log, same logic, I/O off the event loop)."""
        return AsyncSession(self)

    # -- stages, artifacts, child runs -------------------------------------------------

    def open_stage(self, name: str, *, goal: str) -> str:
        """Begin a stage with a declared goal; returns its id. Only one stage is open at a time."""
        return self._stages.open_stage(name, goal=goal)

    def close_stage(self, *, outcome: str, rationale: str = "") -> Event:
        """Close the open stage: record its outcome and its decision point (which replaces the stage in context)."""
        return self._stages.close_stage(outcome=outcome, rationale=rationale)

    def declare_artifact(
        self,
        artifact_id: str,
        *,
        title: str,
        content: str,
        summary: str,
        steps: tuple[str, ...] | list[str] = (),
        current_step: int = 0,
    ) -> Event:
        """Store an artifact whole (a plan, a checklist); a new version replaces the old one in context."""
        return self._stages.declare_artifact(
            artifact_id, title=title, content=content, summary=summary, steps=steps, current_step=current_step
        )

    def advance_artifact(self, artifact_id: str, step: int) -> Event:
        """Move a chunked artifact's current step (0-based)."""
        return self._stages.advance_artifact(artifact_id, step)

    def start_child(
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

    def finish_child(self, child: Session, result: str) -> list[Event]:
        """End a child run: only its final result returns, as the answer to the call that started it."""
        return self._stages.finish_child(child, result)

    def router_view(self) -> str:
        """A supervisor's context, rebuilt from the latest compressed-session snapshot (L2), not from the execution history."""
        return self._stages.router_view()

    # -- looking back ------------------------------------------------------------------

    def stats(self) -> SessionSummary:
        """Telemetry of this session: requests, tokens, cache reads, cost, relief, epochs."""
        self._core.sync()
        return summarize(self._core.events)

    def rebuild(self, request_index: int) -> tuple[NeutralRequest, RequestBuilt]:
        """Rebuild request ``request_index`` from the log alone, byte for byte."""
        return self._requests.rebuild(request_index)

    def inspect(self, request_index: int) -> NeutralRequest:
        """Exactly what the model saw on request ``request_index``, rebuilt and checked against its hash."""
        rebuilt, record = self.rebuild(request_index)
        if rebuilt.sha256() != record.request_sha256:
            raise StorageCorrupted(
                f"session {self.id!r} request {request_index}: the rebuilt request hashes to {rebuilt.sha256()}, "
                f"but {record.request_sha256} was recorded",
                session_id=self.id,
                request_index=request_index,
            )
        return rebuilt


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
