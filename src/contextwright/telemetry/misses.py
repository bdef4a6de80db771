"""Every cache miss of a session named, derived from its log and the bodies it sent.

The log is the system of record: nothing here is stored. :func:`engine_changes` reads,
per request, what the engine did since the request before it (pruning passes, layers
truncated by relief, compactions, new prefix epochs) and the relief passes of the
request's own build. :func:`attribute_session` replays the session's bodies through an
offline cache simulator (one per provider rule set) and hands each request to
:func:`~contextwright.pricing.cache_sim.attribution.attribute`, which puts every
uncached input token on one cause. :func:`with_misses` attaches the result to the
request records, so summaries, reports and telemetry carry it.

The bodies come from whoever holds them: the replay (it built them), the runtime (a
session rebuilds any request byte for byte), or a gateway (what the client sent). The
gateway stores each body a client sends as its change from the one before under the same
session key (``gateway.request.received``, :func:`body_delta`); :func:`client_requests`
rebuilds them across the key's runs and :func:`client_misses` names what the client
changed between them (a new system text or tool array, a model switch, stripped thinking,
an edited message), which per-run attribution cannot see: such a change opens a new run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from contextwright.canonical import to_plain
from contextwright.events.envelope import Event
from contextwright.pricing.cache_sim.anthropic import AnthropicCacheSimulator
from contextwright.pricing.cache_sim.attribution import CAUSES, Attribution, Change, Observed, attribute, observe
from contextwright.pricing.cache_sim.base import CountTokens, SimRequest
from contextwright.pricing.cache_sim.openai import OpenAICacheSimulator
from contextwright.telemetry.records import RequestRecord

__all__ = [
    "CLIENT_CHANGES",
    "ClientRequest",
    "SessionMisses",
    "answer_delays",
    "apply_delta",
    "attribute_session",
    "body_delta",
    "client_misses",
    "client_requests",
    "engine_changes",
    "session_misses",
    "with_misses",
]

RuleSet = Literal["anthropic", "openai"]
_RELIEF_YIELDS = {"tool_results_to_pointers": "relief_pass", "recall": "relief_pass", "compaction": "compaction"}


def engine_changes(events: Iterable[Event]) -> dict[int, list[Change]]:
    """Per request index, what the engine did since the request before it (one session's events).

    Relief events (pruning, a truncated layer, a compaction, a new epoch) count from the
    previous request on; the request's own yields and any rise in the entries it shows as
    stubs (a superseded failure, a repeat) count for it.
    """
    pending: list[Change] = []
    out: dict[int, list[Change]] = {}
    dedupe = 0
    for event in sorted(events, key=lambda e: e.seq):
        payload = event.payload
        match event.type:
            case "context.epoch.rotated":
                pending.append(Change(cause="prefix_epoch", detail=f"epoch {payload.epoch}: {payload.reason}"))
            case "context.compacted":
                pending.append(Change(cause="compaction", detail=f"compaction ({payload.trigger}, depth {payload.depth})"))
            case "context.pruned":
                calls = len(payload.call_ids)
                pending.append(Change(cause="relief_pass", detail=f"pruning: {calls} tool result(s) shown as pointers"))
            case "context.layer.truncated":
                cause = "compaction" if payload.relief == "compaction" else "relief_pass"
                detail = f"{payload.relief} on the {payload.layer} layer: {payload.items} item(s)"
                pending.append(Change(cause=cause, detail=detail))  # type: ignore[arg-type]  # both are causes
            case "context.request.built":
                own = [
                    Change(cause=_RELIEF_YIELDS[y], detail=f"{y} for this request")  # type: ignore[arg-type]  # mapped causes
                    for y in payload.yields
                    if y in _RELIEF_YIELDS
                ]
                if payload.dedupe_hits > dedupe:
                    # The build shows a superseded failure or a repeat as a stub from now on: history rewritten.
                    more = payload.dedupe_hits - dedupe
                    own.append(Change(cause="relief_pass", detail=f"dedupe: {more} more entr(ies) shown as stubs"))
                dedupe = payload.dedupe_hits
                out[payload.request_index] = [*pending, *own]
                pending = []
            case _:
                pass
    return out


class SessionMisses:
    """Attribution as a session's requests arrive, one at a time (what a gateway sees of a conversation).

    Keeps one simulator and the previous request; :meth:`add` attributes the next body
    against it. Feed it the bodies in the provider's wire format for ``rule_set``. A model
    the simulator has no cache rules for raises
    :class:`~contextwright.pricing.prices.UnknownModel`.
    """

    def __init__(self, *, rule_set: RuleSet = "anthropic", count_tokens: CountTokens) -> None:
        """A fresh cache under ``rule_set``'s rules, counting with ``count_tokens``."""
        self.rule_set: RuleSet = rule_set
        self._simulator: AnthropicCacheSimulator | OpenAICacheSimulator
        if rule_set == "anthropic":
            self._simulator = AnthropicCacheSimulator(count_tokens=count_tokens, price_lookup=None, check_context_window=False)
        else:
            self._simulator = OpenAICacheSimulator(count_tokens=count_tokens, price_lookup=None)
        self._previous: Observed | None = None

    def add(
        self,
        at: datetime,
        body: Mapping[str, Any],
        *,
        changes: Sequence[Change] = (),
        first_token_after: timedelta = timedelta(0),
    ) -> Attribution:
        """Simulate the next request and put its uncached tokens on their causes.

        ``first_token_after`` is how long its answer took to start (entries it writes are
        readable only from then, so a request sent in parallel pays the write again).
        """
        _, current = observe(self._simulator, SimRequest(at=at, body=body, first_token_after=first_token_after))
        found = attribute(self._previous, current, changes=changes)
        self._previous = current
        return found


def attribute_session(
    bodies: Sequence[tuple[int, datetime, Mapping[str, Any]]],
    *,
    rule_set: RuleSet = "anthropic",
    count_tokens: CountTokens,
    changes: Mapping[int, Sequence[Change]] | None = None,
    answered_after: Mapping[int, timedelta] | None = None,
) -> dict[int, Attribution]:
    """Attribute each ``(request index, time, body)`` of one session, in order, under one provider's rules.

    ``bodies`` must be in the provider's wire format for ``rule_set`` (Messages for
    ``anthropic``, Chat Completions or Responses for ``openai``). ``answered_after`` gives,
    per request, how long its answer took (:func:`answer_delays`): what it wrote is readable
    only from then, so a request sent before it (in parallel) pays the write again.
    """
    session = SessionMisses(rule_set=rule_set, count_tokens=count_tokens)
    delays = answered_after or {}
    return {
        index: session.add(at, body, changes=(changes or {}).get(index, ()), first_token_after=delays.get(index, timedelta(0)))
        for index, at, body in bodies
    }


def answer_delays(events: Iterable[Event]) -> dict[int, timedelta]:
    """Per request index, the time from the request's build to its answer (one session's events).

    An upper bound on the time to its first token, which is when a cache entry it wrote
    becomes readable; requests without an answer are left out.
    """
    built: dict[int, datetime] = {}
    out: dict[int, timedelta] = {}
    last: int | None = None
    for event in sorted(events, key=lambda e: e.seq):
        if event.type == "context.request.built":
            built[event.payload.request_index] = event.at
            last = event.payload.request_index
        elif event.type == "model.response":
            index = event.payload.request_index if event.payload.request_index is not None else last
            if index in built:
                out[index] = max(timedelta(0), event.at - built[index])
    return out


def with_misses(records: Sequence[RequestRecord], attributions: Mapping[int, Attribution]) -> list[RequestRecord]:
    """The records with their uncached input by cause (and the predicted usage) attached, by request index."""
    out = []
    for record in records:
        found = attributions.get(record.request_index)
        if found is None:
            out.append(record)
            continue
        out.append(
            replace(
                record,
                uncached_input_tokens=found.uncached_tokens,
                uncached_by_cause=dict(found.by_cause),
                predicted_cache_read_tokens=found.predicted.cache_read_tokens,
                predicted_cache_write_tokens=found.predicted.cache_write_tokens,
                miss_rule_set=found.rule_set,
            )
        )
    return out


def session_misses(attributions: Iterable[Attribution]) -> tuple[int, dict[str, int]]:
    """A session's uncached input tokens and their split by cause (causes in first-seen order)."""
    total = 0
    by_cause: dict[str, int] = {}
    for attribution in attributions:
        total += attribution.uncached_tokens
        for cause, tokens in attribution.by_cause.items():
            by_cause[cause] = by_cause.get(cause, 0) + tokens
    return total, by_cause


# -- what a client sent through the gateway ------------------------------------------------


CLIENT_CHANGES: frozenset[str] = frozenset(CAUSES[CAUSES.index("system_changed") :])
"""The causes that name something a client changed between two of its requests."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientRequest:
    """A body a client sent through the gateway, rebuilt from the log."""

    key: str
    number: int
    session_id: str
    """The run it was recorded in (``key``, ``key~2``, ...)."""
    wire: str
    at: datetime
    first_byte_after: timedelta | None
    body: dict[str, Any]


def body_delta(base: Mapping[str, Any] | None, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``body`` as a change from ``base``: changed top-level values, extended lists, dropped keys.

    A list whose first items are the base's (the messages, most often) keeps only what follows
    them; :func:`apply_delta` puts the body back together exactly."""
    fields: dict[str, Any] = {}
    lists: dict[str, Any] = {}
    for name, value in body.items():
        before = None if base is None else base.get(name, _MISSING)
        if base is not None and before == value and name in base:
            continue
        if isinstance(value, list) and isinstance(before, list) and before:
            kept = 0
            while kept < min(len(before), len(value)) and before[kept] == value[kept]:
                kept += 1
            if kept:
                lists[name] = {"kept": kept, "items": value[kept:]}
                continue
        fields[name] = value
    dropped = [name for name in (base or {}) if name not in body]
    return fields, lists, dropped


_MISSING = object()


def apply_delta(
    base: Mapping[str, Any] | None, fields: Mapping[str, Any], lists: Mapping[str, Any], dropped: Iterable[str]
) -> dict[str, Any]:
    """The body :func:`body_delta` described, on ``base`` (plain, mutable values)."""
    body = {name: value for name, value in to_plain(base or {}).items() if name not in set(dropped)}
    body.update(to_plain(fields))
    for name, extension in lists.items():
        body[name] = list(to_plain(base or {}).get(name, []))[: extension["kept"]] + to_plain(extension["items"])
    return body


def client_requests(events: Iterable[Event]) -> dict[str, list[ClientRequest]]:
    """Per session key, the bodies its client sent, in order (events of any sessions; runs of one key are joined).

    A body stored against one the log no longer holds is left out."""
    received = sorted(
        (e for e in events if e.type == "gateway.request.received"), key=lambda e: (e.payload.key, e.payload.number, e.at)
    )
    out: dict[str, list[ClientRequest]] = {}
    bodies: dict[tuple[str, int], dict[str, Any]] = {}
    for event in received:
        p = event.payload
        if p.base is not None and (p.key, p.base) not in bodies:
            continue
        base = bodies.get((p.key, p.base)) if p.base is not None else None
        body = apply_delta(base, p.fields, p.lists, p.dropped)
        bodies[(p.key, p.number)] = body
        out.setdefault(p.key, []).append(
            ClientRequest(
                key=p.key,
                number=p.number,
                session_id=event.session_id,
                wire=p.wire,
                at=datetime.fromisoformat(p.received_at),
                first_byte_after=None if p.first_byte_ms is None else timedelta(milliseconds=p.first_byte_ms),
                body=body,
            )
        )
    return out


def client_misses(requests: Sequence[ClientRequest], *, count_tokens: CountTokens) -> list[tuple[ClientRequest, Attribution]]:
    """Each of one key's client requests attributed against the one before it, under its wire's provider's rules.

    What the client changed between two requests is named (``system_changed``, ``tools_changed``,
    ``model_switch``, ``thinking_stripped``, ``message_edited``, ...), whichever run each went to."""
    if not requests:
        return []
    rule_set: RuleSet = "anthropic" if requests[0].wire == "anthropic" else "openai"
    session = SessionMisses(rule_set=rule_set, count_tokens=count_tokens)
    return [
        (request, session.add(request.at, request.body, first_token_after=request.first_byte_after or timedelta(0)))
        for request in requests
    ]
