"""Why a text was (or was not) in what the model saw on request N, answered from the log alone.

:class:`Explainer` reads a session's events once: every place a text can enter the log
(a user or operator message, the model's own answer and tool-call arguments, a tool's
output as recorded and its original kept whole as an artifact, recalled evidence (in a
turn's frame or a request's volatile tail), a memory write, an artifact's declaration, a
child run's result, the prefix of each epoch,
a read-back through ``context_read_artifact``). :meth:`Explainer.why` then finds where
the text entered and what became of it by request N (rebuilt by the caller), as one
:class:`Why` with a fate:

* ``shown``: request N holds it (the blocks are named; a read-back or a compaction's
  summary line that keeps it is named as such: ``read_back``, ``summary``);
* ``not_entered``: it entered the log after request N was built; ``not_in_log``: never;
* hidden, each with the step that hid it and the pointer to the original:
  ``compressed`` (a tool output compressed or capped on arrival), ``bounded`` (a message
  shown as its head and tail from its first request), ``pruned`` (a pruning pass left a
  pointer), ``repeat`` (a repeated output shown as a stub), ``compacted`` (folded by a
  compaction, with the summary lines left of it), ``stage_closed`` (folded into a stage's
  decision point), ``trimmed`` (recall dropped by the build for this request), ``erased``
  (evidence erased from memory), ``epoch`` (it was in an earlier epoch's prefix),
  ``volatile`` (evidence shown only in an earlier request's volatile tail); or
  ``dropped`` when no recorded step explains it.

The names match the evidence measure's causes (:mod:`contextwright.compare.evidence`)
where the two meet, so a miss it counts reads the same here. Texts are compared as that
measure compares them: envelope escapes undone and runs of whitespace read as one space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from contextwright.assembly.assemble import BOUNDED_YIELD, PINNED_BOUNDED_YIELD
from contextwright.assembly.bounded import ITEM_SHARE
from contextwright.assembly.envelope import unescape
from contextwright.assembly.request import NeutralRequest
from contextwright.assembly.rules import rule_set_for
from contextwright.errors import ArtifactNotFound
from contextwright.events.envelope import Event
from contextwright.items.region_a import READ_TOOL_NAME
from contextwright.log.base import EventLog
from contextwright.telemetry._request_diff import BOUNDED_MARKER, POINTER_STUB, REPEAT_STUB, Block, blocks_of, request_cut
from contextwright.tool_outputs.cap import MARKER_RE

__all__ = ["HIDDEN", "Explainer", "Step", "Why", "artifact_reader", "normalize", "why"]

Fate = Literal[
    "shown",
    "read_back",
    "summary",
    "not_entered",
    "not_in_log",
    "compressed",
    "bounded",
    "pruned",
    "repeat",
    "compacted",
    "stage_closed",
    "trimmed",
    "erased",
    "epoch",
    "volatile",
    "dropped",
]
HIDDEN: Final[frozenset[str]] = frozenset(
    {"compressed", "bounded", "pruned", "repeat", "compacted", "stage_closed", "trimmed", "erased", "epoch", "volatile"}
)
"""Fates that name a step which hid the text from the request."""

_SPACES = re.compile(r"\s+")
_TOOL_GROUP = re.compile(r"(?P<name>[\w.-]+) ×\d+ \((?P<notes>[^)]*)\)")
_ENTITY = re.compile(r"&(?:amp|lt|#x[0-9a-f]+);")


def normalize(text: str) -> str:
    """``text`` as it is compared: envelope escapes undone, whitespace runs as one space."""
    if "&" in text and _ENTITY.search(text):
        text = unescape(text)
    return _SPACES.sub(" ", text).strip()


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    """One thing that happened to the text, at one event."""

    seq: int
    what: str
    """``entered``, ``compressed``, ``bounded``, ``read_back``, ``pruned``, ``repeat``, ``compacted`` ..."""
    detail: str
    """The step in a sentence."""
    pointer: str | None = None
    """Where the whole original is: a ``sha256:`` artifact or an event reference ``session#seq``."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {"seq": self.seq, "what": self.what, "detail": self.detail, "pointer": self.pointer}


