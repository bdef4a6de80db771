"""Per-request telemetry and session summaries, derived from the event log.

Nothing here is stored: every record is a fold over events (``context.request.built``,
``model.response``, ``context.compacted``, ...), so it can be recomputed at any time
and never disagrees with the log. Times come from the events, never from a clock.

Provider usage is taken from ``model.response`` events. A replay or a demo has no
provider, so :func:`with_usage` can attach usage predicted by the offline cache
simulators instead; such records say so in :attr:`RequestRecord.usage_source`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from typing import Any, Literal

from contextwright.budget.estimator import HeuristicEstimator, TokenEstimator
from contextwright.canonical import canonical_json
from contextwright.errors import UsageError
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.log.base import EventLog
from contextwright.pricing.cache_sim.base import PriceLookup, utc_day
from contextwright.pricing.prices import cost, price_for
from contextwright.providers.usage import Usage

__all__ = [
    "ALARM_DROP",
    "ALARM_FLOOR",
    "ALARM_WARMUP",
    "ALARM_WINDOW",
    "CacheAlarm",
    "RequestRecord",
    "SessionSummary",
    "UsageSource",
    "cache_alarms",
    "request_records",
    "store_summary",
    "summarize",
    "with_usage",
]

UsageSource = Literal["provider", "simulated"]
"""Where a record's usage came from: a ``model.response`` event, or a simulator via :func:`with_usage`."""

