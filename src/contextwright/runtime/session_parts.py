"""The session's concerns besides the agent loop, each a small object reached from the session.

:class:`~contextwright.runtime.session.Session` keeps the loop a caller writes every day
(``user``, ``next_request``, ``send``, ``stream``, ``record``, ``pending_tool_calls``,
``tool_result``, ``working_state``, ``compact``, ``stats``, ``inspect``, ``close``); the
rest is grouped by concern:

================  ======================================================================
``setup``         the session's setup: log, clock, secret, estimator, budgets, ports,
                  rounds, compactor, the current plan, and ``edit_prefix``
``history``       reading the log back: events, the events after a seq, last seq,
                  requests built, the last request, and rebuilding one
``tools``         revoking and restoring tools
``memories``      writing, correcting and erasing memory items
``stages``        opening and closing stages (each closed stage becomes a decision point)
``artifacts``     declaring whole artifacts and moving their current step
``children``      child runs: start, escalate, finish, and a supervisor's view
                  (:class:`~contextwright.runtime.session.SessionChildren`, whose runs are sessions)
``adapter``       what an integration needs besides the loop: its own events, an answer
                  or usage it parsed itself, send-error translation, the agent it adopts
================  ======================================================================

Each object holds no state of its own: it calls the session's collaborators, so
``session.tools.revoke(...)`` is the same operation ``session.revoke_tool(...)`` was.
``runtime/operations.py`` records which object carries each operation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextwright.assembly.request import NeutralRequest
from contextwright.budget.estimator import TokenEstimator
from contextwright.clock import Clock
from contextwright.errors import UsageError
from contextwright.events.catalog import AssistantMessage, MemoryCorrected, MemoryErased, MemoryWritten, RequestBuilt
from contextwright.events.envelope import Event
from contextwright.log.base import EventLog
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.planner import PlanDecision
from contextwright.providers.usage import Usage
from contextwright.relief.compactor import Compactor
from contextwright.runtime.core import SessionCore
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.relief import Relief
from contextwright.runtime.requests import BuiltRequest, Requests, RoundPolicy
from contextwright.runtime.sending import Sender
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.stages import Stages
from contextwright.runtime.tool_calls import ToolCalls

__all__ = [
    "SessionAdapter",
    "SessionArtifacts",
    "SessionHistory",
    "SessionMemories",
    "SessionSetup",
    "SessionStages",
    "SessionTools",
]


class SessionSetup:
    """``session.setup``: what the session was opened with, and the prefix it pins."""

    def __init__(self, core: SessionCore, requests: Requests, relief: Relief) -> None:
        self._core = core
        self._requests = requests
        self._relief = relief

    @property
    def log(self) -> EventLog:
        """The event log the session reads and appends to."""
        return self._core.log

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
        """The compactor relief and :meth:`Session.compact` use (a plugged one's proposals are checked; see :meth:`Engine.session`)."""
        return self._relief.plugged

    @compactor.setter
    def compactor(self, compactor: Compactor) -> None:
        self._relief.plugged = compactor

    @property
    def plan(self) -> ContextPlan | None:
        """The current plan (None before the first request)."""
        self._core.sync()
        return self._core.planner().current

    def edit_prefix(self, agent: AgentSpec, *, note: str) -> ContextPlan | None:
        """Change the agent's prefix (policy, instructions, tools) on purpose: a new epoch, recorded with ``note``.

        Before the first request there is no epoch yet: the new agent is checked against the
        caps and pinned by the first request. Returns the new plan, or None in that case.
        """
        if not note.strip():
            raise UsageError("say why the prefix changes (note=...): it is recorded with the new epoch")
        self._core.sync()
        return self._requests.edit_prefix(agent, note=note)


class SessionHistory:
    """``session.history``: the session's log, read back."""

    def __init__(self, core: SessionCore, requests: Requests) -> None:
        self._core = core
        self._requests = requests

    @property
    def events(self) -> list[Event]:
        """All events of the session, in order (a copy)."""
        self._core.sync()
        return list(self._core.events)

    def after(self, seq: int) -> list[Event]:
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

    def rebuild(self, request_index: int) -> tuple[NeutralRequest, RequestBuilt]:
        """Rebuild request ``request_index`` from the log alone, byte for byte (:meth:`Session.inspect` checks its hash)."""
        return self._requests.rebuild(request_index)


class SessionTools:
    """``session.tools``: which of the agent's tools the model may call."""

    def __init__(self, tool_calls: ToolCalls) -> None:
        self._tool_calls = tool_calls

    def revoke(self, name: str, *, reason: str = "") -> Event:
        """Stop a tool from being called; it stays in the prefix and calls are denied."""
        return self._tool_calls.revoke_tool(name, reason=reason)

    def restore(self, name: str) -> Event:
        """Allow a revoked tool again."""
        return self._tool_calls.restore_tool(name)

    def force_revoke(self, name: str) -> PlanDecision:
        """Operator-forced immediate revocation: the tool leaves the prefix and a new epoch starts."""
        return self._tool_calls.force_revoke_tool(name)


class SessionMemories:
    """``session.memories``: memory items written, corrected and erased during the session.

    Each is recorded in the log and passed on to the memory port when it accepts writes
    (``write``, ``erase``); the prefix is untouched until an erasure needs a new epoch."""

    def __init__(self, core: SessionCore) -> None:
        self._core = core

    def remember(self, memory_id: str, text: str) -> Event:
        """Write a memory item (to the memory port when it accepts writes); the prefix is untouched."""
        write = getattr(self._core.memory, "write", None)
        if write is not None:
            write(memory_id, text)
        return self._core.append([MemoryWritten(memory_id=memory_id, text=text)])[0]

    def correct(self, memory_id: str, text: str) -> Event:
        """Correct a memory item; evidence already shown gets a correction line."""
        write = getattr(self._core.memory, "write", None)
        if write is not None:
            write(memory_id, text)
        return self._core.append([MemoryCorrected(memory_id=memory_id, text=text)])[0]

    def forget(self, memory_id: str, *, reason: str = "") -> Event:
        """Erase a memory item; evidence already shown is removed from the surface."""
        erase = getattr(self._core.memory, "erase", None)
        if erase is not None:
            erase(memory_id)
        return self._core.append([MemoryErased(memory_id=memory_id, reason=reason)])[0]


class SessionStages:
    """``session.stages``: one stage open at a time; a closed stage is replaced in context by its decision point."""

    def __init__(self, stages: Stages[Any]) -> None:
        self._stages = stages

    def open(self, name: str, *, goal: str) -> str:
        """Begin a stage with a declared goal; returns its id. Only one stage is open at a time."""
        return self._stages.open_stage(name, goal=goal)

    def close(self, *, outcome: str, rationale: str = "") -> Event:
        """Close the open stage: record its outcome and its decision point (which replaces the stage in context)."""
        return self._stages.close_stage(outcome=outcome, rationale=rationale)


class SessionArtifacts:
    """``session.artifacts``: texts stored whole (a plan, a checklist), shown by their latest version."""

    def __init__(self, stages: Stages[Any]) -> None:
        self._stages = stages

    def declare(
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

    def advance(self, artifact_id: str, step: int) -> Event:
        """Move a chunked artifact's current step (0-based)."""
        return self._stages.advance_artifact(artifact_id, step)


class SessionAdapter:
    """``session.adapter``: the hooks an integration uses when it drives the loop itself.

    A framework adapter that parses the model's answer or its usage on its own, sends
    through its own client, or keeps its own bookkeeping in the log, records through
    these; an agent loop written by hand does not need them."""

    def __init__(self, core: SessionCore, tool_calls: ToolCalls, requests: Requests, sender: Sender) -> None:
        self._core = core
        self._tool_calls = tool_calls
        self._requests = requests
        self._sender = sender

    def append(self, payloads: Sequence[Any]) -> list[Event]:
        """Append events of the caller's own (an adapter's bookkeeping) after the log's tail; payloads are validated."""
        return self._core.append(payloads)

    def record_assistant(self, message: AssistantMessage) -> list[Event]:
        """Record the model's answer as parsed already; control-tool calls and calls to revoked tools are answered here."""
        return self._tool_calls.record_assistant(message)

    def record_usage(self, usage: Usage, *, model: str | None = None) -> list[Event]:
        """Record usage parsed already against the last request built (and tune the estimator), as :meth:`Session.record` does."""
        return self._sender._record_usage(usage, model=model)

    def after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Translate an error from sending ``request``: on a first overflow relieve once and return the rebuilt
        request to send again, as :meth:`Session.send` does; otherwise raise the translated error."""
        return self._sender.after_send_error(exc, request, attempt)

    def adopt_agent(self, agent: AgentSpec) -> None:
        """Take ``agent`` as the session's setup without an edit: for an adapter whose caller sends the
        prefix on every call, once that prefix is the one the session's plan holds (no new epoch)."""
        self._core.agent = agent

    @property
    def has_history(self) -> bool:
        """True once the session's surface shows anything (a system note after that is an operator's message)."""
        self._core.sync()
        return bool(self._core.surface().entries)

    @property
    def awaiting_model(self) -> bool:
        """True when a request can be built now: something to answer and no tool call waiting for its result."""
        return self._requests.awaiting_model()
