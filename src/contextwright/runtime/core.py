"""The state every part of a session shares: its setup, and its place in the log.

:class:`SessionCore` is the one object the session's collaborators (tool calls,
relief, request building, sending, stages) are given. It holds the session's
setup (agent, model, clock, secret, estimator, budgets, ports) and a cache of the
session's events, re-read from the log's tail before every operation, so two
workers can serve one session without in-process state deciding anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.assembly.assemble import body_tokens
from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import Message
from contextwright.budget.estimator import TokenEstimator, prefix_estimator
from contextwright.budget.reconcile import Reconciler, UsageFold
from contextwright.clock import Clock
from contextwright.derive import working_state as ws
from contextwright.derive.surface import Folder, Surface
from contextwright.errors import SeqConflict, UsageError
from contextwright.events.envelope import Event
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.planner import ContextPlanner
from contextwright.runtime.estimates import EstimateMemo
from contextwright.runtime.facts import LogFacts
from contextwright.runtime.ports import MemoryPort, RecallPort
from contextwright.runtime.spec import AgentSpec


@dataclass(frozen=True, kw_only=True, slots=True)
class Resumed:
    """What a caller already read from the log to reopen a session: its events and their current plan."""

    history: Sequence[Event]
    plan: ContextPlan


class SessionCore:
    """A session's setup and its position in the log: read, fold, plan, append."""

    def __init__(
        self,
        *,
        log: EventLog,
        session_id: str,
        agent: AgentSpec,
        model: ResolvedModel,
        clock: Clock,
        secret: bytes,
        estimator: TokenEstimator,
        budgets: BudgetConfig,
        memory: MemoryPort | None,
        recall: RecallPort | None,
        prefix_counter: Callable[..., Any] | None = None,
    ) -> None:
        self.log = log
        self.id = session_id
        self.agent = agent
        self.model = model
        self.clock = clock
        self.secret = secret
        self.estimator = estimator
        self.budgets = budgets
        self.memory = memory
        self.recall = recall
        self.prefix_counter = prefix_counter
        """Opt-in: the provider's count endpoint (``client.messages.count_tokens``), called once per epoch."""
        self.events: list[Event] = []
        """The events read so far, in order (the log only grows)."""
        self.setup_seq = 0
        """The log position at which this process last chose the agent and model: a plan
        recorded after it (by any worker) is the session's plan, adopted as it is."""
        self._folder: Folder | None = None
        self._folded = 0
        """How many of :attr:`events` the folder has applied."""
        self._kept_surface: Surface | None = None
        """The surface at the last recorded request's ``upto_seq``, kept when the fold passed it
        in one batch (a reopen): rebuilding that request for cache markers then needs no second fold."""
        self._plan_scan: tuple[int, ContextPlan | None] = (0, None)
        """How many events the plan below was looked for in, and the plan found."""
        self._working_state = (0, ws.WorkingState())
        """How many events the working state below has followed."""
        self._estimates = EstimateMemo()
        self.render_memo = RenderMemo()
        """What earlier builds rendered and encoded, reused for the entries that did not change."""
        # Correction factors are folded from the log (model.response + the request's split),
        # so every worker and every restart lands on the same ones; this is only a cache.
        own = getattr(estimator, "reconciler", None)
        self._usage = UsageFold(Reconciler(**own.options()) if isinstance(own, Reconciler) else None)
        self._raw_estimates = EstimateMemo()
        self._facts = LogFacts()

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event read."""
        return self.events[-1].seq if self.events else 0

    def sync(self) -> None:
        """Read the log's tail after the last event read."""
        self.events.extend(self.log.read(self.id, after_seq=self.last_seq))

    def adopt(self, history: Sequence[Event]) -> None:
        """Take events the caller already read from this session's log (they must start the session)."""
        if self.events or (history and history[0].seq != 1):
            raise UsageError(f"session {self.id!r}: adopted history must be the session's first events, read before any other")
        self.events.extend(history)

    def surface(self) -> Surface:
        """The surface of the events read so far: each event is folded once, when it is first needed.

        The events only grow (the log is append-only and read in seq order), so only the
        ones after the last folded are applied. A fold that failed is started over from
        the first event, which gives what a fresh process would get.
        """
        folder = self._folder
        if folder is None or folder.broken:
            folder = self._folder = Folder(self.id)
            self._folded = 0
        # Seqs start at 1 and have no gaps, so a seq is the count of events up to it.
        upto = self._last_built_upto()
        if self._kept_surface is not None and self._kept_surface.upto_seq != upto:
            self._kept_surface = None  # a later request was recorded: its own build is the one kept in memory
        if self._folded < upto < len(self.events):
            folder.apply(self.events[self._folded : upto])
            self._folded = upto
            self._kept_surface = folder.surface()
        fresh = self.events[self._folded :]
        self._folded = len(self.events)
        folder.apply(fresh)
        return folder.surface()

    def surface_at(self, seq: int) -> Surface | None:
        """The surface as of ``seq`` when the running fold passed through it and kept it (None otherwise).

        The fold is the same one :meth:`surface` follows, so the entries it shares with the
        current surface are the same objects: what assembly renders for them is reused."""
        kept = self._kept_surface
        if kept is not None and kept.upto_seq == seq:
            return kept
        folder = self._folder
        if folder is not None and not folder.broken and self._folded == seq and self._folded:
            return folder.surface()
        return None

    def _last_built_upto(self) -> int:
        last = self.facts().last_built
        upto = (last.inputs or {}).get("upto_seq") if last is not None else None
        return upto if isinstance(upto, int) and not isinstance(upto, bool) else 0

    def append(self, payloads: Sequence[Any]) -> list[Event]:
        """Append payloads after the last event read; a concurrent writer makes this raise :class:`SeqConflict`."""
        self.sync()
        try:
            stored = self.log.append(self.id, list(payloads), expected_seq=self.last_seq)
        except SeqConflict:
            self.sync()
            raise
        self.events.extend(e for e in stored if e.seq > self.last_seq)
        return stored

    def planner(self) -> ContextPlanner:
        """The planner as of the events read so far (the greatest epoch's plan is current; each event looked at once)."""
        estimator = prefix_estimator(self.model.id, fallback=self.estimator)
        return ContextPlanner(
            self.id, estimator=estimator, secret=self.secret, budgets=self.budgets, current=self._current_plan()
        )

    def _current_plan(self) -> ContextPlan | None:
        """The greatest epoch's plan, following only the events not looked at yet."""
        seen, best = self._plan_scan
        if seen != len(self.events):
            fresh = self.events[seen:]
            estimator = prefix_estimator(self.model.id, fallback=self.estimator)
            found = ContextPlanner.from_events(
                self.id, fresh, estimator=estimator, secret=self.secret, budgets=self.budgets
            ).current
            # The first plan of the greatest epoch wins, as in a scan of the whole log.
            if found is not None and (best is None or found.epoch > best.epoch):
                best = found
            self._plan_scan = (len(self.events), best)
        return best

    def settle_setup(self) -> None:
        """Mark the agent and model as chosen now: plans already in the log are checked against them."""
        self.setup_seq = self.last_seq

    def plan_seq(self) -> int:
        """The seq of the latest plan event read (0 when there is none)."""
        return self.facts().plan_seq

    def facts(self) -> LogFacts:
        """Facts of the events read so far (each event looked at once)."""
        return self._facts.follow(self.events)

    def working_state(self) -> ws.WorkingState:
        """The working state as of the events read so far (each event looked at once)."""
        seen, state = self._working_state
        if seen != len(self.events):
            state = ws.state_at(self.events[seen:], start=state)
            self._working_state = (len(self.events), state)
        return state

    def count(self, text: str) -> int:
        """Tokens of ``text`` for the session's model."""
        return self.estimator.estimate(text, model=self.model.id)

    def estimate_factor(self, model_id: str) -> float:
        """The correction factor for ``model_id``, folded from the provider usage logged so far."""
        # The events start at seq 1 and are gapless, so the fold's position is an index.
        return self._usage.feed(self.events[self._usage.upto_seq :]).factor(model_id)

    def body_estimate(self, plan: ContextPlan, *, factor: float | None = None) -> Callable[[str], int]:
        """A token counter for the model of ``plan``: raw estimates times the logged correction factor.

        ``factor`` replays a recorded one (rebuilds); by default it is folded from the log."""
        model_id = plan.model.id
        chosen = self.estimate_factor(model_id) if factor is None else factor
        return self._estimates.counter(self.estimator, model_id, factor=chosen)

    def split(self, plan: ContextPlan, messages: Sequence[Message]) -> tuple[int, int]:
        """``(exact, raw)``: the tokens of a request counted exactly, and the raw estimate of the rest.

        The prefix is exact when the provider counted it for the epoch or the plan measured it
        with a real tokenizer; otherwise it is a raw estimate too (measured uncorrected at plan
        time), and joins the estimated part."""
        model_id = plan.model.id
        # Without a correction, the build's own counter is a raw one, and the memo already holds its sums.
        raw = self._estimates.current(self.estimator, model_id, factor=1.0)
        if raw is None:
            raw = self._raw_estimates.counter(self.estimator, model_id, factor=1.0)
        body = body_tokens(messages, raw, self.render_memo)
        counted = self.counted_prefix(plan.epoch)
        if counted is not None:
            return counted, body
        prefix = plan.prefix_token_total
        if plan.measured_by.startswith("exact"):
            return prefix, body
        return 0, prefix + body

    def counted_prefix(self, epoch: int) -> int | None:
        """The provider's exact count of ``epoch``'s prefix, when one was logged."""
        return self.facts().counted_prefixes.get(epoch)
