"""Every cache miss of a session named, derived from its log and the bodies it sent.

The log is the system of record: nothing here is stored. :func:`engine_changes` reads,
per request, what the engine did since the request before it (pruning passes, layers
truncated by relief, compactions, new prefix epochs) and the relief passes of the
request's own build. :func:`attribute_session` replays the session's bodies through an
offline cache simulator (one per provider rule set) and hands each request to
:func:`~contextwright.providers.cache_sim.attribution.attribute`, which puts every
uncached input token on one cause. :func:`with_misses` attaches the result to the
request records, so summaries, reports and telemetry carry it.

The bodies come from whoever holds them: the replay (it built them), the runtime (a
session rebuilds any request byte for byte), or a gateway (what the client sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal

from contextwright.events.envelope import Event
from contextwright.providers.cache_sim.anthropic import AnthropicCacheSimulator
from contextwright.providers.cache_sim.attribution import Attribution, Change, Observed, attribute, observe
from contextwright.providers.cache_sim.base import CountTokens, SimRequest
from contextwright.providers.cache_sim.openai import OpenAICacheSimulator
from contextwright.telemetry.records import RequestRecord

__all__ = ["SessionMisses", "answer_delays", "attribute_session", "engine_changes", "session_misses", "with_misses"]

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
    :class:`~contextwright.providers.pricing.UnknownModel`.
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
