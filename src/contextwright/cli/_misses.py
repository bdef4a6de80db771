"""Every uncached input token of a session put on a cause, for ``replay`` and ``stats --misses``.

The bodies come from the requests a replay just built, or from a stored session's requests
rebuilt from the log byte for byte; the causes are
:func:`contextwright.telemetry.misses.attribute_session`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from contextwright.models import anthropic, openai, with_window
from contextwright.pricing.cache_sim import UnsupportedSimulation
from contextwright.pricing.prices import UnknownModel
from contextwright.runtime.engine import Engine
from contextwright.runtime.requests import BuiltRequest
from contextwright.telemetry.records import SessionSummary

__all__ = ["Misses", "attributed_summary", "client_miss_lines", "miss_lines"]

RuleSet = Literal["anthropic", "openai"]

_RULE_WIRES = {"anthropic": "anthropic", "openai": "openai_chat"}
"""The wire each provider rule set simulates."""


@dataclass(kw_only=True, slots=True)
class Misses:
    """Every uncached input token of each replayed session put on a cause (offline cache simulation).

    The replay's own provider gives the causes; the other provider's rules give its predicted
    reads and writes for the same requests, rendered for its wire."""

    model_id: str
    provider: str
    wire: str
    window: int
    by_session: dict[str, dict[int, Any]] = field(default_factory=dict)
    by_rule_set: dict[str, dict[str, dict[str, int] | None]] = field(default_factory=dict)
    counter: Any = None

    def built(self, session_id: str, events: list[Any], requests: list[BuiltRequest]) -> dict[int, Any]:
        """Attribute the requests a replay just built."""

        def bodies(wire: str) -> dict[int, dict[str, Any]]:
            if wire == self.wire:
                return {built.index: built.body(wire) for built in requests}
            renderer, caps, model_id = self._other(wire)
            return {
                built.index: {**renderer.render(built.neutral, caps, previous=built.previous), "model": model_id}
                for built in requests
            }

        return self._attribute(session_id, events, bodies)

    def _other(self, wire: str) -> tuple[Any, Any, str]:
        """Another provider's renderer, its capabilities at the same window, and the model its rules are read for."""
        from contextwright.providers.capabilities import capabilities_for
        from contextwright.providers.wires import wire_named

        other = openai("gpt-4.1") if wire.startswith("openai") else anthropic("claude-sonnet-4-6")
        return wire_named(wire), capabilities_for(with_window(other, self.window)), other.id

    def stored(self, engine: Engine, session_id: str, events: list[Any]) -> dict[int, Any]:
        """Attribute a stored session's requests, rebuilt from the log byte for byte."""
        from contextwright.providers.capabilities import capabilities_for
        from contextwright.providers.wires import wire_named
        from contextwright.runtime.reopen import reopen

        indexes = [e.payload.request_index for e in events if e.type == "context.request.built"]
        if not indexes:
            return {}
        session = reopen(engine, session_id)
        neutrals = [session.inspect(index) for index in indexes]

        def bodies(wire: str) -> dict[int, dict[str, Any]]:
            renderer, caps, model_id = (
                (wire_named(wire), capabilities_for(session.model), None) if wire == self.wire else self._other(wire)
            )
            out: dict[int, dict[str, Any]] = {}
            previous = None
            for index, neutral in zip(indexes, neutrals, strict=True):
                same_epoch = previous if previous is not None and previous.epoch == neutral.epoch else None
                body = renderer.render(neutral, caps, previous=same_epoch)
                out[index] = body if model_id is None else {**body, "model": model_id}
                previous = neutral
            return out

        return self._attribute(session_id, events, bodies)

    def _attribute(
        self, session_id: str, events: list[Any], bodies: Callable[[str], dict[int, dict[str, Any]]]
    ) -> dict[int, Any]:
        from contextwright.compare import TokenCounter
        from contextwright.errors import ContextwrightError
        from contextwright.telemetry.misses import answer_delays, attribute_session, engine_changes

        if self.counter is None:
            self.counter = TokenCounter(self.model_id)  # exact (o200k) when tiktoken is installed
        times = {e.payload.request_index: e.at for e in events if e.type == "context.request.built"}
        changes = engine_changes(events)
        delays = answer_delays(events)
        order: tuple[RuleSet, RuleSet] = ("anthropic", "openai") if self.provider == "anthropic" else ("openai", "anthropic")
        own = order[0]
        found: dict[int, Any] = {}
        per_rule: dict[str, dict[str, int] | None] = {}
        for rule_set in order:
            try:
                ordered = [(i, times[i], body) for i, body in sorted(bodies(_RULE_WIRES[rule_set]).items()) if i in times]
                attributed = attribute_session(
                    ordered, rule_set=rule_set, count_tokens=self.counter, changes=changes, answered_after=delays
                )
            except ContextwrightError:
                if rule_set == own:
                    raise
                per_rule[rule_set] = None  # these requests do not render for the other wire
                continue
            if rule_set == own:
                found = attributed
            per_rule[rule_set] = {
                "cache_read_tokens": sum(a.predicted.cache_read_tokens for a in attributed.values()),
                "cache_write_tokens": sum(a.predicted.cache_write_tokens for a in attributed.values()),
                "uncached_input_tokens": sum(a.uncached_tokens for a in attributed.values()),
            }
        self.by_session[session_id] = found
        self.by_rule_set[session_id] = per_rule
        return found


