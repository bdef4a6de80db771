"""Session rules the log enforces at append time, from the log alone.

A session whose log holds a tool result without its call, or another session's plan,
fails on every later build; so the log refuses such events before they are written:

* ``orphaned_tool_result``: a ``tool.result`` in a session where no tool call was ever made;
* ``unknown_tool_call``: a ``tool.result`` whose ``call_id`` no earlier tool call carries;
* ``second_tool_result``: a second ``tool.result`` for one call;
* ``foreign_plan``: a plan event whose plan names another session (or none);
* ``foreign_request``: a ``context.request.built`` out of this session's request order
  (its index is not the next one), or for an epoch whose plan has another prefix hash.

Adapters keep a small index (tool calls and whether they were answered, the prefix hash
of each epoch, the number of requests built) updated in the same transaction as the
events, and answer :class:`IndexReader` queries from it, so checking costs one indexed
lookup per event rather than a read of the whole session. (SQLite keeps only the open
calls, in the session row; whether another call was answered or never made only names
the rule a refused batch breaks, and is read from its events then.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from contextwright.canonical import parse_canonical
from contextwright.errors import ContextwrightError, SessionInvariantViolated
from contextwright.events.limits import with_fresh_stack
from contextwright.events.registry import decode_stored_payload

CHECKED_TYPES = frozenset(
    {"message.assistant", "tool.result", "context.plan.created", "context.epoch.rotated", "context.request.built"}
)


class IndexReader(Protocol):
    """What the rules ask an adapter about the session's stored events."""

    def call_states(self, call_ids: Sequence[str]) -> Mapping[str, bool]:
        """For each known call id: True when it has a result. Unknown ids are absent."""
        ...

    def any_calls(self) -> bool:
        """True when the session holds at least one tool call."""
        ...

    def plan_prefixes(self) -> Mapping[int, str]:
        """The prefix hash of each epoch that has a plan."""
        ...

    def requests_built(self) -> int:
        """How many ``context.request.built`` events the session holds."""
        ...


@dataclass(kw_only=True, slots=True)
class IndexChanges:
    """What an accepted batch adds to the index; adapters store it with the events."""

    calls_opened: list[tuple[str, int]] = field(default_factory=list)
    """(call id, seq of the assistant message); a reused id starts over as unanswered."""
    calls_answered: list[tuple[str, int]] = field(default_factory=list)
    """(call id, seq of its result)."""
    plans: list[tuple[int, str]] = field(default_factory=list)
    """(epoch, prefix hash)."""
    requests_built: int | None = None
    """The new count of built requests, when the batch built any."""

    def call_updates(self) -> list[tuple[int, str, bool]]:
        """(seq, call id, answered) in seq order: the order adapters must apply them in."""
        opened = [(seq, call_id, False) for call_id, seq in self.calls_opened]
        answered = [(seq, call_id, True) for call_id, seq in self.calls_answered]
        return sorted(opened + answered)

    def call_rows(self) -> tuple[list[tuple[str, int, int | None]], list[tuple[str, int]]]:
        """The calls' state after the batch, in two order-free lists an adapter can write in bulk.

        First (call id, call seq, result seq or None) for each call the batch opened (the
        whole row), then (call id, result seq) for each earlier call it answered.
        """
        if not self.calls_answered:  # the usual batches: calls opened, or one result
            return [(c, s, None) for c, s in dict(self.calls_opened).items()], []
        if not self.calls_opened:
            return [], list(dict(self.calls_answered).items())
        opened: dict[str, tuple[int, int | None]] = {}
        answered: dict[str, int] = {}
        for seq, call_id, is_result in self.call_updates():
            if not is_result:
                opened[call_id] = (seq, None)  # a reused id starts over, whatever came before
                answered.pop(call_id, None)
            elif call_id in opened:
                opened[call_id] = (opened[call_id][0], seq)
            else:
                answered[call_id] = seq
        return [(c, s, r) for c, (s, r) in opened.items()], list(answered.items())

    @property
    def empty(self) -> bool:
        """True when the batch touches no indexed fact."""
        return not (self.calls_opened or self.calls_answered or self.plans) and self.requests_built is None


class Staged(Protocol):
    """An event about to be stored, as the rules read it (the log's ``PreparedEvent``)."""

    @property
    def type(self) -> str:
        """The event type name."""
        ...

    def typed_payload(self) -> Any:
        """The typed payload."""
        ...


