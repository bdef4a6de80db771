"""Facts a session looks up on every request, followed through the log one event at a time.

Each request needs a few facts that a scan of the whole log would give: the last
request built, the memory erased and corrected, the tools revoked, how many answers
the model gave since a given point, the tool names it has called, the latest plan's seq
and the provider's prefix counts. The log only grows,
so :class:`LogFacts` follows it: each event is looked at once, when first read, and a
lookup costs what it returns, not the history. Every fact equals the scan it replaces
(the functions in ``memory_rules`` and ``ToolPolicy.from_events``; a test compares them).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from contextwright.clock import format_instant, parse_instant
from contextwright.derive._checkpoint_values import checked_count as _count
from contextwright.derive._checkpoint_values import checked_text as _text
from contextwright.errors import CheckpointRejected
from contextwright.events.catalog import RequestBuilt
from contextwright.events.envelope import Event
from contextwright.events.registry import decode_stored_payload, encode_payload
from contextwright.policy.tools import ToolPolicy
from contextwright.runtime.history_facts import HistoryFacts
from contextwright.runtime.limits import FORCED_REVOCATION

__all__ = ["LogFacts"]


class LogFacts:
    """What the events read so far say, each event looked at once."""

    def __init__(self) -> None:
        self.seen = 0
        """How many events have been followed."""
        self.requests_built = 0
        self.last_built: RequestBuilt | None = None
        self.last_built_at: datetime | None = None
        """When the last request was built: what it read from the provider's cache lives from then on."""
        self.last_event_at: datetime | None = None
        """When the latest event was recorded."""
        self._erased: set[str] = set()
        self._erased_frozen: frozenset[str] = frozenset()
        self.corrected: dict[str, str] = {}
        """The latest corrected text of each memory item corrected."""
        self._revoked: set[str] = set()
        self._policy = ToolPolicy()
        self.forced_revocations: list[str] = []
        """Tools revoked at once by an operator, in order (they leave the prefix)."""
        self._answers: list[int] = []
        """Seqs of the model's answers, in order."""
        self.called_names: set[str] = set()
        """Every tool name the model's answers called."""
        self.plan_seq = 0
        """The seq of the latest plan event (0 when there is none)."""
        self.counted_prefixes: dict[int, int] = {}
        """The provider's exact prefix counts by epoch (the first logged for an epoch wins)."""
        self.history = HistoryFacts()
        """Stages, artifacts, child runs, pointers and memory texts."""

    def follow(self, events: Sequence[Event]) -> LogFacts:
        """Take in the events of ``events`` after :attr:`seen` (in seq order; earlier ones are skipped).

        Seqs start at 1 and have no gaps, so :attr:`seen` is also the seq of the last event followed."""
        if not events or events[-1].seq <= self.seen:
            return self
        changed_erased = changed_policy = False
        history = self.history
        for event in events:
            if event.seq <= self.seen:
                continue
            history.take(event)
            kind = event.type
            if kind == "context.request.built":
                self.requests_built += 1
                self.last_built = event.payload
                self.last_built_at = event.at
            elif kind == "message.assistant":
                self._answers.append(event.seq)
                self.called_names.update(call.name for call in event.payload.tool_calls)
            elif kind == "memory.erased":
                self._erased.add(event.payload.memory_id)
                changed_erased = True
            elif kind == "memory.corrected":
                self.corrected[event.payload.memory_id] = event.payload.text
            elif kind == "tool.revoked":
                self._revoked.add(event.payload.tool)
                changed_policy = True
                if event.payload.reason == FORCED_REVOCATION:
                    self.forced_revocations.append(event.payload.tool)
            elif kind == "tool.restored":
                self._revoked.discard(event.payload.tool)
                changed_policy = True
            elif kind in ("context.plan.created", "context.epoch.rotated"):
                self.plan_seq = event.seq
            elif kind == "context.prefix.counted":
                self.counted_prefixes.setdefault(event.payload.epoch, event.payload.input_tokens)
        self.seen = events[-1].seq
        self.last_event_at = events[-1].at
        if changed_erased:
            self._erased_frozen = frozenset(self._erased)
        if changed_policy:
            self._policy = ToolPolicy(revoked=frozenset(self._revoked))
        return self

    @property
    def erased_memory(self) -> frozenset[str]:
        """Memory items erased in this session."""
        return self._erased_frozen

    @property
    def policy(self) -> ToolPolicy:
        """The tools revoked now."""
        return self._policy

    def corrected_memory(self) -> Mapping[str, str]:
        """The latest corrected text of each memory item corrected in this session."""
        return self.corrected

    def answers_after(self, seq: int) -> int:
        """How many answers the model gave after ``seq``."""
        return len(self._answers) - bisect.bisect_right(self._answers, seq)

    def snapshot(self) -> dict[str, Any]:
        """The facts as plain JSON data (for a session checkpoint; :meth:`restore` reads it back)."""
        return {
            "seen": self.seen,
            "requests_built": self.requests_built,
            "last_built": None if self.last_built is None else encode_payload(self.last_built),
            "last_built_at": None if self.last_built_at is None else format_instant(self.last_built_at),
            "last_event_at": None if self.last_event_at is None else format_instant(self.last_event_at),
            "erased": sorted(self._erased),
            "corrected": [[memory_id, text] for memory_id, text in self.corrected.items()],
            "revoked": sorted(self._revoked),
            "forced_revocations": list(self.forced_revocations),
            "answers": list(self._answers),
            "called_names": sorted(self.called_names),
            "plan_seq": self.plan_seq,
            "counted_prefixes": [[epoch, tokens] for epoch, tokens in self.counted_prefixes.items()],
            "history": self.history.snapshot(),
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any]) -> LogFacts:
        """The facts :meth:`snapshot` wrote; a malformed value raises (the caller folds the log instead)."""
        facts = cls()
        facts.seen = _count(data["seen"])
        facts.requests_built = _count(data["requests_built"])
        last = data["last_built"]
        if last is not None:
            payload = decode_stored_payload("context.request.built", last)
            if not isinstance(payload, RequestBuilt):
                raise CheckpointRejected("the last request built is not a request")
            facts.last_built = payload
        facts.last_built_at = _instant(data["last_built_at"])
        facts.last_event_at = _instant(data["last_event_at"])
        facts._erased = {_text(m) for m in data["erased"]}
        facts._erased_frozen = frozenset(facts._erased)
        facts.corrected = {_text(m): _text(t) for m, t in data["corrected"]}
        facts._revoked = {_text(t) for t in data["revoked"]}
        facts._policy = ToolPolicy(revoked=frozenset(facts._revoked))
        facts.forced_revocations = [_text(t) for t in data["forced_revocations"]]
        facts._answers = [_count(seq) for seq in data["answers"]]
        facts.called_names = {_text(name) for name in data["called_names"]}
        facts.plan_seq = _count(data["plan_seq"])
        facts.counted_prefixes = {_count(epoch): _count(tokens) for epoch, tokens in data["counted_prefixes"]}
        facts.history = HistoryFacts.restore(data["history"])
        return facts


def _instant(value: Any) -> datetime | None:
    return None if value is None else parse_instant(_text(value))