def attributed_summary(engine: Engine, summary: SessionSummary) -> SessionSummary:
    """``summary`` again, with every request rebuilt and its cache misses attributed (its provider's rules)."""
    from contextwright.providers.wires import default_wire
    from contextwright.telemetry.misses import with_misses
    from contextwright.telemetry.records import request_records, summarize

    events = engine.log.read(summary.session_id)
    provider = summary.provider or "anthropic"
    if provider not in _RULE_WIRES:
        known = " and ".join(_RULE_WIRES)
        return replace(summary, miss_problem=f"misses are attributed under the {known} cache rules only, not {provider}'s")
    misses = Misses(
        model_id=summary.model or "claude-sonnet-4-6",
        provider=provider,
        wire=default_wire(provider),
        window=summary.context_window or 200_000,
    )
    try:
        found = misses.stored(engine, summary.session_id, events)
    except (UnknownModel, UnsupportedSimulation) as exc:
        # A model without cache rules, or a body the simulator cannot replay: the plain summary, and why.
        return replace(summary, miss_problem=str(exc).split(";")[0])
    return summarize(events, records=with_misses(request_records(events), found))


def miss_lines(summary: SessionSummary) -> list[str]:
    """What ``stats --misses`` says of one session: uncached input by cause, predictions against reports."""
    if summary.miss_problem:
        return [f"{summary.session_id}: cache misses not simulated: {summary.miss_problem}"]
    total = summary.uncached_input_tokens
    if not total:
        return [f"{summary.session_id}: every input token read from cache, or no request to simulate"]
    parts = ", ".join(
        f"{cause.replace('_', ' ')} {tokens / total:.1%}"
        for cause, tokens in sorted(summary.uncached_by_cause.items(), key=lambda kv: -kv[1])
    )
    lines = [f"{summary.session_id}: {total:,} uncached input tokens (offline simulation): {parts}"]
    if summary.predictions_checked:
        lines.append(
            f"  predicted against reported cache reads: {summary.predictions_flagged} of {summary.predictions_checked} "
            "request(s) differ by more than 10 points"
        )
    return lines


def client_miss_lines(log: Any, *, count_tokens: Callable[[str], int] | None = None) -> list[str]:
    """What ``stats --misses`` says of each session key seen through the gateway: the client's own bodies attributed.

    Each request is compared with the one the client sent before it under the same key, across
    the key's runs, so what opened a new run (a new system text or tool array, a model switch,
    stripped thinking, an edited message) is named."""
    from contextwright.compare import TokenCounter
    from contextwright.telemetry.misses import CLIENT_CHANGES, client_misses, client_requests, session_misses

    by_key = client_requests(e for session_id in log.sessions() for e in log.read(session_id))
    lines: list[str] = []
    for key, requests in by_key.items():
        try:
            found = client_misses(requests, count_tokens=count_tokens or TokenCounter(requests[0].body.get("model") or ""))
        except (UnknownModel, UnsupportedSimulation) as exc:
            lines.append(f"gateway session {key}: cache misses not simulated: {str(exc).split(';')[0]}")
            continue
        total, by_cause = session_misses(a for _, a in found)
        runs = len({r.session_id for r in requests})
        head = f"gateway session {key}: {len(requests)} client request(s) over {runs} run(s)"
        if not total:
            lines.append(f"{head}, every input token read from cache")
            continue
        parts = ", ".join(
            f"{cause.replace('_', ' ')} {tokens / total:.1%}" for cause, tokens in sorted(by_cause.items(), key=lambda kv: -kv[1])
        )
        lines.append(f"{head}, {total:,} uncached input tokens (the client's bodies, offline simulation): {parts}")
        for request, attribution in found:
            for cause, tokens in attribution.by_cause.items():
                if cause in CLIENT_CHANGES:
                    lines.append(
                        f"  request {request.number} ({request.session_id}): {cause.replace('_', ' ')}, "
                        f"{tokens:,} of {attribution.uncached_tokens:,} uncached tokens"
                    )
    return lines
