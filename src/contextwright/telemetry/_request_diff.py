"""What changed between two rebuilt requests, block by block, with where each block came from.

A request is read as a list of :class:`Block`: its system blocks, its tool definitions,
then every part of every message. Each block carries its provenance: the event it was
rendered from (``ref``), what shaped it on the way (shown whole, compressed or capped on
arrival, a bounded view, a pointer stub left by a pruning pass, a repeat stub, a
compaction's summary, a read-back), its envelope and trust, its budget class and layer.

:func:`diff_requests` matches the blocks of request N against those of N−1, first by
identity (the kind, the event reference and the tool call id) and then, for what is left,
by content hash (a tail block whose reference names a new cut point, say). Every block
of N is ``kept``, ``changed``, ``moved`` or ``added``; every block of N−1 that has no
partner is ``removed``. Each change names its cause when the log says one (a pruning
pass, a compaction, a relief yield, a new epoch, the volatile tail), and each block of N
its cache standing by prefix match: blocks before the first difference were sent
identically before (``read``), the rest are ``written`` or never cached (``volatile``).

Everything here is pure: the requests come rebuilt (``Session.inspect``), the events from the log.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from contextwright.assembly.request import NeutralRequest, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from contextwright.canonical import canonical_json, sha256_tagged
from contextwright.events.envelope import Event
from contextwright.items.region_a import READ_TOOL_NAME
from contextwright.tool_outputs.cap import MARKER_RE

__all__ = [
    "CAUSE_KINDS",
    "Block",
    "BlockChange",
    "RequestDiff",
    "blocks_of",
    "diff_requests",
    "event_seq",
    "request_cut",
]

Status = Literal["kept", "changed", "moved", "added", "removed"]
CacheStanding = Literal["read", "written", "volatile", "gone"]

CAUSE_KINDS: Final = (
    "new",
    "pruned",
    "compacted",
    "stage_closed",
    "recall_yield",
    "bounded",
    "epoch",
    "first_request",
    "volatile_tail",
    "moved",
    "relabelled",
    "rendered",
    "unexplained",
)
"""Why a block differs from the request before, as one word each."""
BOUNDED_MARKER: Final = re.compile(r"\[\.\.\. [\d,]+ of [\d,]+ characters not shown here")
"""The marker of a bounded view (``assembly/bounded.py``): its head and tail shown."""
REPEAT_STUB: Final = re.compile(r"^\[(?:same output as call|this attempt failed; call)")
_ENVELOPES: Final = {"platform": "none (platform text)", "assistant": "none (the model's own words)"}
POINTER_STUB: Final = re.compile(r"^\[[^\]\n]* output \([^)]*\) (?:out of|removed from) context;")


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One block of a request as the model reads it, with its provenance."""

    position: int
    """Its place in the request, counting system blocks, tools, then message parts."""
    where: str
    """Where it stands, for a person: ``system 0``, ``tool run_tests``, ``message 4 (user)``."""
    kind: str
    """``system``, ``tool``, ``text``, ``tool_call``, ``tool_result`` or ``reasoning``."""
    ref: str
    """The event it came from (``session#seq``, with a suffix for a part of one), or ``prefix/...``."""
    call_id: str | None
    sha256: str
    """Hash of what the provider receives of the block (its labels left out): equal hashes, equal bytes sent."""
    text: str
    """What the model reads in it (a tool call as name and arguments; reasoning as a size)."""
    budget_class: str
    layer: str
    trust: str
    """The envelope's trust level (``platform``: no envelope)."""
    volatile: bool
    shaped_by: str
    """What made it look as it does: ``whole``, ``compressed on arrival (...)``, ``pointer (pruned)`` and so on."""
    event_type: str | None
    """The type of the event it came from, when it came from one."""

    @property
    def key(self) -> tuple[str, str, str]:
        """Identity across requests: kind, event reference and call id."""
        return (self.kind, self.ref, self.call_id or "")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "position": self.position,
            "where": self.where,
            "kind": self.kind,
            "ref": self.ref,
            "call_id": self.call_id,
            "sha256": self.sha256,
            "chars": len(self.text),
            "budget_class": self.budget_class,
            "layer": self.layer,
            "trust": self.trust,
            "envelope": _ENVELOPES.get(self.trust, f"enveloped at {self.trust}"),
            "volatile": self.volatile,
            "shaped_by": self.shaped_by,
            "event_type": self.event_type,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class BlockChange:
    """One block's standing in request N against request N−1."""

    status: Status
    before: Block | None
    after: Block | None
    cache: CacheStanding
    """By prefix match with request N−1: ``read`` (sent identically before it), ``written``, ``volatile`` (the
    tail, never cached) or ``gone`` (a removed block)."""
    cause: str
    """Why it changed, from the log (empty for a kept block)."""
    cause_kind: str = ""
    """The cause as one word of :data:`CAUSE_KINDS` (empty for a kept block)."""

    @property
    def block(self) -> Block:
        """The block as request N shows it, or as N−1 did for a removed one."""
        shown = self.after if self.after is not None else self.before
        if shown is None:  # every change is built with one of the two
            raise AssertionError("a block change with neither block")
        return shown

    def to_dict(self, *, text_chars: int = 600) -> dict[str, Any]:
        """Plain JSON values; each block's text cut to ``text_chars`` (its hash stands for the whole)."""
        out: dict[str, Any] = {"status": self.status, "cache": self.cache, "cause": self.cause, "cause_kind": self.cause_kind}
        for name, block in (("before", self.before), ("after", self.after)):
            if block is None:
                out[name] = None
            else:
                out[name] = {**block.to_dict(), "text": block.text[:text_chars]}
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class RequestDiff:
    """Request ``index`` against the request before it."""

    index: int
    previous: int | None
    """The request compared against (None for the first request: every block is added)."""
    epoch: int
    previous_epoch: int | None
    prefix_changed: bool
    changes: tuple[BlockChange, ...]
    """Request N's blocks in order, each with its status, then the removed blocks of N−1."""
    first_difference: int | None
    """The position in N of the first block not sent identically in N−1 (None when all were)."""
    events_between: Mapping[str, int]
    """Events recorded between the two requests' cut points, by type."""

    @property
    def causes(self) -> dict[str, int]:
        """Blocks added, changed, moved or removed, by cause kind, in :data:`CAUSE_KINDS` order."""
        counted = Counter(c.cause_kind for c in self.changes if c.status != "kept")
        return {kind: counted[kind] for kind in CAUSE_KINDS if counted[kind]}

    def count(self, status: Status) -> int:
        """How many blocks have ``status``."""
        return sum(1 for change in self.changes if change.status == status)

    def to_dict(self, *, text_chars: int = 600) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "index": self.index,
            "previous": self.previous,
            "epoch": self.epoch,
            "previous_epoch": self.previous_epoch,
            "prefix_changed": self.prefix_changed,
            "first_difference": self.first_difference,
            "counts": {s: self.count(s) for s in ("kept", "changed", "moved", "added", "removed")},
            "causes": self.causes,
            "events_between": dict(self.events_between),
            "changes": [c.to_dict(text_chars=text_chars) for c in self.changes],
        }