@dataclass(frozen=True, kw_only=True, slots=True)
class Why:
    """Where a text entered the log and what became of it by one request."""

    text: str
    """The text asked about, normalised."""
    request_index: int | None
    """The request asked about (None: the session has none yet)."""
    fate: Fate
    summary: str
    """The answer in a sentence."""
    entered: Step | None
    """Where the text first entered the log."""
    steps: tuple[Step, ...]
    """What happened to it, in log order, up to the request."""
    hidden_by: Step | None
    """The step that hid it from the request (for a hidden fate)."""
    pointer: str | None
    """Where the original is kept."""
    shown_in: tuple[str, ...] = ()
    """The request's blocks that show it (``message 4 (user): tool_result ...``)."""
    left: tuple[str, ...] = ()
    """What is left of it in the request: a compaction's summary lines, a pointer stub, a bounded view's marker."""
    later: tuple[Step, ...] = field(default_factory=tuple)
    """Where it entered or came back after the request (read back, repeated)."""

    @property
    def hidden(self) -> bool:
        """Whether a recorded step hid it from the request."""
        return self.fate in HIDDEN

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {
            "text": self.text,
            "request_index": self.request_index,
            "fate": self.fate,
            "hidden": self.hidden,
            "summary": self.summary,
            "entered": None if self.entered is None else self.entered.to_dict(),
            "steps": [s.to_dict() for s in self.steps],
            "hidden_by": None if self.hidden_by is None else self.hidden_by.to_dict(),
            "pointer": self.pointer,
            "shown_in": list(self.shown_in),
            "left": list(self.left),
            "later": [s.to_dict() for s in self.later],
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class _Source:
    """A place in the log where text entered: an event, what the model could read of it and its original."""

    event: Event
    label: str
    view: str
    """What the model is shown of it as recorded (normalised)."""
    stored: str | None = None
    """The artifact that keeps the whole text when the view is shorter (read only when a search needs it)."""
    pointer: str
    kind: Literal["message", "tool_output", "read_back", "recall", "tail", "memory", "prefix", "other"]
    call_id: str | None = None
    ref_suffix: str = ""
    """The suffix of the request part's reference (``/recall/<id>``) when the part names a piece of the event."""
    evidence_id: str | None = None


class Explainer:
    """A session's events read once, to answer :meth:`why` for many texts and requests."""

    def __init__(self, events: Sequence[Event], *, read_artifact: Callable[[str], str | None] | None = None) -> None:
        """``read_artifact`` returns a stored original by its ``sha256:`` ref (None when it is not kept)."""
        self.events = list(events)
        self.by_seq = {e.seq: e for e in self.events}
        self.read_artifact = read_artifact or (lambda ref: None)
        self.sources = list(self._sources())
        self.pruned: dict[str, Event] = {}
        self.compactions: list[Event] = []
        self.decisions: list[Event] = []
        self.erased: dict[str, Event] = {}
        self.rotations: list[Event] = []
        for event in self.events:
            match event.type:
                case "context.pruned":
                    for call_id in event.payload.call_ids:
                        self.pruned.setdefault(call_id, event)
                case "context.compacted":
                    self.compactions.append(event)
                case "decision.point":
                    self.decisions.append(event)
                case "memory.erased":
                    self.erased.setdefault(event.payload.memory_id, event)
                case "context.epoch.rotated":
                    self.rotations.append(event)
        self._blocks: dict[int, list[tuple[Block, str]]] = {}
        self._originals: dict[str, str] = {}

    @property
    def requests(self) -> int:
        """How many requests the session recorded."""
        return sum(1 for e in self.events if e.type == "context.request.built")

    def why(self, text: str, *, request_index: int | None, request: NeutralRequest | None) -> Why:
        """Where ``text`` entered the log and what became of it by request ``request_index`` (rebuilt as ``request``)."""
        needle = normalize(text)
        if not needle:
            raise ValueError("give a text to look for: it is empty once whitespace is folded")
        hits = [s for s in self.sources if needle in s.view or (s.stored is not None and needle in self._original(s))]
        entered = _entered(hits[0]) if hits else None
        if request is None or request_index is None:
            return _answer(
                needle,
                None,
                "not_entered" if hits else "not_in_log",
                "the session has built no request yet" + (f"; it entered at seq {hits[0].event.seq}" if hits else ""),
                entered=entered,
                pointer=hits[0].pointer if hits else None,
            )
        built, upto = request_cut(self.events, request_index)
        normalised = self._blocks_of(request_index, request)
        blocks = [b for b, _ in normalised]
        shown = [b for b, text in normalised if needle in text]
        # Evidence in a request's volatile tail is recorded with that request, after its cut.
        before = [s for s in hits if s.event.seq <= upto or (s.kind == "tail" and s.event.seq <= built.seq)]
        later = tuple(_entered(s, what="read_back" if s.kind == "read_back" else "entered") for s in hits if s not in before)
        steps = tuple(self._steps(before, built, needle))
        if shown:
            return self._shown(needle, request_index, shown, hits, before, entered, steps, later)
        if not before:
            if hits:
                first = hits[0]
                return _answer(
                    needle,
                    request_index,
                    "not_entered",
                    f"not yet in the log when request {request_index} was built (its history stops at seq {upto}); "
                    f"it entered at seq {first.event.seq}, {first.label}",
                    entered=entered,
                    pointer=first.pointer,
                    later=later,
                )
            return _answer(needle, request_index, "not_in_log", "no event of the session holds this text", later=later)
        # The latest place it stood before the request decides, as the evidence measure reads it.
        source = before[-1]
        fate, hidden_by, left = self._hidden(source, request, blocks, built, needle)
        summary = _sentence(fate, hidden_by, source, request_index)
        if hidden_by is not None:
            # The step that hid it stands in the history once, in its own words.
            kept = [s for s in steps if (s.seq, s.what) != (hidden_by.seq, hidden_by.what)]
            steps = tuple(sorted([*kept, hidden_by], key=lambda s: s.seq))
        return Why(
            text=needle,
            request_index=request_index,
            fate=fate,
            summary=summary,
            entered=entered,
            steps=steps,
            hidden_by=hidden_by,
            pointer=source.pointer,
            left=left,
            later=later,
        )

    # -- what happened --------------------------------------------------------------------

    def _shown(
        self,
        needle: str,
        index: int,
        shown: list[Block],
        hits: list[_Source],
        before: list[_Source],
        entered: Step | None,
        steps: tuple[Step, ...],
        later: tuple[Step, ...],
    ) -> Why:
        where = tuple(f"{b.where}: {b.kind} {b.ref} ({b.shaped_by})" for b in shown)
        fate: Fate = "shown"
        if all(b.budget_class == "summary" for b in shown):
            fate = "summary"
        elif all(b.shaped_by.startswith("read back") for b in shown):
            fate = "read_back"
        pointer = (before[-1] if before else hits[0]).pointer if hits else None
        how = {"shown": "shown", "summary": "kept by a compaction's summary", "read_back": "shown through a read-back"}[fate]
        return Why(
            text=needle,
            request_index=index,
            fate=fate,
            summary=f"{how} in request {index}: {shown[0].where} ({shown[0].shaped_by})",
            entered=entered,
            steps=steps,
            hidden_by=None,
            pointer=pointer,
            shown_in=where,
            later=later,
        )

    def _hidden(
        self, source: _Source, request: NeutralRequest, blocks: list[Block], built: Event, needle: str
    ) -> tuple[Fate, Step | None, tuple[str, ...]]:
        event, seq = source.event, source.event.seq
        built_seq = built.seq
        if source.kind in ("tool_output", "read_back") and needle not in source.view:
            # Only the original holds it: the view recorded on arrival left it out.
            result = event.payload
            how = "capped" if MARKER_RE.search(result.output) else "compressed"
            kind = result.artifact.kind if result.artifact is not None else "text"
            size = result.artifact.size_chars if result.artifact is not None else len(result.output)
            step = Step(
                seq=seq,
                what="compressed",
                detail=f"{source.label} was {how} on arrival ({kind}): the model is shown {len(result.output):,} of "
                f"{size:,} characters, without this text",
                pointer=source.pointer,
            )
            return "compressed", step, ()
        if source.kind == "prefix":
            rotation = next((r for r in self.rotations if r.seq > seq and r.seq < built_seq), None)
            if rotation is not None:
                step = Step(
                    seq=rotation.seq,
                    what="epoch",
                    detail=f"the prefix changed at seq {rotation.seq} (epoch {rotation.payload.epoch}, "
                    f"{rotation.payload.reason.replace('_', ' ')})",
                    pointer=source.pointer,
                )
                return "epoch", step, ()
        parts = [b for b in blocks if b.ref == source.event.ref + source.ref_suffix]
        if source.call_id is not None:
            parts = [b for b in blocks if b.kind == "tool_result" and b.call_id == source.call_id] or parts
        for part in parts:
            stripped = part.text.strip()
            if part.kind == "tool_result" and REPEAT_STUB.match(stripped):
                step = Step(
                    seq=seq, what="repeat", detail=f"{source.label} is shown as a repeat stub: {stripped}", pointer=source.pointer
                )
                return "repeat", step, (stripped,)
            if part.kind == "tool_result" and POINTER_STUB.match(stripped):
                pruned = self.pruned.get(source.call_id or "")
                if pruned is not None and pruned.seq < built_seq:
                    step = Step(
                        seq=pruned.seq,
                        what="pruned",
                        detail=f"{source.label} was turned into a pointer by the pruning pass at seq {pruned.seq} "
                        f"({pruned.payload.trigger.replace('_', ' ')}, {len(pruned.payload.call_ids)} result(s))",
                        pointer=source.pointer,
                    )
                else:
                    step = Step(seq=seq, what="pruned", detail=f"{source.label} stands as a pointer", pointer=source.pointer)
                return "pruned", step, (stripped,)
            marker = BOUNDED_MARKER.search(part.text)
            if marker is not None:
                detail, on_arrival = _bounded_rule(source, built)
                # A view decided on arrival was taken by the first request that showed the item.
                seq = self._first_request_showing(source) if on_arrival else built_seq
                step = Step(seq=seq, what="bounded", detail=detail, pointer=source.pointer)
                line = part.text[marker.start() : part.text.find("]", marker.start()) + 1]
                return "bounded", step, (line,)
        if source.kind == "tail" and source.event.seq != built_seq:
            step = Step(
                seq=built_seq,
                what="volatile",
                detail=f"{source.label} stood in that request's volatile tail only: the tail is rebuilt for every "
                f"request, and recall did not bring it back for this one",
                pointer=source.pointer,
            )
            return "volatile", step, ()
        if source.kind in ("recall", "tail") and not parts:
            erased = self.erased.get(source.evidence_id or "")
            if erased is not None and erased.seq < built_seq:
                step = Step(
                    seq=erased.seq,
                    what="erased",
                    detail=f"evidence {source.evidence_id} was erased from memory at seq {erased.seq}",
                )
                return "erased", step, ()
            if "recall" in built.payload.yields:
                step = Step(
                    seq=built_seq,
                    what="trimmed",
                    detail="the build dropped the turn's recall to make the request fit (the 'recall' yield)",
                    pointer=source.pointer,
                )
                return "trimmed", step, ()
        if not parts:
            for compaction in self.compactions:
                folded = compaction.payload
                if compaction.seq < built_seq and (seq in folded.source_event_seqs or _within(source, folded)):
                    left = _left_of(source, folded.lines or (), folded.summary)
                    step = Step(
                        seq=compaction.seq,
                        what="compacted",
                        detail=f"{source.label} was folded by the compaction at seq {compaction.seq} ({folded.trigger}, "
                        f"depth {folded.depth})" + ("" if left else "; no summary line names it"),
                        pointer=source.pointer,
                    )
                    return "compacted", step, left
            for decision in self.decisions:
                if decision.seq < built_seq and seq in decision.payload.source_event_seqs:
                    step = Step(
                        seq=decision.seq,
                        what="stage_closed",
                        detail=f"{source.label} was folded into the decision point of stage {decision.payload.name!r} at seq {decision.seq}",
                        pointer=source.pointer,
                    )
                    return "stage_closed", step, ()
        return "dropped", None, ()

    def _steps(self, before: list[_Source], built: Event, needle: str) -> Iterator[Step]:
        """What happened to each place the text stood before the request, in log order."""
        out: list[Step] = []
        for source in before:
            out.append(_entered(source, what="read_back" if source.kind == "read_back" else "entered"))
            if source.kind == "tool_output" and needle not in source.view:
                kind = source.event.payload.artifact.kind if source.event.payload.artifact is not None else "text"
                out.append(
                    Step(
                        seq=source.event.seq,
                        what="compressed",
                        detail=f"{source.label}: compressed on arrival ({kind}), without this text",
                        pointer=source.pointer,
                    )
                )
            if source.call_id is not None:
                pruned = self.pruned.get(source.call_id)
                if pruned is not None and pruned.seq < built.seq:
                    out.append(
                        Step(seq=pruned.seq, what="pruned", detail=f"{source.label}: pruned to a pointer", pointer=source.pointer)
                    )
            for compaction in self.compactions:
                if compaction.seq < built.seq and source.event.seq in compaction.payload.source_event_seqs:
                    out.append(
                        Step(
                            seq=compaction.seq,
                            what="compacted",
                            detail=f"{source.label}: folded by a compaction",
                            pointer=source.pointer,
                        )
                    )
                    break
        seen: set[tuple[int, str, str]] = set()
        for step in sorted(out, key=lambda s: s.seq):
            key = (step.seq, step.what, step.detail)
            if key not in seen:
                seen.add(key)
                yield step

    def _first_request_showing(self, source: _Source) -> int:
        for event in self.events:
            if event.type == "context.request.built" and (event.payload.inputs or {}).get("upto_seq", 0) >= source.event.seq:
                return event.seq
        return source.event.seq

    def _blocks_of(self, index: int, request: NeutralRequest) -> list[tuple[Block, str]]:
        """The request's blocks, each with its text normalised (kept per request for the next question)."""
        found = self._blocks.get(index)
        if found is None:
            found = self._blocks[index] = [(b, normalize(b.text)) for b in blocks_of(request, self.by_seq)]
        return found

    def _original(self, source: _Source) -> str:
        """The whole text behind a shortened view, normalised (the view when the store does not keep it)."""
        ref = source.stored
        if ref is None:
            return source.view
        found = self._originals.get(ref)
        if found is None:
            whole = self.read_artifact(ref)
            found = self._originals[ref] = source.view if whole is None else normalize(whole)
        return found

    # -- where text enters ----------------------------------------------------------------

    def _sources(self) -> Iterator[_Source]:
        for event in self.events:
            payload, ref = event.payload, event.ref
            match event.type:
                case "message.user":
                    who = "the operator's message" if payload.author == "operator" else "the user's message"
                    text = normalize(payload.text)
                    yield _Source(event=event, label=f"{who} at seq {event.seq}", view=text, pointer=ref, kind="message")
                case "message.assistant":
                    pieces = [payload.text, *(s for call in payload.tool_calls for s in _strings(call.arguments))]
                    text = normalize("\n".join(pieces))
                    yield _Source(
                        event=event,
                        label=f"the model's answer at seq {event.seq}",
                        view=text,
                        pointer=ref,
                        kind="message",
                    )
                case "tool.result":
                    view = normalize(payload.output)
                    pointer = payload.artifact.ref if payload.artifact is not None else ref
                    shortened = payload.artifact is not None and payload.artifact.size_chars > len(payload.output)
                    read_back = payload.tool_name == READ_TOOL_NAME
                    label = (
                        f"the read-back through {READ_TOOL_NAME} (call {payload.call_id}) at seq {event.seq}"
                        if read_back
                        else f"the output of {payload.tool_name} (call {payload.call_id}) at seq {event.seq}"
                    )
                    yield _Source(
                        event=event,
                        label=label,
                        view=view,
                        pointer=pointer,
                        kind="read_back" if read_back else "tool_output",
                        stored=pointer if shortened else None,
                        call_id=payload.call_id,
                    )
                case "context.frame.recorded":
                    for evidence in payload.recall:
                        text = normalize(evidence.text)
                        yield _Source(
                            event=event,
                            label=f"recalled evidence {evidence.id} at seq {event.seq}",
                            view=text,
                            pointer=ref,
                            kind="recall",
                            ref_suffix=f"/recall/{evidence.id}",
                            evidence_id=evidence.id,
                        )
                case "memory.written" | "memory.corrected":
                    text = normalize(payload.text)
                    yield _Source(
                        event=event,
                        label=f"memory {payload.memory_id} at seq {event.seq}",
                        view=text,
                        pointer=ref,
                        kind="memory",
                    )
                case "artifact.declared":
                    text = normalize("\n".join([payload.title, payload.summary, *payload.steps]))
                    yield _Source(
                        event=event,
                        label=f"artifact {payload.artifact_id} at seq {event.seq}",
                        view=text,
                        pointer=payload.pointer.ref,
                        kind="other",
                    )
                case "child.finished":
                    text = normalize(payload.result)
                    yield _Source(
                        event=event,
                        label=f"the result of child run {payload.child_session_id} at seq {event.seq}",
                        view=text,
                        pointer=ref,
                        kind="other",
                    )
                case "context.request.built":
                    tail = (payload.inputs or {}).get("tail") or {}
                    for evidence in tail.get("evidence", ()):
                        text = normalize(str(evidence.get("text", "")))
                        yield _Source(
                            event=event,
                            label=f"evidence {evidence.get('id')} in the volatile tail of request {payload.request_index}",
                            view=text,
                            pointer=ref,
                            kind="tail",
                            evidence_id=str(evidence.get("id")),
                        )
                case "context.plan.created" | "context.epoch.rotated":
                    text = normalize("\n".join(_strings(payload.plan)))
                    yield _Source(
                        event=event,
                        label=f"the prefix of epoch {payload.epoch}",
                        view=text,
                        pointer=ref,
                        kind="prefix",
                    )
                case _:
                    pass


def why(
    events: Sequence[Event],
    text: str,
    *,
    request_index: int | None,
    request: NeutralRequest | None,
    read_artifact: Callable[[str], str | None] | None = None,
) -> Why:
    """:meth:`Explainer.why` for one text."""
    return Explainer(events, read_artifact=read_artifact).why(text, request_index=request_index, request=request)


def _entered(source: _Source, *, what: str = "entered") -> Step:
    detail = f"{source.label} shows it" if what == "read_back" else f"entered in {source.label}"
    return Step(seq=source.event.seq, what=what, detail=detail, pointer=source.pointer)


def _answer(
    needle: str,
    index: int | None,
    fate: Fate,
    summary: str,
    *,
    entered: Step | None = None,
    pointer: str | None = None,
    later: tuple[Step, ...] = (),
) -> Why:
    return Why(
        text=needle,
        request_index=index,
        fate=fate,
        summary=summary,
        entered=entered,
        steps=() if entered is None else (entered,),
        hidden_by=None,
        pointer=pointer,
        later=later,
    )


def _bounded_rule(source: _Source, built: Event) -> tuple[str, bool]:
    """Which rule showed ``source`` as its head and tail in the request recorded as ``built``, and whether it
    decided the view on arrival (rather than under that request's yield)."""
    yields = built.payload.yields
    inputs = built.payload.inputs or {}
    if source.event.type == "message.user" and PINNED_BOUNDED_YIELD in yields:
        return (
            f"{source.label} is pinned (the task or a steering note) and was shown as its head and tail as the last "
            f"resort, when pruning and compaction could not make room around it (the '{PINNED_BOUNDED_YIELD}' yield)",
            False,
        )
    if not rule_set_for(inputs).items_on_arrival and BOUNDED_YIELD in yields:
        return (
            f"{source.label} was shown as its head and tail because the body did not fit "
            f"(the '{BOUNDED_YIELD}' yield, as requests recorded before items were bounded on arrival)",
            False,
        )
    return (
        f"{source.label} is shown as its head and tail from its first request on: it takes more than "
        f"{ITEM_SHARE:.0%} of the history budget, so its view is decided on arrival",
        True,
    )


def _sentence(fate: Fate, step: Step | None, source: _Source, index: int) -> str:
    if step is None:
        return f"not in request {index}, and no recorded step explains it: it last stood in {source.label}"
    return f"not in request {index}: {step.detail}"


def _within(source: _Source, folded: Any) -> bool:
    # Compactions recorded before they listed every folded seq: anything before the fold's cut.
    return not folded.source_event_seqs and source.event.seq <= folded.upto_seq


def _left_of(source: _Source, lines: Iterable[Any], summary: str) -> tuple[str, ...]:
    """The summary lines that stand for ``source``: the one naming its pointer, or repeating its first words."""
    texts = [line.text for line in lines] or summary.splitlines()[1:]
    short = source.pointer[: len("sha256:") + 12] if source.pointer.startswith("sha256:") else None
    if short is not None:
        # A tool line reads "Tools: name ×n (note, note); ...": keep the note that names this output.
        named = []
        for text in texts:
            for group in _TOOL_GROUP.finditer(text):
                named += [f"{group['name']}: {note}" for note in group["notes"].split(", ") if short in note]
            if short in text and not named:
                named.append(text.strip())
        if named:
            return tuple(named)
    opening = source.view[:40]
    if len(opening) >= 12:
        return tuple(t.strip() for t in texts if opening in normalize(t))
    return ()


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def artifact_reader(log: EventLog) -> Callable[[str], str | None]:
    """Reads a stored original from ``log`` by its ref; None when the store does not keep it."""

    def read(ref: str) -> str | None:
        try:
            return log.get_artifact(ref)
        except ArtifactNotFound:
            return None

    return read