def check_batch(session_id: str, events: Sequence[Staged], reader: IndexReader, *, first_seq: int) -> IndexChanges:
    """Check a batch stored from ``first_seq`` on against the session's rules.

    Returns the index changes, or raises ``SessionInvariantViolated``.
    """
    changes = IndexChanges()
    for e in events:
        if e.type in CHECKED_TYPES:
            break
    else:
        return changes  # most batches (user messages, frames) touch no rule
    payloads = [e.typed_payload() for e in events]
    asked = calls_to_look_up(events)
    stored = dict(reader.call_states(asked)) if asked else {}
    calls: dict[str, bool] = {}
    plans: dict[int, str] | None = None
    requests: int | None = None
    any_call: bool | None = None
    for index, (event, payload) in enumerate(zip(events, payloads, strict=True)):
        seq = first_seq + index
        match event.type:
            case "message.assistant":
                for call in payload.tool_calls:
                    calls[call.id] = False
                    changes.calls_opened.append((call.id, seq))
            case "tool.result":
                call_id = payload.call_id
                answered = calls.get(call_id, stored.get(call_id))
                if answered is None:
                    if any_call is None:
                        any_call = bool(calls) or reader.any_calls()
                    if not any_call:
                        raise _refused(
                            session_id,
                            index,
                            "orphaned_tool_result",
                            f"a result for call {call_id!r}, but no tool call was ever made",
                        )
                    raise _refused(
                        session_id,
                        index,
                        "unknown_tool_call",
                        f"a result for call {call_id!r}, which no tool call of this session has",
                    )
                if answered:
                    raise _refused(session_id, index, "second_tool_result", f"call {call_id!r} already has its result")
                calls[call_id] = True
                changes.calls_answered.append((call_id, seq))
            case "context.plan.created" | "context.epoch.rotated":
                owner = payload.plan.get("session_id")
                if owner != session_id:
                    raise _refused(session_id, index, "foreign_plan", f"the plan is for session {owner!r}")
                if plans is None:
                    plans = dict(reader.plan_prefixes())
                plans[payload.epoch] = payload.prefix_sha256
                changes.plans.append((payload.epoch, payload.prefix_sha256))
            case "context.request.built":
                if requests is None:
                    requests = reader.requests_built()
                if plans is None:
                    plans = dict(reader.plan_prefixes())
                if payload.request_index != requests:
                    raise _refused(
                        session_id,
                        index,
                        "foreign_request",
                        f"request index {payload.request_index}, but this session's next request is {requests}",
                    )
                # A log with no plan at all (a hand-written or imported one) is checked for order only.
                if plans and plans.get(payload.epoch) != payload.prefix_sha256:
                    raise _refused(
                        session_id,
                        index,
                        "foreign_request",
                        f"epoch {payload.epoch} of this session has prefix {plans.get(payload.epoch)!r}, "
                        f"not {payload.prefix_sha256!r}",
                    )
                requests += 1
                changes.requests_built = requests
    return changes


def calls_to_look_up(events: Sequence[Staged]) -> list[str]:
    """The call ids :func:`check_batch` asks the store about, in order.

    Those of the results whose call no earlier event of the batch opens: a call opened in
    the batch has its state from the batch itself.
    """
    opened_here: set[str] = set()
    asked: list[str] = []
    for e in events:
        if e.type == "message.assistant":
            opened_here.update(call.id for call in e.typed_payload().tool_calls)
        elif e.type == "tool.result":
            call_id = e.typed_payload().call_id
            if call_id not in opened_here:
                asked.append(call_id)
    return asked


def _refused(session_id: str, index: int, rule: str, problem: str) -> SessionInvariantViolated:
    return SessionInvariantViolated(session_id, rule=rule, problem=problem, index=index)


def rebuild_index(rows: Iterable[tuple[int, str, str]]) -> IndexChanges:
    """The whole index of a session from its stored (seq, type, payload JSON) rows, in seq order.

    Used by migrations (to index events stored before the index existed) and by ``verify``.
    Events are folded as stored, without refusing anything: a stored log is history.
    """
    changes = IndexChanges()
    requests = 0
    for seq, type_name, payload_json in rows:
        if type_name not in CHECKED_TYPES:
            continue
        try:
            payload = with_fresh_stack(_decode, type_name, payload_json)
        except (ContextwrightError, RecursionError):
            continue  # an undecodable payload is verify's to report; it adds nothing to the index
        match type_name:
            case "message.assistant":
                changes.calls_opened += [(call.id, seq) for call in payload.tool_calls]
            case "tool.result":
                changes.calls_answered.append((payload.call_id, seq))
            case "context.plan.created" | "context.epoch.rotated":
                changes.plans.append((payload.epoch, payload.prefix_sha256))
            case "context.request.built":
                requests += 1
                changes.requests_built = requests
    return changes


def _decode(type_name: str, payload_json: str) -> Any:
    return decode_stored_payload(type_name, parse_canonical(payload_json))


def final_index(changes: IndexChanges) -> tuple[dict[str, bool], dict[int, str], int]:
    """The index state after ``changes`` applied in order to an empty session: calls, plans, requests."""
    calls = {call_id: answered for _, call_id, answered in changes.call_updates()}
    return calls, dict(changes.plans), changes.requests_built or 0