def event_seq(ref: str) -> int | None:
    """The seq of the event ``ref`` names (``session#seq`` with any suffix), or None."""
    _, sep, rest = ref.rpartition("#")
    if not sep:
        return None
    digits = rest.split("/", 1)[0]
    return int(digits) if digits.isdigit() else None


def request_cut(events: Sequence[Event], index: int) -> tuple[Event, int]:
    """The ``context.request.built`` event of request ``index`` and the seq its history stops at."""
    built = [e for e in events if e.type == "context.request.built"]
    if not 0 <= index < len(built):
        raise IndexError(f"the session has {len(built)} recorded requests; there is no request {index}")
    event = built[index]
    inputs = event.payload.inputs or {}
    return event, int(inputs.get("upto_seq", event.seq - 1))


def blocks_of(request: NeutralRequest, events: Mapping[int, Event] | Sequence[Event]) -> list[Block]:
    """Every block of ``request``, in order, with its provenance read from ``events`` (by seq or in order)."""
    by_seq = events if isinstance(events, Mapping) else {e.seq: e for e in events}
    blocks: list[Block] = []

    def add(**fields: Any) -> None:
        blocks.append(Block(position=len(blocks), **fields))

    for number, system in enumerate(request.system):
        add(
            where=f"system {number}",
            kind="system",
            ref=f"prefix/system/{number}",
            call_id=None,
            sha256=sha256_tagged(canonical_json({"budget_class": system.budget_class, "text": system.text})),
            text=system.text,
            budget_class=system.budget_class,
            layer="prefix",
            trust="platform",
            volatile=False,
            shaped_by=f"prefix of epoch {request.epoch}",
            event_type=None,
        )
    for tool in request.tools:
        shown = {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
        add(
            where=f"tool {tool.name}",
            kind="tool",
            ref=f"prefix/tool/{tool.name}",
            call_id=None,
            sha256=sha256_tagged(canonical_json(shown)),
            text=f"{tool.name}: {tool.description}",
            budget_class="tools",
            layer="prefix",
            trust="platform",
            volatile=False,
            shaped_by=f"prefix of epoch {request.epoch}",
            event_type=None,
        )
    for number, message in enumerate(request.messages):
        for part in message.parts:
            seq = event_seq(part.ref)
            event = by_seq.get(seq) if seq is not None else None
            plain = _plain_part(part)
            common = {
                "where": f"message {number} ({message.role})",
                "kind": part.kind,
                "ref": part.ref,
                "sha256": sha256_tagged(canonical_json(plain)),
                "layer": part.layer,
                "event_type": None if event is None else event.type,
            }
            if isinstance(part, ToolCallPart):
                add(
                    **common,
                    call_id=part.id,
                    text=f"{part.name} {json.dumps(part.arguments, sort_keys=True, ensure_ascii=False)}",
                    budget_class="history",
                    trust="assistant",
                    volatile=False,
                    shaped_by="bounded view of the arguments" if "arguments_view" in part.arguments else "whole",
                )
            elif isinstance(part, ToolResultPart):
                add(
                    **common,
                    call_id=part.call_id,
                    text=part.text,
                    budget_class=part.budget_class,
                    trust=part.trust,
                    volatile=False,
                    shaped_by=_result_shape(part, event, by_seq),
                )
            elif isinstance(part, TextPart):
                add(
                    **common,
                    call_id=None,
                    text=part.text,
                    budget_class=part.budget_class,
                    trust=part.trust,
                    volatile=part.volatile,
                    shaped_by=_text_shape(part, event),
                )
            elif isinstance(part, ReasoningPart):
                add(
                    **common,
                    call_id=None,
                    text=f"[{part.provider} {part.block.get('type', 'reasoning')}, {len(canonical_json(part.block)):,} chars]",
                    budget_class=part.budget_class,
                    trust="platform",
                    volatile=False,
                    shaped_by="verbatim reasoning" + (" (stale: left out where the provider checks it)" if part.stale else ""),
                )
    return blocks


def diff_requests(
    after: NeutralRequest,
    before: NeutralRequest | None,
    events: Sequence[Event],
    *,
    index: int,
) -> RequestDiff:
    """Request ``index`` (``after``) against request ``index - 1`` (``before``; None for the first)."""
    by_seq = {e.seq: e for e in events}
    new = blocks_of(after, by_seq)
    old = blocks_of(before, by_seq) if before is not None else []
    built, upto = request_cut(events, index)
    built_before, since = request_cut(events, index - 1) if before is not None else (None, 0)
    between = [e for e in events if since < e.seq <= upto]
    causes = _Causes(between, built=built, built_before=built_before)
    # Identity first: kind, event reference, call id (in order, for a key seen twice).
    pending: dict[tuple[str, str, str], list[Block]] = {}
    for block in old:
        pending.setdefault(block.key, []).append(block)
    partner: dict[int, Block] = {}
    for block in new:
        candidates = pending.get(block.key)
        if candidates:
            partner[block.position] = candidates.pop(0)
    taken = {id(b) for b in partner.values()}
    # Then content: a block whose reference changed but whose bytes did not (a tail block, say).
    by_hash: dict[str, list[Block]] = {}
    for block in old:
        if id(block) not in taken:
            by_hash.setdefault(block.sha256, []).append(block)
    moved: set[int] = set()
    for block in new:
        if block.position in partner:
            continue
        candidates = by_hash.get(block.sha256)
        if candidates:
            partner[block.position] = candidates.pop(0)
            taken.add(id(partner[block.position]))
            moved.add(block.position)
    same_epoch = before is not None and before.epoch == after.epoch and before.prefix_sha256 == after.prefix_sha256
    # The cache prefix: blocks sent identically, in the same places, before the first difference.
    first: int | None = None
    for block in new:
        match = partner.get(block.position)
        if not same_epoch or match is None or match.sha256 != block.sha256 or match.position != block.position:
            first = block.position
            break
    changes: list[BlockChange] = []
    for block in new:
        match = partner.get(block.position)
        status: Status
        if match is None:
            status = "added"
        elif block.position in moved:
            status = "moved"
        elif match.sha256 != block.sha256:
            status = "changed"
        else:
            status = "kept"
        if block.volatile:
            cache: CacheStanding = "volatile"
        elif first is None or block.position < first:
            cache = "read"
        else:
            cache = "written"
        kind, cause = ("", "") if status == "kept" else causes.of(block, match, status)
        changes.append(BlockChange(status=status, before=match, after=block, cache=cache, cause=cause, cause_kind=kind))
    for block in old:
        if id(block) not in taken:
            kind, cause = causes.of(block, None, "removed")
            changes.append(BlockChange(status="removed", before=block, after=None, cache="gone", cause=cause, cause_kind=kind))
    return RequestDiff(
        index=index,
        previous=None if before is None else index - 1,
        epoch=after.epoch,
        previous_epoch=None if before is None else before.epoch,
        prefix_changed=before is not None and before.prefix_sha256 != after.prefix_sha256,
        changes=tuple(changes),
        first_difference=first,
        events_between=dict(Counter(e.type for e in between)),
    )


class _Causes:
    """Why a block changed between two requests, from the events between their cut points."""

    def __init__(self, between: Sequence[Event], *, built: Event, built_before: Event | None) -> None:
        """``between``: the events after request N−1's cut up to N's; ``built``: request N's record."""
        self.built_before = built_before
        self.yields: tuple[str, ...] = tuple(built.payload.yields)
        self.pruned: dict[str, Event] = {}
        self.compactions: list[Event] = []
        self.rotations: list[Event] = []
        self.decisions: list[Event] = []
        for event in between:
            if event.type == "context.pruned":
                for call_id in event.payload.call_ids:
                    self.pruned.setdefault(call_id, event)
            elif event.type == "context.compacted":
                self.compactions.append(event)
            elif event.type == "context.epoch.rotated":
                self.rotations.append(event)
            elif event.type == "decision.point":
                self.decisions.append(event)

    def of(self, block: Block, before: Block | None, status: Status) -> tuple[str, str]:
        """The cause's kind (:data:`CAUSE_KINDS`) and the cause in words."""
        if block.kind in ("system", "tool"):
            rotation = self.rotations[-1] if self.rotations else None
            if rotation is not None:
                note = f": {rotation.payload.note}" if rotation.payload.note else ""
                return "epoch", f"new epoch {rotation.payload.epoch} at seq {rotation.seq} ({rotation.payload.reason}{note})"
            if status == "added" and before is None:
                return "first_request", "first request: the prefix is pinned"
            return "epoch", "prefix changed"
        if status == "moved":
            return "moved", "same bytes under another reference (a new cut point)"
        if block.volatile and status in ("removed", "added"):
            return "volatile_tail", "volatile tail: rebuilt for every request"
        if block.call_id is not None and block.call_id in self.pruned:
            event = self.pruned[block.call_id]
            return "pruned", f"pruned to a pointer at seq {event.seq} ({event.payload.trigger.replace('_', ' ')})"
        seq = event_seq(block.ref)
        if status == "removed" and seq is not None:
            for event in self.compactions:
                if seq in event.payload.source_event_seqs or seq <= event.payload.upto_seq:
                    return (
                        "compacted",
                        f"folded by the compaction at seq {event.seq} ({event.payload.trigger}, depth {event.payload.depth})",
                    )
            for event in self.decisions:
                if seq in event.payload.source_event_seqs:
                    return "stage_closed", f"folded into the decision point of stage {event.payload.name!r} at seq {event.seq}"
            if block.budget_class == "recall" and "recall" in self.yields:
                return "recall_yield", "recall dropped by relief for this request (the 'recall' yield)"
            if block.kind == "text" and block.budget_class == "summary":
                replaced = self.compactions[-1] if self.compactions else None
                if replaced is not None:
                    return "compacted", f"replaced by the summary of the compaction at seq {replaced.seq}"
        if status == "added" and block.budget_class == "summary":
            for event in self.compactions:
                if block.ref.startswith(f"{event.session_id}#{event.seq}"):
                    return "compacted", f"the summary of the compaction at seq {event.seq} ({event.payload.trigger})"
        if status == "added" and seq is not None and seq > self._previous_upto():
            return "new", "new in the log since the request before"
        if status == "changed" and before is not None:
            if BOUNDED_MARKER.search(block.text) and not BOUNDED_MARKER.search(before.text):
                return "bounded", "now shown as a bounded view (head and tail)"
            moved = [
                f"{name.replace('_', ' ')} {getattr(before, name)} → {getattr(block, name)}"
                for name in ("layer", "budget_class", "trust")
                if getattr(before, name) != getattr(block, name)
            ]
            if moved and before.text == block.text:
                return "relabelled", "same text; " + ", ".join(moved)
            if moved:
                return "rendered", "rendered differently; " + ", ".join(moved)
            return "rendered", "rendered differently (envelope, view or echo rule)"
        if status == "added" and self.rotations:
            return "epoch", f"new epoch {self.rotations[-1].payload.epoch}"
        return "unexplained", "no event between the two requests names it"

    def _previous_upto(self) -> int:
        if self.built_before is None:
            return 0
        inputs = self.built_before.payload.inputs or {}
        return int(inputs.get("upto_seq", self.built_before.seq - 1))


_LABELS: Final = frozenset({"layer", "budget_class", "volatile", "ref", "source", "trust"})
"""A part's labels: they say who pays for it and where it came from, and never reach the provider (trust and
reference reach it inside the envelope's text), so two parts that differ only in them send the same bytes."""


def _plain_part(part: Any) -> dict[str, Any]:
    """What of a part the provider receives."""
    return {name: getattr(part, name) for name in part.__dataclass_fields__ if name not in _LABELS}


def _result_shape(part: ToolResultPart, event: Event | None, by_seq: Mapping[int, Event]) -> str:
    text = part.text.strip()
    if REPEAT_STUB.match(text):
        return "repeat stub (the same output is shown under an earlier call)"
    if POINTER_STUB.match(text):
        return "pointer stub (pruned): " + _pointer_of(event)
    if event is None or event.type != "tool.result":
        return "whole"
    result = event.payload
    if result.tool_name == READ_TOOL_NAME:
        return "read back through " + READ_TOOL_NAME
    pointer = result.artifact
    if pointer is None or pointer.size_chars <= len(result.output):
        return "whole"
    how = "capped" if MARKER_RE.search(result.output) else "compressed"
    return (
        f"{how} on arrival ({pointer.kind}, {len(result.output):,} of {pointer.size_chars:,} chars; original {pointer.ref[:19]})"
    )


def _text_shape(part: TextPart, event: Event | None) -> str:
    if part.source == "summary":
        return "compaction summary" + ("" if event is None else f" (seq {event.seq}, depth {event.payload.depth})")
    if part.source == "decision_point":
        return "decision point of a closed stage"
    if BOUNDED_MARKER.search(part.text):
        return "bounded view (head and tail; the whole text stays in the log)"
    if part.volatile:
        return "volatile tail"
    return "whole"


def _pointer_of(event: Event | None) -> str:
    if event is None or event.type != "tool.result":
        return "kept in the log"
    pointer = event.payload.artifact
    return f"original {pointer.ref[:19]}" if pointer is not None else f"kept in the log as {event.session_id}#{event.seq}"