_PLAN_EVENTS = ("context.plan.created", "context.epoch.rotated")
_USAGE_COUNTS = tuple(f.name for f in fields(Usage))
"""The counts of a :class:`Usage`, which a record holds flat (None without usage)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestRecord:
    """What one built request looked like, and what it cost when usage is known."""

    session_id: str
    """The session the request belongs to."""
    request_index: int
    """Position of the request in its session, from 0."""
    epoch: int
    """The plan epoch the request was built under."""
    seq: int
    """Seq of the ``context.request.built`` event."""
    at: dt.datetime
    """When the request was built (the event's time)."""
    provider: str
    """Provider the request was built for (``anthropic``, ``openai``)."""
    model: str
    """Model id of the epoch's plan (``unknown`` when no plan event is in the log)."""
    context_window: int | None
    """The model's window per the epoch's plan, when known."""
    prefix_sha256: str
    """Hash of the frozen prefix the request carried."""
    total_tokens: int
    """Estimated input tokens of the whole request."""
    tokens_by_class: dict[str, int] = field(default_factory=dict)
    """Estimated tokens per content class (policy, tools, history, tool_results, ...)."""
    tokens_by_layer: dict[str, int] = field(default_factory=dict)
    """Estimated tokens per layer (live, stage_local, compressed_session, project_memory)."""
    pressure: str = "none"
    """Pressure state after relief: ``none``, ``soft`` or ``hard``."""
    yields: tuple[str, ...] = ()
    """What yielded to make this request fit (recall, tool results to pointers, compaction)."""
    projected_next_tokens: int
    """This request's size plus what the log grew by before the next request (no relief assumed)."""
    compactions_so_far: int = 0
    """Compactions adopted in the session before this request was recorded."""
    prunes_so_far: int = 0
    """Pruning passes adopted in the session before this request was recorded."""
    epochs_so_far: int = 0
    """Plans recorded in the session (first plan plus rotations) before this request."""
    changes: tuple[str, ...] = ()
    """Context changes since the previous request: ``pruned``, ``compacted:<trigger>``, ``epoch:<reason>``."""
    input_tokens: int | None = None
    """Uncached, unwritten input tokens (provider usage), or None without usage."""
    cache_read_tokens: int | None = None
    """Input tokens read from the prompt cache, or None without usage."""
    cache_write_5m_tokens: int | None = None
    """Input tokens written to a short-lived cache entry, or None without usage."""
    cache_write_1h_tokens: int | None = None
    """Input tokens written to a 1-hour cache entry, or None without usage."""
    output_tokens: int | None = None
    """Output tokens, or None without usage."""
    reasoning_output_tokens: int | None = None
    """The part of the output spent on reasoning or thinking, or None without usage."""
    usage_source: UsageSource | None = None
    """Where the usage came from; None when there is none."""
    responded_at: dt.datetime | None = None
    """Time of the matching ``model.response`` event, when the provider reported one."""
    cost_usd: Decimal | None = None
    """Exact cost of the usage at the dated list price, or None without usage or price."""
    priced_by: str | None = None
    """Where the price came from (the engine's dated table, or LiteLLM's model map); None without a cost."""
    uncached_input_tokens: int | None = None
    """Input tokens the cache simulator predicts were not read from cache; None until misses are attributed."""
    uncached_by_cause: dict[str, int] | None = None
    """Those tokens by cause (:data:`~contextwright.pricing.cache_sim.attribution.CAUSES`); they add up exactly."""
    predicted_cache_read_tokens: int | None = None
    """Cache reads the simulator predicts for the request, when misses are attributed."""
    predicted_cache_write_tokens: int | None = None
    """Cache writes the simulator predicts for the request, when misses are attributed."""
    miss_rule_set: str | None = None
    """Whose cache rules the prediction follows (``anthropic`` or ``openai``)."""

    @property
    def miss_cause(self) -> str | None:
        """The cause with most uncached tokens, when misses are attributed and there are any."""
        if not self.uncached_by_cause:
            return None
        return max(self.uncached_by_cause, key=lambda c: self.uncached_by_cause[c] if self.uncached_by_cause else 0)

    @property
    def prediction_gap(self) -> float | None:
        """Reported minus predicted cache-read share, when the provider reported usage and misses are attributed."""
        usage = self.usage
        if usage is None or self.usage_source != "provider" or self.predicted_cache_read_tokens is None:
            return None
        if not usage.total_input:
            return 0.0
        return (usage.cache_read_tokens - self.predicted_cache_read_tokens) / usage.total_input

    @property
    def prediction_flagged(self) -> bool:
        """True when the prediction is further from the provider's report than the documented tolerance."""
        from contextwright.pricing.cache_sim.attribution import TOLERANCE

        gap = self.prediction_gap
        return gap is not None and abs(gap) > TOLERANCE

    @property
    def usage(self) -> Usage | None:
        """The usage as one :class:`~contextwright.providers.usage.Usage`, or None."""
        if self.input_tokens is None:
            return None
        return Usage(**{name: getattr(self, name) or 0 for name in _USAGE_COUNTS})

    @property
    def cache_read_share(self) -> float | None:
        """Share of the prompt read from cache, or None without usage."""
        usage = self.usage
        return None if usage is None else usage.cache_read_share


ALARM_WINDOW = 5
"""Requests the running cache-read level is the mean of (the latest ones before the request judged)."""
ALARM_DROP = 0.30
"""A request whose share is this far (absolute) under the running level raises an alarm."""
ALARM_FLOOR = 0.50
"""The running level must be at least this for a drop to count (a cold session has nothing to lose)."""
ALARM_WARMUP = 3
"""Requests with usage a session needs before a drop is judged."""
_EXPIRY_HINT = dt.timedelta(minutes=5)


@dataclass(frozen=True, kw_only=True, slots=True)
class CacheAlarm:
    """A request whose cache-read share fell well below the session's own running level."""

    request_index: int
    """The request that dropped."""
    at: dt.datetime
    """When it was built."""
    share: float
    """Its cache-read share."""
    running_level: float
    """The mean share of the :data:`ALARM_WINDOW` requests before it."""
    cause: str | None
    """The cause with most uncached tokens when misses are attributed, else what the log says happened
    (``compaction``, ``relief_pass``, ``prefix_epoch``, ``ttl_expired`` after a gap of 5 minutes or
    more); None when neither tells."""

    def describe(self) -> str:
        """One line for a terminal: which request, how far it fell, and why."""
        return (
            f"request {self.request_index}: cache read {self.share:.1%} against a running {self.running_level:.1%}; "
            f"cause: {(self.cause or 'not known from the log').replace('_', ' ')}"
        )


def cache_alarms(records: Sequence[RequestRecord]) -> tuple[CacheAlarm, ...]:
    """The requests of one session whose cache-read share dropped well below its running level.

    A request is flagged when at least :data:`ALARM_WARMUP` earlier requests had usage, the
    mean share of the latest :data:`ALARM_WINDOW` of them is at least :data:`ALARM_FLOOR`, and
    the request's share is more than :data:`ALARM_DROP` under that mean.
    """
    alarms: list[CacheAlarm] = []
    shares: list[float] = []
    previous: RequestRecord | None = None
    for record in records:
        share = record.cache_read_share
        if share is None:
            continue
        recent = shares[-ALARM_WINDOW:]
        if len(shares) >= ALARM_WARMUP:
            level = sum(recent) / len(recent)
            if level >= ALARM_FLOOR and share < level - ALARM_DROP:
                alarms.append(
                    CacheAlarm(
                        request_index=record.request_index,
                        at=record.at,
                        share=share,
                        running_level=level,
                        cause=_alarm_cause(record, previous),
                    )
                )
        shares.append(share)
        previous = record
    return tuple(alarms)


def _alarm_cause(record: RequestRecord, previous: RequestRecord | None) -> str | None:
    if record.miss_cause is not None:
        return record.miss_cause
    said = [c.split(":", 1)[0] for c in record.changes] + list(record.yields)
    for name, cause in (("epoch", "prefix_epoch"), ("compacted", "compaction"), ("compaction", "compaction")):
        if name in said:
            return cause
    if "pruned" in said or "tool_results_to_pointers" in said:
        return "relief_pass"
    if previous is not None and record.at - previous.at >= _EXPIRY_HINT:
        return "ttl_expired"
    return None


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionSummary:
    """One session at a glance, derived from its events."""

    session_id: str
    """The session summarized."""
    model: str | None
    """Model of the latest epoch, when a plan event is present."""
    provider: str | None
    """Provider of the latest epoch, when known."""
    context_window: int | None
    """Window of the latest epoch, when known."""
    started_at: dt.datetime
    """Time of the first event."""
    ended_at: dt.datetime
    """Time of the last event."""
    events: int
    """Number of events in the session."""
    requests: int
    """Requests built."""
    epochs: int
    """Plans recorded (1 when the prefix never changed)."""
    prefix_hashes_by_epoch: dict[int, int] = field(default_factory=dict)
    """Distinct prefix hashes per epoch; anything above 1 is a broken cache prefix."""
    compactions_by_trigger: dict[str, int] = field(default_factory=dict)
    """Compactions adopted, by trigger (pressure, overflow, manual, cache_expired)."""
    prunes: int = 0
    """Batched pruning passes."""
    yields_by_kind: dict[str, int] = field(default_factory=dict)
    """How many requests each kind of yield was taken for."""
    overflow_recoveries: int = 0
    """Provider overflows answered by relief and a retry that the provider then accepted."""
    overflows: int = 0
    """Requests the provider rejected as longer than its window."""
    """Compactions forced by a provider context-length error."""
    archive_failures: int = 0
    """Compactions adopted although their archive could not be written."""
    peak_request_tokens: int = 0
    """Largest estimated request."""
    requests_with_usage: int = 0
    """Requests that have usage (reported or simulated)."""
    cache_read_share: float | None = None
    """Token-weighted share of input read from cache over requests with usage; None without any."""
    total_cost_usd: Decimal | None = None
    """Cost of every request with usage; None without usage or when one of them has no price."""
    priced_by: tuple[str, ...] = ()
    """Every price source the cost was computed with, in order of first use."""
    denied_tool_calls: int = 0
    """Tool calls refused by the call-time policy check."""
    memory_candidates_offered: int = 0
    """Facts offered to memory formation at session end."""
    memory_candidates_withheld: int = 0
    """Facts withheld because untrusted content could have shaped them."""
    dedupe_hits: int = 0
    """Entries shown once or not at all because they repeated or were superseded (at the last request)."""
    relief_compression_ratio: float | None = None
    """Mean tokens-after / tokens-before over relief passes that reported both."""
    stages_closed: int = 0
    decisions_graduated: int = 0
    """Decision points moved from the compressed session (L2) to project memory (L3)."""
    cache_alarms: tuple[CacheAlarm, ...] = ()
    """Requests whose cache-read share fell well below the session's running level (see :class:`CacheAlarm`)."""
    uncached_input_tokens: int | None = None
    """Uncached input over requests with attributed misses; None when none has them."""
    uncached_by_cause: dict[str, int] = field(default_factory=dict)
    """Those tokens by cause, causes in first-seen order."""
    predictions_checked: int = 0
    """Requests with both provider usage and a predicted cache read."""
    predictions_flagged: int = 0
    """Of those, the ones whose prediction is further from the report than the documented tolerance."""
    miss_problem: str | None = None
    """Why the session's cache misses could not be attributed (a model without cache rules), when asked and not done."""

    @property
    def compactions(self) -> int:
        """Compactions of every trigger."""
        return sum(self.compactions_by_trigger.values())

    @property
    def prefix_drift(self) -> bool:
        """True when some epoch carried more than one prefix hash."""
        return any(count > 1 for count in self.prefix_hashes_by_epoch.values())


def request_records(
    events: Iterable[Event],
    *,
    estimator: TokenEstimator | None = None,
    price_lookup: PriceLookup | None = price_for,
) -> list[RequestRecord]:
    """One record per ``context.request.built`` event, in log order, sessions kept apart.

    ``estimator`` sizes what the log grows by between requests (for the projection);
    ``price_lookup`` prices provider usage (``None``: no costs).
    """
    by_session: dict[str, list[Event]] = {}
    for event in events:
        by_session.setdefault(event.session_id, []).append(event)
    sizer = estimator if estimator is not None else HeuristicEstimator()
    records: list[RequestRecord] = []
    for session_events in by_session.values():
        records.extend(_session_records(sorted(session_events, key=lambda e: e.seq), sizer, price_lookup))
    return records


def _unprojected_records(events: Sequence[Event], price_lookup: PriceLookup | None) -> list[RequestRecord]:
    """:func:`request_records` of one session's ordered events, less the projections a summary never reads.

    Sizing the log's growth between requests means estimating every text the session added,
    the bulk of a summary's cost; here ``projected_next_tokens`` is the request's own size."""
    return _session_records(list(events), None, price_lookup)


def summarize(
    events: Iterable[Event],
    *,
    records: Sequence[RequestRecord] | None = None,
    price_lookup: PriceLookup | None = price_for,
) -> SessionSummary:
    """Summarize one session's events; pass ``records`` to use ones with simulated usage."""
    ordered = sorted(events, key=lambda e: e.seq)
    if not ordered:
        raise UsageError("cannot summarize a session without events")
    sessions = {e.session_id for e in ordered}
    if len(sessions) != 1:
        raise UsageError(
            f"summarize takes one session's events, got {len(sessions)}: {sorted(sessions)}", sessions=sorted(sessions)
        )
    session_id = ordered[0].session_id
    if records is None:
        records = _unprojected_records(ordered, price_lookup)
    elif any(r.session_id != session_id for r in records):
        raise UsageError(f"records of another session were passed to summarize({session_id!r})", session_id=session_id)

    plans = [e.payload for e in ordered if e.type in _PLAN_EVENTS]
    latest = plans[-1].plan["model"] if plans else None
    hashes: dict[int, set[str]] = {}
    for record in records:
        hashes.setdefault(record.epoch, set()).add(record.prefix_sha256)
    compactions = Counter(e.payload.trigger for e in ordered if e.type == "context.compacted")
    overflows = [e.payload for e in ordered if e.type == "context.overflow"]
    candidates = [e.payload for e in ordered if e.type == "memory.candidates"]
    with_usage_ = [r for r in records if r.usage is not None]
    total_input = sum(r.usage.total_input for r in with_usage_ if r.usage is not None)
    read = sum(r.cache_read_tokens or 0 for r in with_usage_)
    costs = [r.cost_usd for r in with_usage_]
    known_costs = [c for c in costs if c is not None]
    return SessionSummary(
        session_id=session_id,
        model=latest["id"] if latest else next((r.model for r in reversed(records) if r.model != "unknown"), None),
        provider=latest["provider"] if latest else (records[-1].provider if records else None),
        context_window=latest["context_window"] if latest else None,
        started_at=ordered[0].at,
        ended_at=ordered[-1].at,
        events=len(ordered),
        requests=len(records),
        epochs=len(plans) or len({r.epoch for r in records}),
        prefix_hashes_by_epoch={epoch: len(h) for epoch, h in sorted(hashes.items())},
        compactions_by_trigger=dict(sorted(compactions.items())),
        prunes=sum(1 for e in ordered if e.type == "context.pruned"),
        yields_by_kind=dict(sorted(Counter(y for r in records for y in r.yields).items())),
        overflows=len(overflows),
        overflow_recoveries=_recoveries(overflows),
        archive_failures=sum(1 for e in ordered if e.type == "context.compacted" and e.payload.archive_failed),
        peak_request_tokens=max((r.total_tokens for r in records), default=0),
        requests_with_usage=len(with_usage_),
        # Token-weighted: a big request's cache miss matters more than a small one's.
        cache_read_share=read / total_input if total_input else (0.0 if with_usage_ else None),
        total_cost_usd=None if not costs or len(known_costs) < len(costs) else sum(known_costs, Decimal(0)),
        priced_by=tuple(dict.fromkeys(r.priced_by for r in with_usage_ if r.priced_by is not None)),
        denied_tool_calls=sum(1 for e in ordered if e.type == "tool.result" and e.payload.denied),
        memory_candidates_offered=sum(len(c.facts) for c in candidates),
        memory_candidates_withheld=sum(c.withheld for c in candidates),
        dedupe_hits=next((e.payload.dedupe_hits for e in reversed(ordered) if e.type == "context.request.built"), 0),
        relief_compression_ratio=_mean_ratio(ordered),
        stages_closed=sum(1 for e in ordered if e.type == "stage.closed"),
        decisions_graduated=sum(len(e.payload.stage_ids) for e in ordered if e.type == "decision.graduated"),
        cache_alarms=cache_alarms(records),
        **_misses(records),
    )


def _misses(records: Sequence[RequestRecord]) -> dict[str, Any]:
    attributed = [r for r in records if r.uncached_by_cause is not None]
    if not attributed:
        return {}
    by_cause: dict[str, int] = {}
    for record in attributed:
        for cause, tokens in (record.uncached_by_cause or {}).items():
            by_cause[cause] = by_cause.get(cause, 0) + tokens
    return {
        "uncached_input_tokens": sum(r.uncached_input_tokens or 0 for r in attributed),
        "uncached_by_cause": by_cause,
        "predictions_checked": sum(1 for r in attributed if r.prediction_gap is not None),
        "predictions_flagged": sum(1 for r in attributed if r.prediction_flagged),
    }


def _mean_ratio(events: Sequence[Event]) -> float | None:
    ratios = [e.payload.compression_ratio for e in events if e.type == "context.layer.truncated"]
    known = [r for r in ratios if r is not None]
    return sum(known) / len(known) if known else None


def store_summary(log: EventLog, *, price_lookup: PriceLookup | None = price_for) -> list[SessionSummary]:
    """A summary of every session in ``log`` that has events, in session-id order."""
    summaries = []
    for session_id in sorted(log.sessions()):
        events = log.read(session_id)
        if events:
            summaries.append(summarize(events, price_lookup=price_lookup))
    return summaries


def with_usage(
    records: Sequence[RequestRecord],
    usages: Mapping[int, Usage],
    price_lookup: PriceLookup | None = price_for,
    *,
    source: UsageSource = "simulated",
) -> list[RequestRecord]:
    """Attach ``usages`` (by request index) to records the provider reported nothing for.

    Reported usage always wins: a record that already has usage is returned unchanged.
    Costs are priced with ``price_lookup`` on each request's UTC day.
    """
    sessions = {r.session_id for r in records}
    if len(sessions) > 1:
        raise UsageError(
            f"with_usage takes one session's records, got {len(sessions)}: {sorted(sessions)}", sessions=sorted(sessions)
        )
    known = {r.request_index for r in records}
    unknown = sorted(set(usages) - known)
    if unknown:
        # An index off by one would silently shift every cost; refuse instead.
        raise UsageError(f"usage given for requests that are not in the records: {unknown}", request_indexes=unknown)
    out = []
    for record in records:
        usage = usages.get(record.request_index)
        if usage is None or record.usage is not None:
            out.append(record)
            continue
        out.append(_attach(record, usage, source=source, price_lookup=price_lookup, responded_at=None))
    return out


# -- internals ------------------------------------------------------------------------


def _session_records(events: list[Event], sizer: TokenEstimator | None, price_lookup: PriceLookup | None) -> list[RequestRecord]:
    """The records of one session's events in seq order; without a ``sizer``, no projection (growth counts 0)."""
    models: dict[int, Mapping[str, Any]] = {}
    built: list[Event] = []
    # Counters and pending changes, as of each request.
    state = Counter[str]()
    changes: list[str] = []
    context: list[tuple[int, int, int, tuple[str, ...]]] = []
    # What the log grew by after each request, until the next one (model-visible content only).
    growth: list[list[str]] = []
    responses: dict[int, tuple[Event, Any]] = {}
    for event in events:
        payload = event.payload
        match event.type:
            case "context.plan.created" | "context.epoch.rotated":
                models[payload.epoch] = payload.plan["model"]
                state["epochs"] += 1
                if event.type == "context.epoch.rotated":
                    changes.append(f"epoch:{payload.reason}")
            case "context.compacted":
                state["compactions"] += 1
                changes.append(f"compacted:{payload.trigger}")
            case "context.pruned":
                state["prunes"] += 1
                changes.append("pruned")
            case "context.request.built":
                built.append(event)
                context.append((state["compactions"], state["prunes"], state["epochs"], tuple(changes)))
                changes = []
                growth.append([])
            case "model.response":
                # Indexed responses say which request they answer; others answer the latest one.
                if payload.request_index is not None:
                    responses[payload.request_index] = (event, payload)
                elif built:
                    responses[built[-1].payload.request_index] = (event, payload)
            case _:
                if growth and sizer is not None:
                    growth[-1].extend(_visible_texts(event))

    records = []
    added: list[int] = []
    for position, event in enumerate(built):
        payload = event.payload
        model = models.get(payload.epoch)
        model_id = str(model["id"]) if model else "unknown"
        # Only growth between two requests is known; the last one gets the mean of those.
        texts = growth[position]
        if sizer is None:
            grow = 0
        elif position < len(built) - 1:
            added.append(sum(sizer.estimate(t, model=model_id) for t in texts if t))
            grow = added[-1]
        else:
            grow = sum(added) // len(added) if added else 0
        compactions, prunes, epochs, since = context[position]
        record = RequestRecord(
            session_id=event.session_id,
            request_index=payload.request_index,
            epoch=payload.epoch,
            seq=event.seq,
            at=event.at,
            provider=payload.provider,
            model=model_id,
            context_window=int(model["context_window"]) if model else None,
            prefix_sha256=payload.prefix_sha256,
            total_tokens=payload.total_tokens,
            tokens_by_class=dict(sorted(payload.tokens_by_class.items())),
            tokens_by_layer=dict(sorted(payload.tokens_by_layer.items())),
            pressure=payload.pressure,
            yields=tuple(payload.yields),
            projected_next_tokens=payload.total_tokens + grow,
            compactions_so_far=compactions,
            prunes_so_far=prunes,
            epochs_so_far=epochs,
            changes=since,
        )
        response = responses.get(payload.request_index)
        if response is not None:
            response_event, response_payload = response
            usage = response_payload.usage
            if record.model == "unknown":
                record = replace(record, model=response_payload.model)
            record = _attach(record, usage, source="provider", price_lookup=price_lookup, responded_at=response_event.at)
        records.append(record)
    return records


def _visible_texts(event: Event) -> list[str]:
    """The model-visible text an event adds to the next request (before any relief)."""
    payload = event.payload
    match event.type:
        case "message.user":
            return [payload.text]
        case "message.assistant":
            calls = encode_payload(payload)["tool_calls"]
            return [payload.text, canonical_json(calls)] if calls else [payload.text]
        case "tool.result":
            return [payload.output]
        case "context.frame.recorded":
            return [payload.runtime, *(e.text for e in payload.recall)]
        case _:
            return []


def _attach(
    record: RequestRecord,
    usage: Usage,
    *,
    source: UsageSource,
    price_lookup: PriceLookup | None,
    responded_at: dt.datetime | None,
) -> RequestRecord:
    return replace(
        record,
        **{name: getattr(usage, name) for name in _USAGE_COUNTS},
        usage_source=source,
        responded_at=responded_at,
        **_price(record, usage, price_lookup),
    )


def _price(record: RequestRecord, usage: Usage, price_lookup: PriceLookup | None) -> dict[str, Any]:
    """The record's ``cost_usd`` and ``priced_by``, both None without a lookup or a price."""
    if price_lookup is None:
        return {"cost_usd": None, "priced_by": None}
    try:
        price = price_lookup(record.model, utc_day(record.at))
    except LookupError:
        # An unpriced model has no cost, not a wrong one (UnknownModel is a LookupError).
        return {"cost_usd": None, "priced_by": None}
    return {"cost_usd": cost(usage, price), "priced_by": price.source}


def _recoveries(overflows: list[Any]) -> int:
    """Overflows relieved and retried, less those whose retry was rejected again."""
    return sum(
        1
        for i, overflow in enumerate(overflows)
        if overflow.recovered and not (i + 1 < len(overflows) and not overflows[i + 1].recovered)
    )
