"""Building requests: plan, frame the turn, build with relief, validate, record; and rebuild from the log."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar

from contextwright.assembly.assemble import (
    PINNED_BOUNDED_YIELD,
    BuildResult,
    Correction,
    VolatileTail,
    build,
)
from contextwright.assembly.request import NeutralRequest
from contextwright.assembly.rules import rule_inputs, rule_set_for
from contextwright.assembly.validate import validate
from contextwright.budget.allocator import allocate
from contextwright.budget.estimator import CORPUS_CALIBRATION, calibration_of
from contextwright.derive import _working_state as ws
from contextwright.derive._surface import AssistantReply, Entry, Surface, UserTurn, fold
from contextwright.errors import UsageError
from contextwright.events.catalog import (
    Evidence,
    FrameRecorded,
    PrefixCounted,
    RecallRevisionFailed,
    RecallUnavailable,
    RequestBuilt,
)
from contextwright.events.envelope import Event
from contextwright.items.region_a import MemoryFact
from contextwright.plan.plan import CacheTtl, ContextPlan, Prefix
from contextwright.providers.capabilities import capabilities_for
from contextwright.providers.errors import is_sdk_api_error
from contextwright.providers.wires import default_wire, wire_named
from contextwright.runtime.core import SessionCore
from contextwright.runtime.engine_texts import CURRENT, pinned_texts
from contextwright.runtime.errors import NothingToSend, RoundLimitExceeded
from contextwright.runtime.limits import ENVELOPE_TOKENS
from contextwright.runtime.per_entry import PerEntry
from contextwright.runtime.relief import Relief
from contextwright.runtime.spec import AgentSpec

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

PREFIX_COUNT_ATTEMPTS: Final[int] = 3
"""Failed calls to the provider's count endpoint, per epoch and process, before estimates stand in for good."""


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

    def render(self, wire: str, *, prefix_ttl: CacheTtl | None = None) -> dict[str, Any]:
        """Keyword arguments for the SDK call of ``wire`` (see :data:`contextwright.providers.wires.WIRES`).

        The prefix's cache TTL is the plan's (the agent's ``cache_ttl``) unless ``prefix_ttl`` overrides it.
        """
        return wire_named(wire).render(
            self.neutral,
            capabilities_for(self.plan.model),
            previous=self.previous,
            prefix_ttl=prefix_ttl or self.plan.cache_ttl,
        )

    def anthropic(self, *, prefix_ttl: CacheTtl | None = None) -> dict[str, Any]:
        """Keyword arguments for ``anthropic.Anthropic().messages.create`` (the plan's cache TTL unless overridden)."""
        return self.render("anthropic", prefix_ttl=prefix_ttl)

    def openai_chat(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().chat.completions.create``."""
        return self.render("openai_chat")

    def openai_responses(self) -> dict[str, Any]:
        """Keyword arguments for ``openai.OpenAI().responses.create``."""
        return self.render("openai_responses")

    def body(self, wire: str | None = None) -> dict[str, Any]:
        """The body for ``wire`` ("anthropic", "openai_chat", "openai_responses", "gemini"); the plan's provider's by default."""
        return self.render(wire or default_wire(self.plan.model.provider))


class Requests:
    """Builds a session's requests from its log, and rebuilds recorded ones byte for byte."""

    def __init__(
        self,
        core: SessionCore,
        relief: Relief,
        *,
        rounds: RoundPolicy,
        memory_snapshot: Sequence[MemoryFact],
        reuse_recall_by_revision: bool = False,
    ) -> None:
        self.core = core
        self.relief = relief
        self.rounds = rounds
        self._opened_snapshot = tuple(memory_snapshot)
        self.reuse_recall_by_revision = reuse_recall_by_revision
        """Opt-in only: reuse the previous fresh read while the recall port's ``revision()`` is unchanged."""
        self._recall_cache: tuple[str, tuple[str, ...], Mapping[str, Evidence | None]] | None = None
        self._last_built: tuple[int, int, NeutralRequest] | None = None
        self._prefix_count_failures: dict[int, int] = {}
        self._recalled = PerEntry(_recalled)
        """Per epoch: how many times the provider's count endpoint failed in this process."""

    @property
    def memory_snapshot(self) -> tuple[MemoryFact, ...]:
        """The memory in the prefix: the current plan's, whichever worker pinned it; before any plan, the one read at open."""
        current = self.core.planner().current
        return current.prefix.memory.facts if current is not None else self._opened_snapshot

    def next_request(self) -> BuiltRequest:
        """Plan, frame the turn, build, relieve pressure if needed, validate, record; return the request.

        Recall is read for every request: the turn's first request records what it found in the
        turn's frame; each later one reads again and shows evidence no frame delivered in its
        volatile tail, so evidence that appears during the turn reaches the very next request
        and the cached history before the tail stays as sent. A recall port that raises never
        stops a request: it is built without what the port would have given, a
        ``context.recall.unavailable`` event (the exception's class only) is recorded with it, a
        warning is logged, and the next request asks the port again.
        """
        core = self.core
        core.sync()
        surface = core.surface()
        if surface.open_exchange is not None:
            raise UsageError(f"tool calls {', '.join(surface.open_exchange.missing)} still need results")
        self._check_something_to_answer(surface)
        plan = self.pin_plan()
        allocation = allocate(plan)
        notes: list[RecallUnavailable | RecallRevisionFailed] = []
        framed = self._frame_current_turn(surface, notes)
        surface = core.surface()
        tail = self._tail(surface, read_recall=not framed, notes=notes)
        factor = core.estimate_factor(plan.model.id)
        previous = self._previous_request(plan.epoch)
        last = core.facts().last_built
        shown = last.yields if previous is not None and last is not None else ()
        expired = previous is not None and self._cache_expired(plan)
        result = self.relief.build(
            plan,
            allocation,
            tail,
            previous=previous,
            bounded_pinned=PINNED_BOUNDED_YIELD in shown,
            expired=expired,
        )
        surface = core.surface()
        validate(result.request, plan, core.render_memo)
        self._count_prefix(plan, result.request)
        exact, raw = core.split(plan, result.request.messages)
        payload = RequestBuilt(
            epoch=plan.epoch,
            request_index=surface.requests_built,
            prefix_sha256=result.request.prefix_sha256,
            request_sha256=core.render_memo.sha256(result.request),
            provider=plan.model.provider,
            total_tokens=result.total_tokens,
            tokens_by_class=result.tokens_by_class,
            tokens_by_layer=result.tokens_by_layer,
            yields=result.yields,
            pressure=result.pressure,
            dedupe_hits=result.dedupe_hits,
            inputs={**_rebuild_inputs(result, tail), **_estimator_inputs(core)},
            exact_tokens=exact,
            raw_estimate_tokens=raw,
            estimate_factor=factor,
        )
        # Taken before the append, at the request's upto_seq: the state the next reopen rebuilds this request on.
        due = core.checkpoint_due(result.upto_seq, result.request.messages)
        # What the recall port failed to give is recorded with the request it shaped, after its upto_seq.
        event = core.append([*notes, payload])[-1]
        if due is not None:
            core.write_checkpoint(due)
        self._last_built = (plan.epoch, payload.request_index, result.request)
        return BuiltRequest(
            index=payload.request_index, neutral=result.request, result=result, plan=plan, event=event, previous=previous
        )

    def rebuild(self, request_index: int) -> tuple[NeutralRequest, RequestBuilt]:
        """Rebuild request ``request_index`` from the log alone, byte for byte."""
        self.core.sync()
        return self._rebuild(request_index)

    def _rebuild(self, request_index: int, *, shared: bool = False) -> tuple[NeutralRequest, RequestBuilt]:
        """Rebuild request ``request_index`` from the events read.

        ``shared`` (the last request, rebuilt for cache markers) takes the surface from the
        session's own fold when it kept it, and renders with the session's memo: the next
        build then reuses what this one rendered. The bytes are the same either way."""
        core = self.core
        record = core.recorded_request(request_index)
        inputs = record.inputs or {}
        upto = inputs["upto_seq"]
        # Requests recorded before estimators had calibrations were sized with the corpus one.
        calibration = inputs.get("estimator", CORPUS_CALIBRATION)
        plan = core.plan_at(upto)
        if plan is None:
            raise UsageError(f"session {core.id!r}: request {request_index} was recorded before any plan")
        kept = core.surface_at(upto) if shared else None
        result = build(
            plan=plan,
            allocation=allocate(plan),
            surface=kept if kept is not None else fold(core.id, core.read_upto(upto)),
            tail=VolatileTail.from_dict(inputs["tail"]),
            secret=core.secret,
            # Sized as it was built: requests recorded before factors were logged were built uncorrected.
            estimate=core.body_estimate(plan, factor=record.estimate_factor or 1.0, calibration=calibration),
            # Under the rules it was built with (recorded by number, or by markers before numbers were).
            rules=rule_set_for(inputs),
            view_estimate=core.view_estimate(plan, calibration=calibration),
            yields=tuple(inputs["yields"]),
            memo=core.render_memo if kept is not None else None,
        )
        return result.request, record

    def awaiting_model(self) -> bool:
        """True when a request can be built now: something to answer and no tool call waiting for its result."""
        self.core.sync()
        surface = self.core.surface()
        return surface.open_exchange is None and _answerable(surface)

    def snapshot_now(self, erased: frozenset[str] | None = None) -> tuple[MemoryFact, ...]:
        """The memory snapshot a new plan would freeze: the prefix's (see :attr:`memory_snapshot`), less what was erased since."""
        snapshot = self.memory_snapshot
        if not snapshot:
            return ()
        if erased is None:
            erased = self.core.facts().erased_memory
        return tuple(fact for fact in snapshot if fact.id not in erased)

    def check_prefix_fits(self) -> None:
        """B3 at open: a prefix over its caps fails before anything is logged."""
        core = self.core
        planner = core.planner()
        prefix, kept = _agent_prefix(core.agent, self.snapshot_now(), planner.current)
        planner.check_fits(core.model, kept or prefix)

    def edit_prefix(self, agent: AgentSpec, *, note: str) -> ContextPlan | None:
        """P5: an explicit prefix edit on a live session starts a new epoch, recorded with ``note``."""
        core = self.core
        planner = core.planner()
        prefix, kept = _agent_prefix(agent, self.snapshot_now(), planner.current)
        if planner.current is None:
            planner.check_fits(core.model, prefix)
            core.agent = agent  # the first plan will pin it
            return None
        decision = planner.edit_prefix(prefix, reason="prefix_edited", note=note, kept=kept)
        core.agent = agent
        core.settle_setup()
        if decision.events:
            core.append([e.payload for e in decision.events])
        return decision.plan

    def pin_plan(self) -> ContextPlan:
        """The current plan, or a new one recorded when there is none or the agent or model changed."""
        core = self.core
        planner = core.planner()
        erased = core.facts().erased_memory
        current = planner.current
        if current is not None and any(fact.id in erased for fact in current.prefix.memory.facts):
            # An erasure is a privacy request: the fact leaves the prefix too, at the price of a new epoch.
            rotated = planner.edit_prefix(current.prefix.without_memory(erased), reason="memory_erased")
            core.append([e.payload for e in rotated.events])
            planner = core.planner()
            current = planner.current
        if current is not None and core.plan_seq() > core.setup_seq:
            # Recorded after this process chose its agent and model (by another worker, or by this
            # one's own pin): the log's plan is the session's, model included.
            core.model = current.model
            return current
        prefix, kept = _agent_prefix(core.agent, self.snapshot_now(erased), current)
        # Tools an operator removed at once left the prefix in a new epoch; keep them out.
        for tool in core.facts().forced_revocations:
            prefix = prefix.without_tool(tool)
            kept = kept.without_tool(tool) if kept is not None else None
        decision = planner.plan(core.model, prefix, cache_ttl=core.agent.cache_ttl, kept=kept)
        if decision.events:
            core.append([e.payload for e in decision.events])
        return decision.plan

    def _count_prefix(self, plan: ContextPlan, request: NeutralRequest) -> None:
        """Opt-in: have the provider count this epoch's prefix exactly, once, and log the count.

        A provider error (rate limit, outage) is not worth failing the request for: estimates
        stand in, and the next request of the epoch tries again, up to
        ``PREFIX_COUNT_ATTEMPTS`` times per process (an endpoint that keeps failing must not
        add a round trip to every request). Anything else is a bug and raises."""
        core = self.core
        counter = core.prefix_counter
        if counter is None or plan.model.provider != "anthropic" or core.counted_prefix(plan.epoch) is not None:
            return
        if self._prefix_count_failures.get(plan.epoch, 0) >= PREFIX_COUNT_ATTEMPTS:
            return
        body = wire_named("anthropic").render(request, capabilities_for(plan.model), previous=None, prefix_ttl=plan.cache_ttl)
        prefix = {key: body[key] for key in ("model", "system", "tools") if key in body}
        try:
            answer = counter(**prefix, messages=[{"role": "user", "content": "."}])
        except Exception as exc:
            if is_sdk_api_error(exc):
                self._prefix_count_failures[plan.epoch] = self._prefix_count_failures.get(plan.epoch, 0) + 1
                return
            raise
        tokens = answer.input_tokens if hasattr(answer, "input_tokens") else answer.get("input_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            raise UsageError(f"the prefix counter answered {answer!r}; expected an input_tokens count")
        if tokens > 0:
            core.append([PrefixCounted(epoch=plan.epoch, input_tokens=tokens, counted_by="anthropic.messages.count_tokens")])

    def _cache_expired(self, plan: ContextPlan) -> bool:
        """True when the provider's cache can no longer hold what the last request sent.

        Read from the log, not the clock: the latest event (this turn's message, frame or tool
        result) against the last request built, so a rebuild or another worker decides alike.
        """
        facts = self.core.facts()
        if facts.last_built_at is None or facts.last_event_at is None:
            return False
        return facts.last_event_at - facts.last_built_at >= capabilities_for(plan.model).history_cache_lifetime

    def _previous_request(self, epoch: int) -> NeutralRequest | None:
        """The last request built in ``epoch`` (from memory, or rebuilt from the log)."""
        last = self.core.facts().last_built
        if last is None or last.epoch != epoch:
            return None
        cached = self._last_built
        if cached is not None and cached[:2] == (epoch, last.request_index):
            return cached[2]
        return self._rebuild(last.request_index, shared=True)[0]

    def _check_something_to_answer(self, surface: Surface) -> None:
        if not surface.entries:
            raise NothingToSend(
                f"session {self.core.id!r} has no message yet; record one first (session.user(...))",
                session_id=self.core.id,
            )
        if not _answerable(surface):
            raise NothingToSend(
                f"session {self.core.id!r}: the last message is the model's own answer; record a user message first",
                session_id=self.core.id,
            )

    def _frame_current_turn(self, surface: Surface, notes: list[RecallUnavailable | RecallRevisionFailed]) -> bool:
        """Record the current turn's frame unless it has one; True when it was recorded now."""
        core = self.core
        turn = surface.current_turn()
        if turn is None or turn.frame is not None:
            return False
        now = core.clock.now()
        runtime = f"Current date and time: {now.astimezone(dt.UTC):%A, %Y-%m-%d %H:%M} UTC."
        state = core.working_state()
        evidence: tuple[Evidence, ...] = ()
        recall = core.recall
        if recall is not None:
            found = self._ask_port("recall", lambda: _evidence_only(recall.recall(turn.message.text, now=now)), notes)
            evidence = self._fitting(found or (), core.budgets.recall_tokens)
        core.append(
            [
                FrameRecorded(
                    turn_seq=turn.seq,
                    runtime=runtime,
                    working_state=None if state.is_empty() else state.to_dict(),
                    recall=evidence,
                )
            ]
        )
        return True

    def _fitting(self, found: Sequence[Evidence], budget: int) -> tuple[Evidence, ...]:
        """In-turn recall is capped: the port's ranking decides what fits in ``budget`` tokens."""
        kept: list[Evidence] = []
        used = 0
        for item in found:
            cost = self.core.count(item.text) + ENVELOPE_TOKENS
            if used + cost > budget:
                break
            kept.append(item)
            used += cost
        return tuple(kept)

    def _ask_port(
        self,
        operation: Literal["recall", "current"],
        read: Callable[[], _T],
        notes: list[RecallUnavailable | RecallRevisionFailed],
    ) -> _T | None:
        """``read()``, or None when the recall port raised: noted for the log (the exception's class, never
        its message, which may hold a connection string or the data asked for) and logged as a warning."""
        try:
            return read()
        except Exception as exc:  # a port outage must not stop the session: the next request asks again
            error = type(exc).__name__
            notes.append(RecallUnavailable(operation=operation, error_class=error))
            _log.warning(
                "session %r: the recall port raised %s on %s(); this request is built without it", self.core.id, error, operation
            )
            return None

    def _tail(
        self, surface: Surface, *, read_recall: bool, notes: list[RecallUnavailable | RecallRevisionFailed]
    ) -> VolatileTail:
        """This step's volatile tail; ``read_recall``: ask the recall port for evidence no frame delivered."""
        core = self.core
        corrections: list[Correction] = []
        erased: set[str] = set()
        delivered: dict[str, Evidence] = {}
        for recall in filter(None, self._recalled.values(surface)):
            for evidence in recall:
                delivered[evidence.id] = evidence
        opening = surface.current_turn()  # found from the end, where it almost always is
        frame_state = opening.frame.working_state if opening is not None and opening.frame is not None else None
        # A port that failed to say what became of the evidence shown is not asked for more this request:
        # what it showed stays as it was shown (it is history), and the next request asks again.
        current: Mapping[str, Evidence | None] | None = {}
        if delivered and core.recall is not None:
            current = self._read_evidence(sorted(delivered), notes)
        available = core.recall is not None and current is not None
        if current is not None:
            for evidence_id, shown in sorted(delivered.items()):
                now_evidence = current.get(evidence_id)
                if now_evidence is None:
                    erased.add(evidence_id)
                elif now_evidence.text != shown.text:
                    corrections.append(Correction(evidence_id=evidence_id, text=now_evidence.text, trust=now_evidence.trust))
        fresh: tuple[Evidence, ...] = ()
        if read_recall and available and opening is not None and opening.frame is not None:
            fresh = self._fresh_evidence(opening, delivered, erased, notes)
        # The snapshot in the prefix is frozen for the epoch: a correction of one of its facts
        # reaches the model as a correction line in the body, on the very next request.
        if self.memory_snapshot:
            facts = core.facts()
            corrected = facts.corrected_memory()
            erased_ids = facts.erased_memory
            for fact in self.memory_snapshot:
                text = corrected.get(fact.id)
                if text is not None and text != fact.text and fact.id not in erased_ids:
                    corrections.append(Correction(evidence_id=f"memory:{fact.id}", text=text, trust=fact.trust))
        state = core.working_state()
        changed = None if state.to_dict() == (frame_state or ws.WorkingState().to_dict()) else state
        rounds = core.facts().answers_after(surface.seed_seq)
        if rounds >= self.rounds.hard_cap:
            raise RoundLimitExceeded(
                f"session {core.id!r}: {rounds} model rounds since the last user message, the cap is {self.rounds.hard_cap}",
                session_id=core.id,
                rounds=rounds,
            )
        nudges = (self.rounds.nudge_text,) if rounds >= self.rounds.nudge_after else ()
        return VolatileTail(
            corrections=tuple(corrections),
            working_state=changed,
            nudges=nudges,
            erased_evidence=frozenset(erased),
            evidence=fresh,
        )

    def _fresh_evidence(
        self,
        turn: UserTurn,
        delivered: Mapping[str, Evidence],
        erased: set[str],
        notes: list[RecallUnavailable | RecallRevisionFailed],
    ) -> tuple[Evidence, ...]:
        """Evidence recall finds now for the turn's message that no frame delivered, in what the frame left of the cap.

        Read on every request after the turn's first (ADR-0183: no bundle is kept between assemblies),
        so evidence written or prepared during the turn reaches the next request of the same turn."""
        core = self.core
        recall = core.recall
        assert recall is not None and turn.frame is not None
        now = core.clock.now()
        found = self._ask_port("recall", lambda: _evidence_only(recall.recall(turn.message.text, now=now)), notes)
        if not found:
            return ()
        shown = sum(core.count(e.text) + ENVELOPE_TOKENS for e in turn.frame.recall if e.id not in erased)
        new = {e.id: e for e in found if e.id not in delivered}
        return self._fitting(tuple(new.values()), core.budgets.recall_tokens - shown)

    def _read_evidence(
        self, ids: list[str], notes: list[RecallUnavailable | RecallRevisionFailed]
    ) -> Mapping[str, Evidence | None] | None:
        """Fresh read on every assembly; reuse only behind the explicit revision hook (ADR-0183).

        The hook may say ``None`` (no revision known: read fresh) or fail (read fresh, and
        record the failure's class); a stale answer is never reused in either case. None when
        the port itself failed (noted in ``notes``).
        """
        recall = self.core.recall
        assert recall is not None
        now = self.core.clock.now()

        def read() -> Mapping[str, Evidence | None] | None:
            return self._ask_port("current", lambda: recall.current(ids, now=now), notes)

        revision_of = getattr(recall, "revision", None)
        if not (self.reuse_recall_by_revision and revision_of is not None):
            return read()
        try:
            known = revision_of()
        except Exception as exc:  # a broken hook must not break assembly: fall back to a fresh read
            self._recall_cache = None
            # ADR-0183: a revision failure is known by its class alone; its message may carry data.
            error = type(exc).__name__
            notes.append(RecallRevisionFailed(error=error))
            _log.warning("session %r: the recall revision hook raised %s; reading fresh", self.core.id, error)
            return read()
        if known is None:
            self._recall_cache = None
            return read()
        revision = str(known)
        if self._recall_cache is not None and self._recall_cache[:2] == (revision, tuple(ids)):
            return self._recall_cache[2]
        current = read()
        self._recall_cache = None if current is None else (revision, tuple(ids), current)
        return current


def _agent_prefix(agent: AgentSpec, memory: Sequence[MemoryFact], plan: ContextPlan | None) -> tuple[Prefix, Prefix | None]:
    """The agent's prefix in the newest engine texts, and in the texts ``plan`` pinned when they are older.

    An open session keeps the texts its plan pinned, so an upgrade that rewords them changes
    nothing it sends; a new epoch takes the newest (see :mod:`contextwright.runtime.engine_texts`).
    """
    prefix = agent.prefix(memory)
    if plan is None:
        return prefix, None
    texts = pinned_texts(plan.prefix)
    return prefix, (None if texts is CURRENT else agent.prefix(memory, texts=texts))


def _evidence_only(found: Any) -> tuple[Evidence, ...]:
    """What a recall port answered, as evidence; a ``TypeError`` (the port failed) for anything else."""
    items = tuple(found)
    for item in items:
        if not isinstance(item, Evidence):
            raise TypeError(f"a recall port answered {type(item).__name__}, not Evidence")
    return items


def _rebuild_inputs(result: BuildResult, tail: VolatileTail) -> dict[str, Any]:
    """What a rebuild needs besides the log: the cut point, the volatile tail, the yields taken, and the rule set's number."""
    return {"upto_seq": result.upto_seq, "tail": tail.to_dict(), "yields": list(result.yields), **rule_inputs()}


def _estimator_inputs(core: SessionCore) -> dict[str, Any]:
    """``{"estimator": calibration}`` for a heuristic estimator, so a rebuild sizes with the same weights; else nothing."""
    calibration = calibration_of(core.estimator)
    return {} if calibration is None else {"estimator": calibration}


def _recalled(entry: Entry) -> tuple[Evidence, ...]:
    """The evidence a framed user turn delivered (none for any other entry)."""
    return entry.frame.recall if isinstance(entry, UserTurn) and entry.frame is not None else ()


def _answerable(surface: Surface) -> bool:
    # Anything but the model's own reply renders as a user-side message the model can answer.
    return bool(surface.entries) and not isinstance(surface.entries[-1], AssistantReply)
