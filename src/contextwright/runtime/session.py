"""A session: the one object an agent loop holds.

The session is the only place that does I/O for a conversation: it appends to
the log, reads the clock, reads memory and recall through their ports, and
calls the pure parts (planner, allocator, surface fold, builder, validator,
compactor) in a fixed order. It keeps a cache of the session's events but
re-reads the log's tail before every operation, so two workers can serve one
session without in-process state deciding anything.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.budget.allocator import allocate
from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator, prefix_estimator
from contextwright.assembly.assemble import (
    BuildResult,
    Correction,
    VolatileTail,
    build,
)
from contextwright.assembly.request import NeutralRequest
from contextwright.assembly.validate import validate
from contextwright.clock import Clock
from contextwright.derive import working_state as ws
from contextwright.derive.surface import AssistantReply, Surface, UserTurn, fold
from contextwright.errors import (
    SeqConflict,
    StorageCorrupted,
    UsageError,
)
from contextwright.events.catalog import (
    Evidence,
    FrameRecorded,
    MemoryCandidates,
    MemoryCorrected,
    MemoryErased,
    MemoryWritten,
    RequestBuilt,
    UserMessage,
)
from contextwright.events.envelope import Event
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.plan.planner import ContextPlanner
from contextwright.pressure.compactor import compact as default_compact
from contextwright.runtime.errors import (
    NothingToSend,
    RoundLimitExceeded,
)
from contextwright.runtime.limits import ENVELOPE_TOKENS, FORCED_REVOCATION
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.relief import ReliefMixin
from contextwright.runtime.sending import SendingMixin
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.stages import StagesMixin
from contextwright.runtime.tool_calls import ToolCallsMixin


@dataclass(frozen=True, kw_only=True, slots=True)
class RoundPolicy:
    """Round governance: a re-grounding nudge after ``nudge_after`` rounds, a hard stop at ``hard_cap``."""

    nudge_after: int = 25
    hard_cap: int = 200
    nudge_text: str = (
        "You have been working on this request for many rounds. Re-read the user's request, your "
        "constraints and your task list, then continue with the next concrete step or report back."
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class BuiltRequest:
    """A built, validated, recorded request, ready to render for a provider."""

    index: int
    neutral: NeutralRequest
    result: BuildResult
    plan: ContextPlan
    event: Event

    previous: NeutralRequest | None = None
    """The request built before this one in the same epoch, for cache-marker placement."""

    @property
    def prefix_sha256(self) -> str:
        """The prefix hash recorded for this request."""
        return self.neutral.prefix_sha256

    def render(self, wire: str, *, prefix_ttl: str = "5m") -> dict[str, Any]:
        """Keyword arguments for the SDK call of ``wire`` (see :data:`contextwright.providers.wires.WIRES`)."""
        from contextwright.providers.capabilities import capabilities_for
        from contextwright.providers.wires import wire_named

        return wire_named(wire).render(
            self.neutral, capabilities_for(self.plan.model), previous=self.previous, prefix_ttl=prefix_ttl
        )

    def anthropic(self, *, prefix_ttl: str = "5m") -> dict[str, Any]:
        """Keyword arguments for ``anthropic.Anthropic().messages.create``."""
        return self.render("anthropic", prefix_ttl=prefix_ttl)

    def openai_chat(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().chat.completions.create``."""
        return self.render("openai_chat")

    def openai_responses(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().responses.create``."""
        return self.render("openai_responses")

    def body(self, wire: str | None = None) -> dict[str, Any]:
        """The body for ``wire`` ("anthropic", "openai_chat", "openai_responses"); the plan's provider by default."""
        return self.render(wire or ("anthropic" if self.plan.model.provider == "anthropic" else "openai_chat"))


class Session(StagesMixin, ToolCallsMixin, ReliefMixin, SendingMixin):
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
        compactor: Callable[..., Any] = default_compact,
        reuse_recall_by_revision: bool = False,
        engine_session: Callable[..., Session] | None = None,
    ) -> None:
        self.log = log
        self._engine_session = engine_session
        self.id = session_id
        self.agent = agent
        self.model = model
        self.clock = clock
        self.secret = secret
        self.estimator = estimator or HeuristicEstimator()
        self.budgets = budgets or BudgetConfig()
        self.memory = memory
        self.recall = recall
        self.rounds = rounds or RoundPolicy()
        self.compactor = compactor
        # Opt-in only: reuse the previous fresh read while the port's revision() is unchanged.
        self.reuse_recall_by_revision = reuse_recall_by_revision and hasattr(recall, "revision")
        self._recall_cache: tuple[str, tuple[str, ...], Any] | None = None
        self._events: list[Event] = []
        self._surface_cache: tuple[int, Surface] | None = None
        self._sync()
        planner = self._planner()
        # The memory snapshot is read once, at open; a resumed session keeps the pinned one.
        if planner.current is not None:
            self._memory_snapshot = planner.current.prefix.memory.facts
        else:
            self._memory_snapshot = tuple(memory.snapshot()) if memory is not None else ()

    def engine_session(self, session_id: str, **options: Any) -> Session:
        """Open another session on the same engine (used for child runs)."""
        if self._engine_session is None:
            raise UsageError("this session was not opened through an Engine, so it cannot start child runs")
        return self._engine_session(session_id, **options)

    # -- reading the log ---------------------------------------------------------

    @property
    def events(self) -> list[Event]:
        """All events of the session, in order (a copy)."""
        self._sync()
        return list(self._events)

    @property
    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else 0

    def _sync(self) -> None:
        self._events.extend(self.log.read(self.id, after_seq=self.last_seq))

    def _surface(self) -> Surface:
        """The surface of the events read so far, folded once per new event (the log only grows)."""
        cached = self._surface_cache
        if cached is None or cached[0] != self.last_seq:
            cached = self._surface_cache = (self.last_seq, fold(self.id, self._events))
        return cached[1]

    def _append(self, payloads: Sequence[Any]) -> list[Event]:
        self._sync()
        try:
            stored = self.log.append(self.id, list(payloads), expected_seq=self.last_seq)
        except SeqConflict:
            self._sync()
            raise
        self._events.extend(e for e in stored if e.seq > self.last_seq)
        return stored

    def _planner(self) -> ContextPlanner:
        return ContextPlanner.from_events(
            self.id,
            self._events,
            estimator=prefix_estimator(self.model.id, fallback=self.estimator),
            secret=self.secret,
            budgets=self.budgets,
        )

    @property
    def plan(self) -> ContextPlan | None:
        """The current plan (None before the first request)."""
        self._sync()
        return self._planner().current

    @property
    def working_state(self) -> ws.WorkingState:
        """Constraints, tasks, facts, open questions and next action, as of now."""
        self._sync()
        return ws.state_at(self._events)

    # -- recording what happens ----------------------------------------------------

    def user(self, text: str, *, steering: bool = False, author: str = "user") -> Event:
        """Record a user (or operator) message. ``steering`` marks a note given during a run."""
        if not isinstance(text, str) or not text.strip():
            raise UsageError("a user message needs some text")
        return self._append([UserMessage(text=text, steering=steering, author=author)])[0]  # type: ignore[arg-type]

    def remember(self, memory_id: str, text: str) -> Event:
        """Write a memory item (to the memory port when it accepts writes); the prefix is untouched."""
        if self.memory is not None and hasattr(self.memory, "write"):
            self.memory.write(memory_id, text)  # type: ignore[attr-defined]
        return self._append([MemoryWritten(memory_id=memory_id, text=text)])[0]

    def correct_memory(self, memory_id: str, text: str) -> Event:
        """Correct a memory item; evidence already shown gets a correction line."""
        if self.memory is not None and hasattr(self.memory, "write"):
            self.memory.write(memory_id, text)  # type: ignore[attr-defined]
        return self._append([MemoryCorrected(memory_id=memory_id, text=text)])[0]

    def forget(self, memory_id: str, *, reason: str = "") -> Event:
        """Erase a memory item; evidence already shown is removed from the surface."""
        if self.memory is not None and hasattr(self.memory, "erase"):
            self.memory.erase(memory_id)  # type: ignore[attr-defined]
        return self._append([MemoryErased(memory_id=memory_id, reason=reason)])[0]

    def close(self) -> Event:
        """End the session: established facts are offered as memory candidates (never written)."""
        state = self.working_state
        offered = tuple(f.text for f in state.facts if not f.tainted)
        return self._append([MemoryCandidates(facts=offered, withheld=len(state.facts) - len(offered))])[0]

    # -- building requests ---------------------------------------------------------

    def next_request(self) -> BuiltRequest:
        """Plan, frame the turn, build, relieve pressure if needed, validate, record; return the request."""
        self._sync()
        surface = self._surface()
        if surface.open_exchange is not None:
            raise UsageError(f"tool calls {', '.join(surface.open_exchange.missing)} still need results")
        self._check_something_to_answer(surface)
        plan = self._pin_plan()
        allocation = allocate(plan)
        self._frame_current_turn(surface)
        surface = self._surface()
        tail = self._tail(surface)
        result = self._build_with_relief(plan, allocation, tail)
        surface = self._surface()
        validate(result.request, plan)
        payload = RequestBuilt(
            epoch=plan.epoch,
            request_index=surface.requests_built,
            prefix_sha256=result.request.prefix_sha256,
            request_sha256=result.request.sha256(),
            provider=plan.model.provider,
            total_tokens=result.total_tokens,
            tokens_by_class=result.tokens_by_class,
            tokens_by_layer=result.tokens_by_layer,
            yields=result.yields,
            pressure=result.pressure,
            dedupe_hits=result.dedupe_hits,
            inputs={"upto_seq": result.upto_seq, "tail": tail.to_dict(), "yields": list(result.yields)},
        )
        previous = self._previous_request(plan.epoch)
        [event] = self._append([payload])
        self._last_built = (plan.epoch, payload.request_index, result.request)
        return BuiltRequest(
            index=payload.request_index, neutral=result.request, result=result, plan=plan, event=event, previous=previous
        )

    def _previous_request(self, epoch: int) -> NeutralRequest | None:
        """The last request built in ``epoch`` (from memory, or rebuilt from the log)."""
        built = [e.payload for e in self._events if e.type == "context.request.built"]
        if not built or built[-1].epoch != epoch:
            return None
        cached = getattr(self, "_last_built", None)
        if cached is not None and cached[:2] == (epoch, built[-1].request_index):
            return cached[2]
        return self.rebuild(built[-1].request_index)[0]

    # -- looking back ---------------------------------------------------------------

    def stats(self) -> Any:
        """Telemetry of this session: requests, tokens, cache reads, cost, relief, epochs."""
        from contextwright.telemetry.records import summarize

        self._sync()
        return summarize(self._events)

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

    # -- talking to a provider ------------------------------------------------------

    def rebuild(self, request_index: int) -> tuple[NeutralRequest, RequestBuilt]:
        """Rebuild request ``request_index`` from the log alone, byte for byte."""
        self._sync()
        built = [e for e in self._events if e.type == "context.request.built"]
        if not 0 <= request_index < len(built):
            raise UsageError(f"session {self.id!r} has {len(built)} recorded requests; there is no request {request_index}")
        record: RequestBuilt = built[request_index].payload
        inputs = record.inputs or {}
        upto = inputs["upto_seq"]
        history = [e for e in self._events if e.seq <= upto]
        planner = ContextPlanner.from_events(self.id, history, estimator=self.estimator, secret=self.secret)
        plan = planner.current
        assert plan is not None
        result = build(
            plan=plan,
            allocation=allocate(plan),
            surface=fold(self.id, history),
            tail=VolatileTail.from_dict(inputs["tail"]),
            secret=self.secret,
            estimate=self._body_estimate(plan),
            yields=tuple(inputs["yields"]),
        )
        return result.request, record

    # -- internals ---------------------------------------------------------------------

    def _count(self, text: str) -> int:
        return self.estimator.estimate(text, model=self.model.id)

    def _body_estimate(self, plan: ContextPlan) -> Callable[[str], int]:
        model_id = plan.model.id
        return lambda text: self.estimator.estimate(text, model=model_id)

    @property
    def awaiting_model(self) -> bool:
        """True when a request can be built now: something to answer and no tool call waiting for its result."""
        self._sync()
        surface = self._surface()
        return surface.open_exchange is None and _answerable(surface)

    def _check_something_to_answer(self, surface: Surface) -> None:
        if not _answerable(surface):
            raise NothingToSend(
                f"session {self.id!r}: the last message is the model's own answer; record a user message first",
                session_id=self.id,
            )

    def _pin_plan(self) -> ContextPlan:
        planner = self._planner()
        prefix = self.agent.prefix(self._memory_snapshot)
        # Tools an operator removed at once left the prefix in a new epoch; keep them out.
        for event in self._events:
            if event.type == "tool.revoked" and event.payload.reason == FORCED_REVOCATION:
                prefix = prefix.without_tool(event.payload.tool)
        decision = planner.plan(self.model, prefix)
        if decision.events:
            self._append([e.payload for e in decision.events])
        return decision.plan

    def _frame_current_turn(self, surface: Surface) -> None:
        turn = surface.current_turn()
        if turn is None or turn.frame is not None:
            return
        now = self.clock.now()
        runtime = f"Current date and time: {now.astimezone(dt.UTC):%A, %Y-%m-%d %H:%M} UTC."
        state = ws.state_at(self._events)
        evidence: tuple[Evidence, ...] = ()
        if self.recall is not None:
            # In-turn recall is capped: the port's ranking decides what fits.
            kept, used = [], 0
            for item in self.recall.recall(turn.message.text, now=now):
                cost = self._count(item.text) + ENVELOPE_TOKENS
                if used + cost > self.budgets.recall_tokens:
                    break
                kept.append(item)
                used += cost
            evidence = tuple(kept)
        self._append(
            [
                FrameRecorded(
                    turn_seq=turn.seq,
                    runtime=runtime,
                    working_state=None if state.is_empty() else state.to_dict(),
                    recall=evidence,
                )
            ]
        )

    def _tail(self, surface: Surface) -> VolatileTail:
        corrections: list[Correction] = []
        erased: set[str] = set()
        delivered: dict[str, Evidence] = {}
        frame_state: dict[str, Any] | None = None
        for entry in surface.entries:
            if isinstance(entry, UserTurn) and entry.frame is not None:
                for evidence in entry.frame.recall:
                    delivered[evidence.id] = evidence
                if entry.seq == surface.seed_seq:
                    frame_state = entry.frame.working_state
        if delivered and self.recall is not None:
            current = self._read_evidence(sorted(delivered))
            for evidence_id, shown in sorted(delivered.items()):
                now_evidence = current.get(evidence_id)
                if now_evidence is None:
                    erased.add(evidence_id)
                elif now_evidence.text != shown.text:
                    corrections.append(Correction(evidence_id=evidence_id, text=now_evidence.text, trust=now_evidence.trust))
        state = ws.state_at(self._events)
        changed = None if state.to_dict() == (frame_state or ws.WorkingState().to_dict()) else state
        rounds = sum(1 for e in self._events if e.seq > surface.seed_seq and e.type == "message.assistant")
        if rounds >= self.rounds.hard_cap:
            raise RoundLimitExceeded(
                f"session {self.id!r}: {rounds} model rounds since the last user message, the cap is {self.rounds.hard_cap}",
                session_id=self.id,
                rounds=rounds,
            )
        nudges = (self.rounds.nudge_text,) if rounds >= self.rounds.nudge_after else ()
        return VolatileTail(
            corrections=tuple(corrections), working_state=changed, nudges=nudges, erased_evidence=frozenset(erased)
        )

    def _read_evidence(self, ids: list[str]) -> Any:
        """Fresh read on every assembly; reuse only behind the explicit revision hook."""
        assert self.recall is not None
        if self.reuse_recall_by_revision:
            revision = self.recall.revision()  # type: ignore[attr-defined]
            if self._recall_cache is not None and self._recall_cache[:2] == (revision, tuple(ids)):
                return self._recall_cache[2]
            current = self.recall.current(ids, now=self.clock.now())
            self._recall_cache = (revision, tuple(ids), current)
            return current
        return self.recall.current(ids, now=self.clock.now())


def session_secret(store_secret: bytes, session_id: str) -> bytes:
    """The per-session envelope secret, derived from the store's secret."""
    return hmac.new(store_secret, f"session:{session_id}".encode(), hashlib.sha256).digest()


def _answerable(surface: Surface) -> bool:
    # Anything but the model's own reply renders as a user-side message the model can answer.
    return bool(surface.entries) and not isinstance(surface.entries[-1], AssistantReply)
