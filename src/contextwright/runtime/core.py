"""The state every part of a session shares: its setup, and its place in the log.

:class:`SessionCore` is the one object the session's collaborators (tool calls,
relief, request building, sending, stages) are given. It holds the session's
setup (agent, model, clock, secret, estimator, budgets, ports) and a cache of the
session's events, re-read from the log's tail before every operation, so two
workers can serve one session without in-process state deciding anything.

What the session derives from its events (the surface fold, the facts, the plan, the
working state, the usage fold) is followed one event at a time, and written down now and
then as a checkpoint (:mod:`~contextwright.runtime.checkpoint`). A session opened on a
checkpoint starts from it and reads only the events after it; the events before it are read
from the log only when something asks for the whole history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextwright.assembly.assemble import body_tokens, sized_texts
from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import Message
from contextwright.budget._reconcile import Reconciler, UsageFold
from contextwright.budget.estimator import TokenEstimator, as_calibrated, prefix_estimator
from contextwright.clock import Clock
from contextwright.derive import _working_state as ws
from contextwright.derive._surface import Folder, Surface
from contextwright.errors import CheckpointRejected, ContextwrightError, PlanError, SeqConflict, StorageCorrupted, UsageError
from contextwright.events.catalog import RequestBuilt
from contextwright.events.envelope import Event
from contextwright.items.region_a import MemoryFact
from contextwright.log.base import EventLog
from contextwright.models import ResolvedModel
from contextwright.plan.budgets import BudgetConfig
from contextwright.plan.plan import ContextPlan
from contextwright.planner import ContextPlanner
from contextwright.runtime.checkpoint import CountSeed, SessionState, read_checkpoint, write_checkpoint
from contextwright.runtime.estimates import EstimateMemo, estimator_fingerprint
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
        checkpoint_every: int = 0,
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
        self._tail: list[Event] = []
        """The events read after :attr:`base_seq`, in order (the log only grows)."""
        self.base_seq = 0
        """The seq of the checkpoint this session started from (0: every event was read from the log)."""
        self.checkpoint_every = checkpoint_every
        """Events between two checkpoints, at least (0: no checkpoint is read or written)."""
        self.checkpoint_seq = 0
        """The seq of the last checkpoint this process read or wrote."""
        self.checkpoint_outcome = "none"
        """What became of the session's checkpoint at open, and of the last one written:
        ``none``, ``restored``, ``written``, or ``rejected: <why>`` / ``not written: <why>``."""
        self.setup_seq = 0
        """The log position at which this process last chose the agent and model: a plan
        recorded after it (by any worker) is the session's plan, adopted as it is."""
        self._synced_at: object | None = None
        """The store's write mark when the tail was last read or appended to (see :meth:`sync`)."""
        self._folder: Folder | None = None
        self._folded = 0
        """How many of :attr:`events` the folder has applied."""
        self._kept_surface: Surface | None = None
        """The surface at the last recorded request's ``upto_seq``, kept when the fold passed it
        in one batch (a reopen): rebuilding that request for cache markers then needs no second fold."""
        self._plan_scan: tuple[int, _Plan | None] = (0, None)
        """How many events the plan below was looked for in, and the plan found."""
        self._base_plan: _Plan | None = None
        """The plan as of :attr:`base_seq`."""
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
        self._view_estimates = EstimateMemo()
        self._recorded_estimates: dict[str, tuple[EstimateMemo, EstimateMemo]] = {}
        """Body and view counts of requests rebuilt under a calibration other than the estimator's own, by calibration."""
        self._facts = LogFacts()

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event read."""
        return self._tail[-1].seq if self._tail else self.base_seq

    @property
    def events(self) -> list[Event]:
        """Every event read so far, in order; those before a checkpoint are read from the log on first use."""
        self._read_head()
        return self._tail

    def after(self, seq: int) -> list[Event]:
        """The events read after ``seq`` (seqs start at 1 and have no gaps, so this is a slice)."""
        if seq < self.base_seq:
            self._read_head()
        return self._tail[seq - self.base_seq :]

    def read_upto(self, seq: int) -> list[Event]:
        """The session's events up to ``seq``: from memory, or read from the log without keeping them."""
        if not self.base_seq:
            return self._tail[:seq]
        if seq <= self.base_seq:
            return self._read_range(0, seq)
        return self._read_range(0, self.base_seq) + self._tail[: seq - self.base_seq]

    def read_after(self, seq: int) -> list[Event]:
        """The events read after ``seq``: those before the checkpoint are read from the log without keeping them."""
        if seq >= self.base_seq:
            return self._tail[seq - self.base_seq :]
        return self._read_range(seq, self.base_seq) + self._tail

    def event_at(self, seq: int) -> Event | None:
        """The event at ``seq``, or None past the events read (one event read from the log when it is before them)."""
        if not 0 < seq <= self.last_seq:
            return None
        if seq > self.base_seq:
            return self._tail[seq - self.base_seq - 1]
        found = self.log.read(self.id, after_seq=seq - 1, limit=1)
        return found[0] if found and found[0].seq == seq else None

    def _read_head(self) -> None:
        if self.base_seq:
            self._tail[:0] = self._read_range(0, self.base_seq)
            self.base_seq = 0

    def _read_range(self, after: int, upto: int) -> list[Event]:
        events = self.log.read(self.id, after_seq=after, limit=upto - after)
        if len(events) != upto - after or (events and events[-1].seq != upto):
            raise StorageCorrupted(f"session {self.id!r}: events {after + 1}..{upto} are no longer all in the log")
        return events

    def sync(self) -> None:
        """Read the log's tail after the last event read (unless nothing can have been appended since it was read)."""
        mark = self.log.write_mark()
        if mark is not None and mark == self._synced_at:
            return  # read or appended under this mark: the tail is known (see EventLog.write_mark)
        self._tail.extend(self.log.read(self.id, after_seq=self.last_seq))
        self._synced_at = mark

    def adopt(self, history: Sequence[Event]) -> None:
        """Take events the caller already read from this session's log (they must start the session)."""
        if self.last_seq or (history and history[0].seq != 1):
            raise UsageError(f"session {self.id!r}: adopted history must be the session's first events, read before any other")
        self._tail.extend(history)

    def restore_checkpoint(self) -> None:
        """Start from the session's checkpoint when it has one this session can use (before anything is read).

        One that is missing, stale, sealed by another secret, of another format or that does
        not decode is set aside: the events are then all read and folded, with the same result."""
        if not self.checkpoint_every or self.last_seq:
            return
        try:
            state = read_checkpoint(self.log, self.id, self.secret, Reconciler(**self._usage.reconciler.options()))
        except CheckpointRejected as exc:
            self.checkpoint_outcome = f"rejected: {exc.message}"
            return
        if state is None:
            return
        self.base_seq = self.checkpoint_seq = state.seq
        self._folder, self._folded = state.folder, state.seq
        self._synced_at = None  # the tail now starts after the checkpoint: read it
        # The checkpoint is taken where a request was built: the next request rebuilds that one on this surface.
        self._kept_surface = state.folder.surface()
        self._facts = state.facts
        self._plan_scan = (state.seq, state.plan)
        self._base_plan = state.plan
        self._working_state = (state.seq, state.working_state)
        self._usage = state.usage
        counts = state.counts
        if counts is not None and counts.fingerprint == estimator_fingerprint(self.estimator, counts.model):
            self._estimates.seed(counts.model, counts.raw)
            self._raw_estimates.seed(counts.model, counts.raw)
        self.checkpoint_outcome = "restored"

    def checkpoint_due(self, upto_seq: int, messages: Sequence[Message] = ()) -> SessionState | None:
        """The state to write as a checkpoint at ``upto_seq`` (the last event read, just built on), when one is due;
        ``messages`` are the request just built, whose token counts it keeps."""
        folder = self._folder
        if (
            not self.checkpoint_every
            or upto_seq != self.last_seq
            or upto_seq - self.checkpoint_seq < self.checkpoint_every
            or folder is None
            or folder.broken
            or self._folded != upto_seq
        ):
            return None
        self.facts()
        plan = self._current_plan()
        self.working_state()
        self._usage.feed(self.after(self._usage.upto_seq))
        counts = None
        fingerprint = None if plan is None else estimator_fingerprint(self.estimator, plan.model.id)
        if plan is not None and fingerprint is not None:
            raw = self._estimates.raw_counts(self.estimator, plan.model.id, sized_texts(messages))
            counts = CountSeed(fingerprint=fingerprint, model=plan.model.id, raw=raw)
        return SessionState(
            seq=upto_seq,
            folder=folder,
            facts=self._facts,
            plan=self._plan_scan[1],
            working_state=self._working_state[1],
            usage=self._usage,
            counts=counts,
        )

    def write_checkpoint(self, state: SessionState) -> None:
        """Store ``state`` as the session's checkpoint. A cache that cannot be written is not the caller's error."""
        head = self.event_at(state.seq)
        if head is None:
            return
        try:
            write_checkpoint(self.log, self.id, self.secret, state, head_sha256=head.payload_sha256)
        except ContextwrightError as exc:
            self.checkpoint_outcome = f"not written: {exc.message}"
            return
        self.checkpoint_seq = state.seq
        self.checkpoint_outcome = "written"

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
        last = self.last_seq
        if self._folded < upto < last:
            folder.apply(self.after(self._folded)[: upto - self._folded])
            self._folded = upto
            self._kept_surface = folder.surface()
        fresh = self.after(self._folded)
        self._folded = last
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
            self._synced_at = None  # the tail was not what this session knew: read it whatever the mark
            self.sync()
            raise
        self._tail.extend(e for e in stored if e.seq > self.last_seq)
        # Appended right after the last event read: the tail is known under the append's mark.
        self._synced_at = self.log.write_mark()
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
        if seen != self.last_seq:
            best = _greatest_plan(self.id, self.after(seen), best)
            self._plan_scan = (self.last_seq, best)
        return None if best is None else best[0]

    def plan_at(self, seq: int) -> ContextPlan | None:
        """The plan that was current once the events up to ``seq`` were recorded (for rebuilds)."""
        if seq < self.base_seq:
            self._read_head()
        start = self._base_plan if self.base_seq else None
        best = _greatest_plan(self.id, self.after(self.base_seq)[: seq - self.base_seq], start)
        return None if best is None else best[0]

    def recorded_request(self, request_index: int) -> RequestBuilt:
        """The record of request ``request_index`` (the last one is a fact; an older one is looked up in the log)."""
        facts = self.facts()
        if not 0 <= request_index < facts.requests_built:
            raise UsageError(
                f"session {self.id!r} has {facts.requests_built} recorded requests; there is no request {request_index}"
            )
        if request_index == facts.requests_built - 1 and facts.last_built is not None:
            return facts.last_built
        built = [e.payload for e in self.events if e.type == "context.request.built"]
        record: RequestBuilt = built[request_index]
        return record

    def settle_setup(self) -> None:
        """Mark the agent and model as chosen now: plans already in the log are checked against them."""
        self.setup_seq = self.last_seq

    def plan_seq(self) -> int:
        """The seq of the latest plan event read (0 when there is none)."""
        return self.facts().plan_seq

    def facts(self) -> LogFacts:
        """Facts of the events read so far (each event looked at once)."""
        return self._facts.follow(self.after(self._facts.seen))

    def working_state(self) -> ws.WorkingState:
        """The working state as of the events read so far (each event looked at once)."""
        seen, state = self._working_state
        if seen != self.last_seq:
            state = ws.state_at(self.after(seen), start=state)
            self._working_state = (self.last_seq, state)
        return state

    def erased_texts(self, snapshot: Iterable[MemoryFact] = ()) -> frozenset[str]:
        """Every text an erased memory item had in this session (snapshots of every epoch, writes, corrections)."""
        facts = self.facts()
        return facts.history.erased_texts(facts.erased_memory, snapshot)

    def count(self, text: str) -> int:
        """Tokens of ``text`` for the session's model."""
        return self.estimator.estimate(text, model=self.model.id)

    def estimate_factor(self, model_id: str) -> float:
        """The correction factor for ``model_id``, folded from the provider usage logged so far."""
        # The events start at seq 1 and are gapless, so the fold's position is an index.
        return self._usage.feed(self.after(self._usage.upto_seq)).factor(model_id)

    def body_estimate(
        self, plan: ContextPlan, *, factor: float | None = None, calibration: str | None = None
    ) -> Callable[[str], int]:
        """A token counter for the model of ``plan``: raw estimates times the logged correction factor.

        ``factor`` reuses a recorded one (rebuilds); by default it is folded from the log.
        ``calibration`` reuses a recorded request's (see :meth:`_calibrated`)."""
        model_id = plan.model.id
        chosen = self.estimate_factor(model_id) if factor is None else factor
        estimator, memo = self._calibrated(calibration, view=False)
        return memo.counter(estimator, model_id, factor=chosen)

    def view_estimate(self, plan: ContextPlan, *, calibration: str | None = None) -> Callable[[str], int]:
        """The uncorrected counter that sizes bounded views (assembly/bounded.py).

        Never corrected: a view sized with the reconciled factor would change its bytes
        whenever the factor moves, rewriting every cached block after it."""
        estimator, memo = self._calibrated(calibration, view=True)
        return memo.counter(estimator, plan.model.id, factor=1.0)

    def _calibrated(self, calibration: str | None, *, view: bool) -> tuple[TokenEstimator, EstimateMemo]:
        """The session's estimator under ``calibration`` (None: as it is), and the memo its counts are kept in.

        A heuristic estimator sizes a rebuilt request with the calibration the request was
        built with; its counts then go to a memo of their own, so they never mix with (or
        evict) the current calibration's."""
        own = self._view_estimates if view else self._estimates
        if calibration is None:
            return self.estimator, own
        estimator = as_calibrated(self.estimator, calibration)
        if estimator is self.estimator:
            return estimator, own
        memos = self._recorded_estimates.get(calibration)
        if memos is None:
            memos = self._recorded_estimates[calibration] = (EstimateMemo(), EstimateMemo())
        return estimator, memos[1] if view else memos[0]

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


_Plan = tuple[ContextPlan, Mapping[str, Any]]
"""A plan and the data it was recorded as."""


def _greatest_plan(session_id: str, events: Sequence[Event], best: _Plan | None) -> _Plan | None:
    """The plan of the greatest epoch in ``events``, or ``best`` when none is greater (the first of an epoch wins)."""
    for event in events:
        if event.type in ("context.plan.created", "context.epoch.rotated"):
            data = event.payload.plan
            plan = ContextPlan.from_dict(data)
            if plan.session_id != session_id:
                raise PlanError(f"event {event.ref} holds a plan of session {plan.session_id!r}")
            if best is None or plan.epoch > best[0].epoch:
                best = (plan, data)
    return best
