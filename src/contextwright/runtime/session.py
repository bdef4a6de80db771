"""A session: the one object an agent loop holds.

The session is the only place that does I/O for a conversation: it appends to
the log, reads the clock, reads memory and recall through their ports, and
calls the pure parts (planner, allocator, surface fold, builder, validator,
compactor) in a fixed order. It keeps a cache of the session's events but
re-reads the log's tail before every operation, so two workers can serve one
session without in-process state deciding anything.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextwright.budget.allocator import Allocation, allocate
from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator, prefix_estimator
from contextwright.build.assemble import (
    BudgetExceeded,
    BuildResult,
    Correction,
    VolatileTail,
    _Assembler,
    build,
)
from contextwright.build.request import NeutralRequest
from contextwright.build.validate import validate
from contextwright.canonical import canonical_json
from contextwright.clock import Clock, format_instant
from contextwright.derive import working_state as ws
from contextwright.derive.surface import AssistantReply, Exchange, Summary, Surface, UserTurn, fold
from contextwright.errors import (
    ArtifactNotFound,
    ContextwrightError,
    SeqConflict,
    StorageCorrupted,
    UsageError,
)
from contextwright.events.catalog import (
    ArtifactPointer,
    ArtifactStored,
    AssistantMessage,
    Compacted,
    ContextOverflow,
    Evidence,
    FrameRecorded,
    LayerTruncated,
    MemoryCandidates,
    MemoryCorrected,
    MemoryErased,
    MemoryWritten,
    ModelResponse,
    Pruned,
    RequestBuilt,
    ToolCall,
    ToolRestored,
    ToolResult,
    ToolRevoked,
    UsageRecord,
    UserMessage,
    WorkingStateUpdated,
)
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.plan.planner import ContextPlanner, PlanDecision
from contextwright.policy.tools import ToolPolicy, denial_for
from contextwright.pressure.compactor import compact as default_compact
from contextwright.pressure.ranking import least_relevant_first
from contextwright.pressure.tool_output import (
    READ_TOOL_NAME,
    ToolOutputPolicy,
    prepare_output,
    read_slice,
)
from contextwright.runtime.errors import (
    ArchiveFailed,
    EscalationRequired,
    NothingToSend,
    OverflowNotRecovered,
    RoundLimitExceeded,
    ToolCallUnknown,
)
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.spec import AgentSpec
from contextwright.runtime.stages import StagesMixin

UNTRUSTED = frozenset({"external_untrusted"})
"""Trust levels whose presence in a run withholds the run's facts from memory candidates."""
FORCED_REVOCATION = "forced: operator immediate revocation"
POINTER_STUB_TOKENS = 40
ENVELOPE_TOKENS = 45
"""About what an envelope's two tag lines cost, in tokens."""
"""What a pruned tool result still costs: its envelope and the pointer line."""


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

    def anthropic(self, *, prefix_ttl: str = "5m") -> dict[str, Any]:
        """Keyword arguments for ``anthropic.Anthropic().messages.create``."""
        from contextwright.providers import anthropic as renderer
        from contextwright.providers.capabilities import capabilities_for

        return renderer.render(self.neutral, capabilities_for(self.plan.model), previous=self.previous, prefix_ttl=prefix_ttl)  # type: ignore[arg-type]

    def openai_chat(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().chat.completions.create``."""
        from contextwright.providers import openai_chat as renderer
        from contextwright.providers.capabilities import capabilities_for

        return renderer.render(self.neutral, capabilities_for(self.plan.model))

    def openai_responses(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().responses.create``."""
        from contextwright.providers import openai_responses as renderer
        from contextwright.providers.capabilities import capabilities_for

        return renderer.render(self.neutral, capabilities_for(self.plan.model))

    def body(self, wire: str | None = None) -> dict[str, Any]:
        """The body for ``wire`` ("anthropic", "openai_chat", "openai_responses"); the plan's provider by default."""
        wire = wire or ("anthropic" if self.plan.model.provider == "anthropic" else "openai_chat")
        if wire == "anthropic":
            return self.anthropic()
        if wire == "openai_chat":
            return self.openai_chat()
        if wire == "openai_responses":
            return self.openai_responses()
        raise UsageError(f"unknown wire format {wire!r}: use anthropic, openai_chat or openai_responses")


class Session(StagesMixin):
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

    def record_assistant(self, message: AssistantMessage) -> list[Event]:
        """Record the model's answer; control-tool calls and calls to revoked tools are answered here."""
        self._sync()
        surface = fold(self.id, self._events)
        if surface.open_exchange is not None:
            raise UsageError(
                f"tool calls {', '.join(surface.open_exchange.missing)} still need results before the model can speak again"
            )
        stored = self._append([message])
        policy = ToolPolicy.from_events(self._events)
        automatic: list[Any] = []
        state = ws.state_at(self._events)
        tainted = self._untrusted_in_run(surface)
        for call in message.tool_calls:
            denial = denial_for(call, policy)
            if denial is not None:
                automatic.append(denial)
            elif call.name == READ_TOOL_NAME:
                automatic.append(self._read_artifact(call))
            elif call.name == ws.TOOL_NAME:
                try:
                    state = ws.apply_update(state, call.arguments, count_tokens=self._count, tainted=tainted)
                except ws.WorkingStateError as exc:
                    automatic.append(
                        ToolResult(
                            call_id=call.id,
                            tool_name=call.name,
                            output=f"Not saved: {exc.message}",
                            is_error=True,
                            trust="platform",
                        )
                    )
                else:
                    automatic.append(
                        ToolResult(call_id=call.id, tool_name=call.name, output="Working state saved.", trust="platform")
                    )
                    automatic.append(WorkingStateUpdated(state=state.to_dict(), source="tool", call_id=call.id))
        if automatic:
            stored += self._append(automatic)
        return stored

    def _output_policy(self, tool_name: str) -> ToolOutputPolicy:
        """The tool's policy, tightened so one result takes at most half the tool-result budget."""
        policy = self.agent.output_policy(tool_name)
        plan = self._planner().current
        if plan is None:
            return policy
        limit_tokens = max(256, allocate(plan).tool_results // 2)
        # Three characters per token is a conservative conversion for code and logs.
        return replace(
            policy,
            max_chars=min(policy.max_chars, limit_tokens * 3),
            budget_tokens=min(policy.budget_tokens or limit_tokens, limit_tokens),
        )

    def _read_artifact(self, call: ToolCall) -> ToolResult:
        """Answer a ``context_read_artifact`` call; the text keeps its original trust level."""
        ref = call.arguments.get("ref")
        pointer = self._pointer(ref) if isinstance(ref, str) else None
        if pointer is None:
            return ToolResult(
                call_id=call.id,
                tool_name=call.name,
                output=f"Unknown pointer {ref!r}: use a ref shown in this session.",
                is_error=True,
                trust="platform",
            )
        try:
            text = read_slice(self.log.get_artifact(pointer.ref), call.arguments)
        except (UsageError, ArtifactNotFound) as exc:
            return ToolResult(
                call_id=call.id, tool_name=call.name, output=f"Cannot read {ref}: {exc.message}", is_error=True, trust="platform"
            )
        return ToolResult(call_id=call.id, tool_name=call.name, output=text, trust=pointer.trust)

    def _pointer(self, ref: str) -> ArtifactPointer | None:
        """The pointer the model was shown in this session (never another session's).

        A unique prefix of at least 12 hex digits (as summaries show) is enough."""
        if not ref.startswith("sha256:") or len(ref) < len("sha256:") + 12:
            return None
        found: dict[str, ArtifactPointer] = {}
        for event in self._events:
            if event.type == "artifact.stored":
                pointers: tuple[ArtifactPointer, ...] = (event.payload.pointer,)
            elif event.type == "context.compacted":
                pointers = (*event.payload.elided, *((event.payload.archive,) if event.payload.archive else ()))
            else:
                continue
            for pointer in pointers:
                if pointer.ref.startswith(ref):
                    found.setdefault(pointer.ref, pointer)
        return next(iter(found.values())) if len(found) == 1 else None

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last model answer that still need a result from the caller."""
        self._sync()
        exchange = fold(self.id, self._events).open_exchange
        if exchange is None:
            return []
        missing = set(exchange.missing)
        return [call for call in exchange.calls if call.id in missing]

    def tool_result(
        self,
        call_id: str,
        output: str,
        *,
        exit_code: int | None = None,
        is_error: bool | None = None,
        trust: str = "tool",
    ) -> Event:
        """Record the output of a tool call the model made."""
        pending = {c.id: c for c in self.pending_tool_calls()}
        call = pending.get(call_id)
        if call is None:
            raise ToolCallUnknown(
                f"no pending tool call {call_id!r} in session {self.id!r}"
                + (f"; pending: {', '.join(pending)}" if pending else "; nothing is pending"),
                session_id=self.id,
                call_id=call_id,
            )
        failed = is_error if is_error is not None else (exit_code not in (None, 0))
        if not isinstance(output, str):
            raise UsageError(f"tool output must be text, not {type(output).__name__}")
        # The original goes to the artifact store first; the model sees a bounded view of it.
        ref = self.log.put_artifact(output, kind="tool_output")
        prepared = prepare_output(
            output,
            ref=ref,
            trust=trust,
            exit_code=exit_code if exit_code is not None else (1 if failed else None),
            policy=self._output_policy(call.name),
            count_tokens=self._count,
        )
        result = ToolResult(
            call_id=call_id,
            tool_name=call.name,
            output=prepared.text,
            is_error=failed,
            exit_code=exit_code,
            trust=trust,
            artifact=prepared.pointer,  # type: ignore[arg-type]
        )
        return self._append([ArtifactStored(pointer=prepared.pointer, source_call_id=call_id), result])[-1]

    def revoke_tool(self, name: str, *, reason: str = "") -> Event:
        """Stop a tool from being called; it stays in the prefix and calls are denied."""
        return self._append([ToolRevoked(tool=name, reason=reason)])[0]

    def restore_tool(self, name: str) -> Event:
        """Allow a revoked tool again."""
        return self._append([ToolRestored(tool=name)])[0]

    def force_revoke_tool(self, name: str) -> PlanDecision:
        """Operator-forced immediate revocation: the tool leaves the prefix and a new epoch starts."""
        self._sync()
        decision = self._planner().force_revocation(name)
        self._append([*(e.payload for e in decision.events), ToolRevoked(tool=name, reason=FORCED_REVOCATION)])
        return decision

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
        surface = fold(self.id, self._events)
        if surface.open_exchange is not None:
            raise UsageError(f"tool calls {', '.join(surface.open_exchange.missing)} still need results")
        self._check_something_to_answer(surface)
        plan = self._pin_plan()
        allocation = allocate(plan)
        self._frame_current_turn(surface)
        surface = fold(self.id, self._events)
        tail = self._tail(surface)
        result = self._build_with_relief(plan, allocation, tail)
        surface = fold(self.id, self._events)
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
            dedupe_hits=fold(self.id, [e for e in self._events if e.seq <= result.upto_seq]).dedupe_hits,
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

    def record(self, response: Any) -> list[Event]:
        """Record a provider response (Anthropic message, chat completion or response, or their JSON).

        The answer is recorded like :meth:`record_assistant`, and its usage as a
        ``model.response`` event that also tunes the token estimator.
        """
        from contextwright.providers.responses import parse_response

        message, usage = parse_response(response)
        stored = self.record_assistant(message)
        if usage is not None:
            stored += self._record_usage(usage, model=message.model)
        return stored

    def _record_usage(self, usage: Any, *, model: str | None) -> list[Event]:
        built = [e.payload for e in self._events if e.type == "context.request.built"]
        last = built[-1] if built else None
        record = UsageRecord(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_5m_tokens=usage.cache_write_5m_tokens,
            cache_write_1h_tokens=usage.cache_write_1h_tokens,
        )
        reconciler = getattr(self.estimator, "reconciler", None)
        if last is not None and reconciler is not None and usage.total_input:
            # The reconciler learns from the uncorrected estimate.
            raw = max(1, round(last.total_tokens / reconciler.factor(self.model.id)))
            reconciler.observe(self.model.id, raw, usage.total_input)
        return self._append(
            [
                ModelResponse(
                    provider=self.model.provider,
                    model=model or self.model.id,
                    usage=record,
                    request_index=last.request_index if last else None,
                    estimated_input_tokens=last.total_tokens if last else None,
                )
            ]
        )

    def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Build (unless given), send with ``create`` (e.g. ``client.messages.create``), record the answer.

        A context-length error from the provider is caught once: the session is
        compacted (pruning first when there is nothing to fold), the request is
        rebuilt and sent again. A second context-length error raises
        :class:`OverflowNotRecovered`.
        """
        request = request or self.next_request()
        for attempt in range(2):
            try:
                response = create(**request.body(wire), **extra)
            except Exception as exc:
                request = self._after_send_error(exc, request, attempt)
                continue
            self.record(response)
            return response
        raise AssertionError("unreachable")

    def _after_send_error(self, exc: Exception, request: BuiltRequest, attempt: int) -> BuiltRequest:
        """Shared by the sync and async send: translate the error, or relieve once and rebuild."""
        from contextwright.errors import ContextLengthExceeded
        from contextwright.providers.errors import from_sdk_exception, is_sdk_api_error

        error = from_sdk_exception(exc) if is_sdk_api_error(exc) else exc
        if not isinstance(error, ContextLengthExceeded):
            if error is exc:
                raise exc
            raise error from exc
        self._append([ContextOverflow(request_index=request.index, recovered=attempt == 0, message=error.message[:500])])
        if attempt == 1:
            raise OverflowNotRecovered(
                f"session {self.id!r}: the provider still rejected request {request.index} as too long after compaction",
                session_id=self.id,
            ) from exc
        self._relieve_overflow(request.plan)
        return self.next_request()

    @property
    def aio(self) -> AsyncSession:
        """The async twin of this session (same log, same logic, I/O off the event loop)."""
        return AsyncSession(self)

    def _relieve_overflow(self, plan: ContextPlan) -> None:
        """Forced relief after a provider overflow: compact, or prune everything prunable."""
        proposal = self.compactor(fold(self.id, self._events), epoch=plan.epoch, trigger="overflow")
        if proposal.escalate:
            raise EscalationRequired(proposal.reason, session_id=self.id)
        if proposal.compacted is not None:
            self._adopt(proposal.compacted, strict=False)
        else:
            self._prune(plan, allocate(plan), must=True)

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

    def compact(self, *, trigger: str = "manual") -> Event | None:
        """Fold history before the current run into a summary now.

        Strict: the folded events are archived first, and if the archive cannot be
        written this raises :class:`ArchiveFailed` and changes nothing.
        """
        self._sync()
        plan = self._planner().current
        proposal = self.compactor(fold(self.id, self._events), epoch=plan.epoch if plan else 0, trigger=trigger)
        if proposal.escalate:
            raise EscalationRequired(proposal.reason, session_id=self.id)
        if proposal.compacted is None:
            return None
        return self._adopt(proposal.compacted, strict=True)

    def _adopt(self, compacted: Compacted, *, strict: bool) -> Event:
        """Archive the folded events, then record the compaction (archive-first)."""
        archive_events = [e for e in self._events if e.seq <= compacted.upto_seq]
        text = "\n".join(
            canonical_json({"seq": e.seq, "type": e.type, "at": format_instant(e.at), "payload": encode_payload(e.payload)})
            for e in archive_events
        )
        try:
            ref = self.log.put_artifact(text, kind="compaction_archive")
        except ContextwrightError as exc:
            if strict:
                raise ArchiveFailed(
                    f"session {self.id!r}: the compaction archive could not be written ({exc.message}); nothing was compacted",
                    session_id=self.id,
                ) from exc
            # The automatic path is a safety valve: compact anyway, and say so in the log.
            return self._append([replace(compacted, archive_failed=True)])[0]
        pointer = ArtifactPointer(ref=ref, trust="platform", size_chars=len(text), kind="compaction_archive")
        return self._append([replace(compacted, archive=pointer)])[0]

    # -- internals ---------------------------------------------------------------------

    def _count(self, text: str) -> int:
        return self.estimator.estimate(text, model=self.model.id)

    def _body_estimate(self, plan: ContextPlan) -> Callable[[str], int]:
        model_id = plan.model.id
        return lambda text: self.estimator.estimate(text, model=model_id)

    def _check_something_to_answer(self, surface: Surface) -> None:
        last = surface.entries[-1] if surface.entries else None
        # Anything but the model's own reply renders as a user-side message the model can answer.
        if last is None or isinstance(last, AssistantReply):
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

    def _build_with_relief(self, plan: ContextPlan, allocation: Allocation, tail: VolatileTail) -> BuildResult:
        # Relief order: the builder drops in-turn recall itself; then old tool results
        # become pointers in one batched pass; then history is compacted. Each pass
        # sheds down to a low-water mark, so passes are rare (one cache miss each).
        relief: list[str] = []

        def attempt() -> BuildResult | None:
            try:
                return build(
                    plan=plan,
                    allocation=allocation,
                    surface=fold(self.id, self._events),
                    tail=tail,
                    secret=self.secret,
                    estimate=self._body_estimate(plan),
                )
            except BudgetExceeded:
                return None

        result = attempt()
        # The tool-result share (B2) binds when space is scarce: with no pressure on the
        # window, pruning would only rewrite cached history for nothing (a cache miss
        # with no budget to win back), so the share is enforced from soft pressure on.
        if result is None or result.pressure != "none":
            before = result.tokens_by_class.get("tool_results", 0) if result else None
            pruned = self._prune(plan, allocation, must=result is None)
            if pruned:
                relief.append("tool_results_to_pointers")
                result = attempt()
                self._append(
                    [
                        LayerTruncated(
                            epoch=plan.epoch,
                            layer="stage_local",
                            relief="tool_results_to_pointers",
                            items=pruned,
                            tokens_before=before if before is not None else -1,
                            tokens_after=result.tokens_by_class.get("tool_results", 0) if result else -1,
                            dedupe_hits=fold(self.id, self._events).dedupe_hits,
                        )
                    ]
                )
        for attempt_no in range(3):
            # Compaction only when pruning was not enough: the body does not fit, or it
            # is still over the soft threshold with nothing cheaper left to shed.
            if result is not None and (result.pressure == "none" or attempt_no > 0):
                break
            surface = fold(self.id, self._events)
            # A second attempt asks for a summary half the size of the current one.
            current = sum(len(e.compacted.summary) for e in surface.entries if isinstance(e, Summary))
            options = {} if attempt_no == 0 else {"max_summary_chars": max(1_000, current // (2 * attempt_no))}
            proposal = self.compactor(surface, epoch=plan.epoch, trigger="pressure", **options)
            if proposal.escalate:
                raise EscalationRequired(proposal.reason, session_id=self.id)
            if proposal.compacted is None:
                continue  # the next attempt asks for a tighter summary
            before_body = result.body_tokens if result else -1
            self._adopt(proposal.compacted, strict=False)
            relief.append("compaction")
            result = attempt()
            self._append(
                [
                    LayerTruncated(
                        epoch=plan.epoch,
                        layer="stage_local",
                        relief="compaction",
                        items=len(proposal.compacted.source_event_seqs),
                        tokens_before=before_body,
                        tokens_after=result.body_tokens if result else -1,
                        dedupe_hits=fold(self.id, self._events).dedupe_hits,
                    )
                ]
            )
        if result is None:
            # Nothing left to relieve: let the builder report the numbers.
            result = build(
                plan=plan,
                allocation=allocation,
                surface=fold(self.id, self._events),
                tail=tail,
                secret=self.secret,
                estimate=self._body_estimate(plan),
            )
        if "recall" in result.yields:
            self._append(
                [
                    LayerTruncated(
                        epoch=plan.epoch,
                        layer="project_memory",
                        relief="recall",
                        items=1,
                        tokens_before=-1,
                        tokens_after=result.tokens_by_class.get("recall", 0),
                    )
                ]
            )
        return replace(result, yields=result.yields + tuple(relief))

    def _prune(self, plan: ContextPlan, allocation: Allocation, *, must: bool = False) -> int:
        """Turn the oldest tool results into pointers, in one pass, down to the low-water mark.

        Unless the body does not fit at all (``must``), a pass runs only when it can
        shed at least half the tool-result budget: small passes would cost a cache
        miss for little gain, round after round.
        """
        surface = fold(self.id, self._events)
        estimate = self._body_estimate(plan)
        exchanges = [e for e in surface.entries if isinstance(e, Exchange) and e.complete]
        keep = self.budgets.keep_recent_rounds
        candidates = [r for e in exchanges[: max(0, len(exchanges) - keep)] for r in e.results if not r.pruned]
        if not candidates:
            return 0
        # Within the layer, the least relevant to the current stage's goal go first.
        goal = surface.open_stage.goal if surface.open_stage is not None else None
        candidates = least_relevant_first(
            candidates, goal=goal, text=lambda r: f"{r.result.tool_name} {r.result.output[:2000]}", age=lambda r: r.seq
        )
        sizes = {r.result.call_id: estimate(r.result.output) for r in candidates}
        visible_results = sum(estimate(r.result.output) for e in exchanges for r in e.results if not r.pruned)
        body = sum(estimate(p.text) for m in self._last_messages(plan, allocation) for p in m.parts if hasattr(p, "text"))
        target_input = int(allocation.context_window * self.budgets.relief_target)
        shed = max(
            allocation.prefix_tokens + allocation.with_margin(body) - target_input,
            visible_results - int(allocation.tool_results * self.budgets.relief_tool_results_target),
            1,
        )
        chosen: list[str] = []
        saved = 0
        for result in candidates:
            if saved >= shed:
                break
            chosen.append(result.result.call_id)
            saved += max(0, sizes[result.result.call_id] - POINTER_STUB_TOKENS)
        if not must and saved < allocation.tool_results // 2:
            return 0
        self._append([Pruned(epoch=plan.epoch, upto_seq=surface.upto_seq, call_ids=tuple(chosen))])
        return len(chosen)

    def _last_messages(self, plan: ContextPlan, allocation: Allocation) -> tuple[Any, ...]:
        """The messages as they would be built now, with every yield allowed (for sizing)."""
        surface = fold(self.id, self._events)
        return _Assembler(plan=plan, surface=surface, tail=VolatileTail(), secret=self.secret, drop_recall=False).run()

    def _untrusted_in_run(self, surface: Surface) -> bool:
        for entry in surface.entries:
            if isinstance(entry, Exchange) and entry.seq >= surface.seed_seq:
                if any(r.result.trust in UNTRUSTED and not r.result.denied for r in entry.results):
                    return True
        return False


def session_secret(store_secret: bytes, session_id: str) -> bytes:
    """The per-session envelope secret, derived from the store's secret."""
    return hmac.new(store_secret, f"session:{session_id}".encode(), hashlib.sha256).digest()


class AsyncSession:
    """Async twin of :class:`Session`: every method runs the sync one in a worker thread,
    except :meth:`send`, which awaits the async SDK call itself."""

    def __init__(self, session: Session) -> None:
        self.sync = session

    async def user(self, text: str, **options: Any) -> Event:
        """Async :meth:`Session.user`."""
        return await asyncio.to_thread(self.sync.user, text, **options)

    async def next_request(self) -> BuiltRequest:
        """Async :meth:`Session.next_request`."""
        return await asyncio.to_thread(self.sync.next_request)

    async def record(self, response: Any) -> list[Event]:
        """Async :meth:`Session.record`."""
        return await asyncio.to_thread(self.sync.record, response)

    async def tool_result(self, call_id: str, output: str, **options: Any) -> Event:
        """Async :meth:`Session.tool_result`."""
        return await asyncio.to_thread(self.sync.tool_result, call_id, output, **options)

    async def pending_tool_calls(self) -> list[ToolCall]:
        """Async :meth:`Session.pending_tool_calls`."""
        return await asyncio.to_thread(self.sync.pending_tool_calls)

    async def compact(self) -> Event | None:
        """Async :meth:`Session.compact`."""
        return await asyncio.to_thread(self.sync.compact)

    async def send(
        self, create: Callable[..., Any], request: BuiltRequest | None = None, *, wire: str | None = None, **extra: Any
    ) -> Any:
        """Async :meth:`Session.send`: ``create`` is an async SDK method such as ``AsyncAnthropic().messages.create``."""
        request = request or await self.next_request()
        for attempt in range(2):
            try:
                response = await create(**request.body(wire), **extra)
            except Exception as exc:
                request = await asyncio.to_thread(self.sync._after_send_error, exc, request, attempt)
                continue
            await self.record(response)
            return response
        raise AssertionError("unreachable")
