"""The history surface: a pure fold of a session's events into model-visible entries.

The log keeps everything; the surface is what remains visible after
compactions (replaced by their summary) and pruning passes (tool results shown
as pointers). Rules:

* A tool call and its results are one :class:`Exchange`. Parallel calls in one
  assistant message and all their results form one unit, results in call order.
* Real chronology wins, except where the tool protocol forbids it: a user message
  logged while an exchange still waits for results is placed after that exchange.
* A frame (the turn's volatile context) belongs to the user message it names.
* A compaction replaces every entry up to its ``upto_seq`` by one summary, except
  pinned entries (steering notes), which stay verbatim.
* Signed reasoning (thinking) is only valid after the exact history it was produced
  on: any change to earlier history (compaction, pruning, a stage folded into its
  decision, an artifact update, a new epoch) makes the reasoning of the answers
  already after it stale (``Surface.stale_reasoning``); renderers of models that
  check it leave it out
  (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import compress, count
from typing import assert_never

from contextwright.canonical import canonical_json, sha256_tagged
from contextwright.derive._taint import Echo, EchoIndex
from contextwright.errors import BuildError, OrphanedToolPair
from contextwright.events.catalog import (
    ArtifactDeclared,
    ArtifactPointer,
    ArtifactStep,
    ArtifactStored,
    AssistantMessage,
    ChildFinished,
    ChildStarted,
    Compacted,
    CompactionRejected,
    ContextOverflow,
    DecisionGraduated,
    DecisionPoint,
    EpochRotated,
    EventPayload,
    FrameRecorded,
    FrameworkHistorySeen,
    FrameworkItemPopped,
    FrameworkItemsAdded,
    FrameworkItemsCleared,
    GatewayRequestPassed,
    GatewayRequestReceived,
    LayerTruncated,
    MemoryCandidates,
    MemoryCorrected,
    MemoryErased,
    MemoryWritten,
    ModelResponse,
    PlanCreated,
    PrefixCounted,
    Pruned,
    RecallRevisionFailed,
    RecallUnavailable,
    RequestBuilt,
    StageClosed,
    StageOpened,
    ToolCall,
    ToolRestored,
    ToolResult,
    ToolRevoked,
    UserMessage,
    WorkingStateUpdated,
)
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload


class SurfaceError(BuildError):
    """The log cannot be folded into a valid surface (a frame or result points nowhere)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class UserTurn:
    """A user (or operator) message, with the frame recorded for it, if any."""

    seq: int
    ref: str
    message: UserMessage
    frame: FrameRecorded | None = None
    frame_ref: str | None = None
    task: bool = False
    """The session's first message from the user (not a steering note): the task statement."""
    stage: str | None = None

    @property
    def pinned(self) -> bool:
        """The task statement and steering notes are kept verbatim and never compacted."""
        return self.message.steering or self.task


@dataclass(frozen=True, kw_only=True, slots=True)
class ResultEntry:
    """One tool result as stored, with where it came from."""

    seq: int
    ref: str
    result: ToolResult
    pruned: bool = False
    duplicate_of: str | None = None
    """Same tool, arguments and output as this earlier call: shown once, counted here."""
    superseded_by: str | None = None
    """This call failed and this later call with the same arguments succeeded."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Exchange:
    """An assistant message with tool calls, and the results that arrived for them."""

    seq: int
    ref: str
    message: AssistantMessage
    results: tuple[ResultEntry, ...] = ()
    stage: str | None = None

    pinned = False

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return self.message.tool_calls

    @property
    def missing(self) -> tuple[str, ...]:
        """Ids of calls still waiting for a result."""
        have = {r.result.call_id for r in self.results}
        return tuple(c.id for c in self.calls if c.id not in have)

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def last_seq(self) -> int:
        return max([self.seq, *(r.seq for r in self.results)])


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantReply:
    """An assistant message without tool calls."""

    seq: int
    ref: str
    message: AssistantMessage
    stage: str | None = None

    pinned = False


@dataclass(frozen=True, kw_only=True, slots=True)
class DecisionEntry:
    """A closed stage's decision point, standing in for the stage (compressed session, L2)."""

    seq: int
    ref: str
    decision: DecisionPoint

    pinned = True


@dataclass(frozen=True, kw_only=True, slots=True)
class ArtifactEntry:
    """The latest version of a declared artifact; chunked ones show only the current step and its neighbours."""

    seq: int
    ref: str
    declared: ArtifactDeclared
    current_step: int
    stage: str | None = None

    pinned = True


@dataclass(frozen=True, kw_only=True, slots=True)
class Summary:
    """A compaction summary standing in for everything up to ``upto_seq``."""

    seq: int
    ref: str
    compacted: Compacted

    pinned = False

    @property
    def elided(self) -> tuple[ArtifactPointer, ...]:
        return self.compacted.elided


Entry = UserTurn | Exchange | AssistantReply | Summary | DecisionEntry | ArtifactEntry


@dataclass(frozen=True, kw_only=True, slots=True)
class Surface:
    """The model-visible history of a session at ``upto_seq``."""

    session_id: str
    entries: tuple[Entry, ...]
    upto_seq: int
    seed_seq: int
    """Seq of the message that started the current run (the last non-steering user message)."""
    requests_built: int = 0
    summary_depth: int = 0
    pruned_calls: frozenset[str] = field(default_factory=frozenset)
    open_stage: StageOpened | None = None
    dedupe_hits: int = 0
    """Entries shown once or not at all because they repeat or were superseded."""
    echoes: Mapping[str, tuple[Echo, ...]] = field(default_factory=dict)
    """Spans of assistant texts (by event ref) that repeat untrusted text shown before them (the normalised rule)."""
    verbatim_echoes: Mapping[str, tuple[Echo, ...]] = field(default_factory=dict)
    """The same by the verbatim rule alone, which requests recorded before the normalised rule were built with."""
    stale_reasoning: frozenset[int] = frozenset()
    """Seqs of answers whose signed reasoning predates a change to the history before them."""

    open_exchange: Exchange | None = None
    """The exchange still waiting for tool results, if any (the fold knows where it stands)."""

    def current_turn(self) -> UserTurn | None:
        """The user turn that started the current run."""
        for entry in reversed(self.entries):
            if isinstance(entry, UserTurn) and entry.seq == self.seed_seq:
                return entry
        return None


def fold(session_id: str, events: Iterable[Event]) -> Surface:
    """Fold events (in seq order) into a :class:`Surface`, with the assistant's echoes of untrusted text."""
    folder = Folder(session_id)
    folder.apply(events)
    return folder.surface()


class Folder:
    """A fold kept open across a growing log: each event is applied once, in order.

    :func:`fold` is one ``Folder`` fed every event; a session keeps its ``Folder`` and
    feeds it only the events it has not seen, so the surface costs what the new events
    cost, not the whole history. Entries that did not change keep their identity from
    one surface to the next, which is what lets assembly reuse what it rendered for them.
    A failed :meth:`apply` leaves the folder unusable (:attr:`broken`): fold again from
    the start, which fails the same way, so the cache never decides an outcome.
    """

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.broken = False
        self._state = _Fold(session_id=session_id)
        self._echoes = EchoIndex()
        self._surface: Surface | None = None

    def apply(self, events: Iterable[Event]) -> None:
        """Fold ``events``, which must follow every event applied so far."""
        if self.broken:
            raise SurfaceError(f"session {self.session_id!r}: this fold failed earlier; fold the log again")
        batch = list(events)
        if not batch:
            return
        self._surface = None
        try:
            for event in batch:
                if event.session_id != self.session_id:
                    raise SurfaceError(f"event {event.ref} belongs to another session than {self.session_id!r}")
                self._state.apply(event)
            self._echoes.update(batch)
        except BaseException:
            self.broken = True
            raise

    def surface(self) -> Surface:
        """The surface of every event applied so far (the same object until another event is applied)."""
        if self._surface is None:
            verbatim = self._echoes.update(())
            self._surface = self._state.surface(echoes=self._echoes.normalised(), verbatim_echoes=verbatim)
        return self._surface


@dataclass(kw_only=True, slots=True)
class _Fold:
    """The running state of one fold: one handler per event type, chosen by an exhaustive match."""

    session_id: str
    entries: list[Entry] = field(default_factory=list)
    deferred: list[Entry] = field(default_factory=list)
    """Entries logged while an exchange waits for results; they follow it once it completes."""
    open_index: int | None = None
    calls_by_id: dict[str, int] = field(default_factory=dict)
    pruned: set[str] = field(default_factory=set)
    upto: int = 0
    seed: int = 0
    requests: int = 0
    depth: int = 0
    seen_task: bool = False
    stage: StageOpened | None = None
    replaced_versions: int = 0
    stale_reasoning: set[int] = field(default_factory=set)
    has_reasoning: bool = False
    """Some answer so far carried signed reasoning (until then, changes need no staleness check)."""
    repeats: _RepeatMarker = field(default_factory=lambda: _RepeatMarker())
    """Repeat marking, kept across surfaces so each marks only what changed since the last."""
    pruned_frozen: frozenset[str] = frozenset()
    """The last surface's frozen copy of ``pruned``, reused while the set has not grown."""
    stale_frozen: frozenset[int] = frozenset()
    """The last surface's frozen copy of ``stale_reasoning``, reused while the set has not grown."""

    def apply(self, event: Event) -> None:
        """Fold one event; event types that do not change the visible history only move ``upto``."""
        self.upto = event.seq
        payload: EventPayload = event.payload
        match payload:
            case UserMessage():
                self._user(event, payload)
            case AssistantMessage():
                self._assistant(event, payload)
            case ToolResult():
                self._tool_result(event, payload)
            case FrameRecorded():
                self._frame(event, payload)
            case Compacted():
                self.entries = _compact(self.entries, event, payload, seed=self.seed)
                self._reindex_calls()
                self.depth = payload.depth
                self._changed_where(lambda e: e.ref == event.ref)
            case Pruned():
                self.pruned.update(payload.call_ids)
                gone = set(payload.call_ids)
                # The results changed, not the call: that exchange's own thinking precedes them.
                self._changed_where(lambda e: isinstance(e, Exchange) and any(c.id in gone for c in e.calls), after=True)
            case RequestBuilt():
                self.requests += 1
            case StageOpened():
                self.stage = payload
            case StageClosed():
                self.stage = None
            case DecisionPoint():
                self.entries = _replace_stage(self.entries, event, payload, seed=self.seed)
                self._reindex_calls()
                self._changed_where(lambda e: e.ref == event.ref)
            case DecisionGraduated():
                graduated = set(payload.stage_ids)

                def leaves(e: Entry) -> bool:
                    return isinstance(e, DecisionEntry) and e.decision.stage_id in graduated

                self._changed_where(leaves)
                self.entries = [e for e in self.entries if not leaves(e)]
                self._reindex_calls()
            case ArtifactDeclared():
                self._artifact_declared(event, payload)
            case ArtifactStep():
                self._changed_where(lambda e: isinstance(e, ArtifactEntry) and e.declared.artifact_id == payload.artifact_id)
                self.entries = [
                    replace(e, current_step=payload.current_step)
                    if isinstance(e, ArtifactEntry) and e.declared.artifact_id == payload.artifact_id
                    else e
                    for e in self.entries
                ]
            case EpochRotated():
                self._changed_where(lambda e: True)  # a new prefix (system, tools) precedes everything
            case (
                PlanCreated()
                | WorkingStateUpdated()
                | ModelResponse()
                | MemoryWritten()
                | MemoryCorrected()
                | MemoryErased()
                | ArtifactStored()
                | ToolRevoked()
                | ToolRestored()
                | MemoryCandidates()
                | LayerTruncated()
                | ContextOverflow()
                | PrefixCounted()
                | ChildStarted()
                | ChildFinished()
                | FrameworkItemsAdded()
                | FrameworkItemPopped()
                | FrameworkItemsCleared()
                | FrameworkHistorySeen()
                | GatewayRequestReceived()
                | GatewayRequestPassed()
                | RecallRevisionFailed()
                | RecallUnavailable()
                | CompactionRejected()
            ):
                pass  # plans, telemetry, memory, policy and a framework's own records are read elsewhere
            case _:
                assert_never(payload)

    def _changed_where(self, matches: Callable[[Entry], bool], *, after: bool = False) -> None:
        """History changed at the first entry that ``matches`` (or just ``after`` it): the reasoning of answers from there is stale."""
        if not self.has_reasoning:
            return  # nothing to invalidate; skip the scan
        index = next((i for i, entry in enumerate(self.entries) if matches(entry)), None)
        if index is None:
            return
        for entry in self.entries[index + 1 if after else index :]:
            if isinstance(entry, Exchange | AssistantReply) and entry.message.reasoning:
                self.stale_reasoning.add(entry.seq)

    @property
    def stage_id(self) -> str | None:
        return self.stage.stage_id if self.stage else None

    def _add(self, entry: Entry) -> None:
        if self.open_index is not None:
            self.deferred.append(entry)
        else:
            self.entries.append(entry)

    def _user(self, event: Event, payload: UserMessage) -> None:
        first = not self.seen_task and not payload.steering and payload.author == "user"
        self.seen_task = self.seen_task or first
        self._add(UserTurn(seq=event.seq, ref=event.ref, message=payload, task=first, stage=self.stage_id))
        if not payload.steering:
            self.seed = event.seq

    def _assistant(self, event: Event, payload: AssistantMessage) -> None:
        if self.open_index is not None:
            open_exchange = self.entries[self.open_index]
            missing = open_exchange.missing if isinstance(open_exchange, Exchange) else ()
            raise OrphanedToolPair(
                f"{event.ref}: the model spoke again while tool calls {', '.join(missing)} have no result",
                session_id=self.session_id,
                call_ids=missing,
            )
        self.has_reasoning = self.has_reasoning or bool(payload.reasoning)
        if not payload.tool_calls:
            self.entries.append(AssistantReply(seq=event.seq, ref=event.ref, message=payload, stage=self.stage_id))
            return
        self.entries.append(Exchange(seq=event.seq, ref=event.ref, message=payload, stage=self.stage_id))
        self.open_index = len(self.entries) - 1
        for call in payload.tool_calls:
            self.calls_by_id[call.id] = self.open_index

    def _tool_result(self, event: Event, payload: ToolResult) -> None:
        index = self.calls_by_id.get(payload.call_id)
        exchange = self.entries[index] if index is not None and index < len(self.entries) else None
        if index is None or not isinstance(exchange, Exchange) or payload.call_id not in exchange.missing:
            raise OrphanedToolPair(
                f"{event.ref}: tool result for call {payload.call_id!r}, which no open tool call matches",
                session_id=self.session_id,
                call_ids=(payload.call_id,),
            )
        entry = ResultEntry(seq=event.seq, ref=event.ref, result=payload)
        exchange = replace(exchange, results=exchange.results + (entry,))
        self.entries[index] = exchange
        if exchange.complete and index == self.open_index:
            self.open_index = None
            self.entries.extend(self.deferred)
            self.deferred.clear()

    def _frame(self, event: Event, payload: FrameRecorded) -> None:
        # From the end: a frame names the turn it follows, almost always the newest (seqs are unique).
        for entries in (self.deferred, self.entries):
            for i in range(len(entries) - 1, -1, -1):
                entry = entries[i]
                if isinstance(entry, UserTurn) and entry.seq == payload.turn_seq:
                    entries[i] = replace(entry, frame=payload, frame_ref=event.ref)
                    return
        raise SurfaceError(f"{event.ref}: frame for seq {payload.turn_seq}, which is not a visible user message")

    def _reindex_calls(self) -> None:
        """Point call ids and the open exchange at their entries again: a fold that removed entries moved them
        (a manual compaction while a tool call waits for its result must leave the call answerable)."""
        self.calls_by_id = {c.id: i for i, e in enumerate(self.entries) if isinstance(e, Exchange) for c in e.calls}
        self.open_index = next((i for i, e in enumerate(self.entries) if isinstance(e, Exchange) and not e.complete), None)

    def _artifact_declared(self, event: Event, payload: ArtifactDeclared) -> None:
        self._changed_where(lambda e: isinstance(e, ArtifactEntry) and e.declared.artifact_id == payload.artifact_id)
        before = len(self.entries)
        self.entries = [
            e for e in self.entries if not (isinstance(e, ArtifactEntry) and e.declared.artifact_id == payload.artifact_id)
        ]
        self.replaced_versions += before - len(self.entries)
        self._reindex_calls()
        self._add(
            ArtifactEntry(seq=event.seq, ref=event.ref, declared=payload, current_step=payload.current_step, stage=self.stage_id)
        )

    def surface(
        self,
        echoes: Mapping[str, tuple[Echo, ...]] | None = None,
        verbatim_echoes: Mapping[str, tuple[Echo, ...]] | None = None,
    ) -> Surface:
        """The surface at the last folded event (deferred entries go last, then repeats are marked)."""
        ordered, repeats = self.repeats.mark(self.entries + self.deferred if self.deferred else self.entries, self.pruned)
        open_exchange = ordered[self.open_index] if self.open_index is not None else None
        # Both sets only grow: the frozen copies of the last surface serve while their sizes hold.
        if len(self.pruned) != len(self.pruned_frozen):
            self.pruned_frozen = frozenset(self.pruned)
        if len(self.stale_reasoning) != len(self.stale_frozen):
            self.stale_frozen = frozenset(self.stale_reasoning)
        return Surface(
            session_id=self.session_id,
            entries=tuple(ordered),
            upto_seq=self.upto,
            seed_seq=self.seed,
            requests_built=self.requests,
            summary_depth=self.depth,
            pruned_calls=self.pruned_frozen,
            open_stage=self.stage,
            dedupe_hits=repeats + self.replaced_versions,
            echoes={} if echoes is None else echoes,
            verbatim_echoes={} if verbatim_echoes is None else verbatim_echoes,
            stale_reasoning=self.stale_frozen,
            open_exchange=open_exchange if isinstance(open_exchange, Exchange) else None,
        )


def _compact(entries: list[Entry], event: Event, payload: Compacted, *, seed: int) -> list[Entry]:
    """Everything up to ``upto_seq`` folds into the summary, except pinned entries and the run's first message."""
    return _fold_into(
        entries,
        lambda e: _entry_seq(e) <= payload.upto_seq and not e.pinned and e.seq != seed,
        Summary(seq=event.seq, ref=event.ref, compacted=payload),
        at_end=False,
    )


def _replace_stage(entries: list[Entry], event: Event, payload: DecisionPoint, *, seed: int) -> list[Entry]:
    """A closed stage's entries give way to its decision point (pinned entries and the run's first message stay)."""

    def in_stage(entry: Entry) -> bool:
        open_exchange = isinstance(entry, Exchange) and not entry.complete
        return getattr(entry, "stage", None) == payload.stage_id and not entry.pinned and entry.seq != seed and not open_exchange

    return _fold_into(entries, in_stage, DecisionEntry(seq=event.seq, ref=event.ref, decision=payload), at_end=True)


def _fold_into(entries: list[Entry], folded: Callable[[Entry], bool], replacement: Entry, *, at_end: bool) -> list[Entry]:
    # The replacement takes the place of the first folded entry, so chronology holds
    # whatever it covered; with nothing folded it goes first (a summary) or last.
    out: list[Entry] = []
    placed = False
    for entry in entries:
        if folded(entry):
            if not placed:
                out.append(replacement)
                placed = True
            continue
        out.append(entry)
    if not placed:
        if at_end:
            out.append(replacement)
        else:
            out.insert(0, replacement)
    return out


@dataclass(slots=True)
class _RepeatKeys:
    """What repeat marking derives per call and per result, kept so each is derived once per fold.

    Per call its (name, canonical arguments) and per result event its output hash, both
    fixed once logged.
    """

    calls: dict[str, tuple[ToolCall, tuple[str, str]]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def call(self, call: ToolCall) -> tuple[str, str]:
        known = self.calls.get(call.id)
        if known is None or known[0] is not call:
            known = self.calls[call.id] = (call, (call.name, canonical_json(encode_payload(call.arguments))))
        return known[1]

    def output(self, entry: ResultEntry) -> str:
        digest = self.outputs.get(entry.ref)
        if digest is None:
            digest = self.outputs[entry.ref] = sha256_tagged(entry.result.output)
        return digest


_Marks = tuple[tuple[str | None, str | None] | None, ...]
"""Per result: (duplicate_of, superseded_by), or None when it is shown as it is."""


@dataclass(slots=True)
class _Marked:
    """One position of the last marking, with what it added to the marker's state (undone when it changes)."""

    raw: Entry
    pruned_flags: tuple[bool, ...]
    view: Entry
    """The entry with its pruned results shown as pointers."""
    marks: _Marks
    shown: Entry
    hits: int = 0
    successes: tuple[tuple[str, str], ...] = ()
    """Keys whose first success is at this position."""
    seen: tuple[tuple[str, str, str], ...] = ()
    """Identities first shown at this position."""
    failures: tuple[tuple[str, str], ...] = ()
    """Keys of the failed (not denied) results at this position, one per result."""
    call_ids: tuple[str, ...] = ()


class _RepeatMarker:
    """Repeat marking kept open across surfaces: only positions from the first changed entry are marked again.

    The marks of an entry depend on the entries before it (the first result with the same
    identity), and, for a failed attempt, on the first success of the same call anywhere
    in the history. So a new entry at the end changes the marks of earlier entries in one
    case only: it holds the first success of a call whose earlier failures it supersedes;
    those positions are marked again too. Everything else before the first changed entry
    keeps its marks and its objects. :func:`_mark_repeats` is the same marking from scratch
    (and the property tests compare both); with repeated call ids, marks depend on the
    whole history, and this marker falls back to it.
    """

    def __init__(self) -> None:
        self.keys = _RepeatKeys()
        self.done: list[_Marked] = []
        self.raws: list[Entry] = []
        """``m.raw`` of each of ``done``: the scan for the first changed entry runs in C over two lists."""
        self.shown: list[Entry] = []
        """``m.shown`` of each of ``done``: a marking hands out a copy of this list."""
        self.pruned_count = 0
        self.hits = 0
        self.first_success: dict[tuple[str, str], tuple[int, int, str]] = {}
        """Per key: where its first success stands (position, index among the results) and its call id."""
        self.failures: dict[tuple[str, str], list[int]] = {}
        """Per key: positions of its failed attempts, in order (a position once per failed result)."""
        self.seen: dict[tuple[str, str, str], str] = {}
        self.call_positions: dict[str, int] = {}
        self.scratch = False
        """Some call id was used twice: mark from scratch every time."""

    def mark(self, entries: list[Entry], pruned: set[str]) -> tuple[list[Entry], int]:
        """The entries as shown (pruned and repeated results marked), and how many results repeat."""
        done = self.done
        if self.scratch:
            return self._from_scratch(entries, pruned)
        start = next(compress(count(), map(operator.is_not, entries, self.raws)), min(len(entries), len(done)))
        if len(pruned) != self.pruned_count:
            start = 0  # pruning only grows: another pass shows other results as pointers
            self.pruned_count = len(pruned)
        affected = self._affected_from(entries, start)
        if affected is None:
            return self._from_scratch(entries, pruned)
        start = affected
        replaced = {id(m.raw): m for m in done[start:]}
        self._undo(start)
        new = entries[start:]
        successes = [self._successes(start + offset, entry) for offset, entry in enumerate(new)]
        for offset, entry in enumerate(new):
            marked = self._marked(start + offset, entry, pruned, replaced.get(id(entry)), successes[offset])
            self.done.append(marked)
            self.raws.append(entry)
            self.shown.append(marked.shown)
        if self.scratch:
            return self._from_scratch(entries, pruned)
        return self.shown, self.hits  # the caller copies it into the surface's tuple

    def _affected_from(self, entries: list[Entry], start: int) -> int | None:
        """The first position whose marks may change when ``entries[start:]`` replace the marked ones (None: mark from scratch)."""
        while True:
            keys: set[tuple[str, str]] = {key for m in self.done[start:] for key in m.successes}
            for entry in entries[start:]:
                if not isinstance(entry, Exchange):
                    continue
                for call in entry.calls:
                    known = self.call_positions.get(call.id)
                    if known is not None and known < start:
                        return None
                calls = {c.id: c for c in entry.calls}
                for r in entry.results:
                    answered = calls.get(r.result.call_id)
                    if answered is None or r.result.is_error or r.result.denied:
                        continue
                    key = self.keys.call(answered)
                    first = self.first_success.get(key)
                    if first is None or first[0] >= start:  # an earlier first success keeps deciding
                        keys.add(key)
            earliest = min((self.failures[key][0] for key in keys if key in self.failures), default=start)
            if earliest >= start:
                return start
            start = earliest

    def _undo(self, start: int) -> None:
        del self.raws[start:], self.shown[start:]
        while len(self.done) > start:
            m = self.done.pop()
            self.hits -= m.hits
            for key in m.successes:
                del self.first_success[key]
            for identity in m.seen:
                del self.seen[identity]
            for key in m.failures:
                positions = self.failures[key]
                positions.pop()
                if not positions:
                    del self.failures[key]
            for call_id in m.call_ids:
                del self.call_positions[call_id]

    def _successes(self, position: int, entry: Entry) -> tuple[tuple[str, str], ...]:
        """Record the first successes at ``position``; return their keys."""
        if not isinstance(entry, Exchange) or not entry.results:
            return ()
        keys = {c.id: self.keys.call(c) for c in entry.calls}
        found: list[tuple[str, str]] = []
        for index, r in enumerate(entry.results):
            key = keys.get(r.result.call_id)
            if key is not None and not r.result.is_error and not r.result.denied and key not in self.first_success:
                self.first_success[key] = (position, index, r.result.call_id)
                found.append(key)
        return tuple(found)

    def _marked(
        self, position: int, entry: Entry, pruned: set[str], before: _Marked | None, successes: tuple[tuple[str, str], ...]
    ) -> _Marked:
        if not isinstance(entry, Exchange):
            return _Marked(raw=entry, pruned_flags=(), view=entry, marks=(), shown=entry)
        flags = tuple(r.result.call_id in pruned for r in entry.results) if pruned else ()
        if before is not None and before.raw is entry and before.pruned_flags == flags:
            view = before.view
        else:
            view = _with_pruned(entry, pruned) if any(flags) else entry
        assert isinstance(view, Exchange)
        keys = {c.id: self.keys.call(c) for c in entry.calls}
        call_ids = tuple(keys)
        for call_id in call_ids:
            if call_id in self.call_positions:
                self.scratch = True  # noticed here when both uses are new: the next marking starts over
            self.call_positions[call_id] = position
        marks: list[tuple[str | None, str | None] | None] = []
        seen: list[tuple[str, str, str]] = []
        failures: list[tuple[str, str]] = []
        hits = 0
        for index, r in enumerate(view.results):
            key = keys.get(r.result.call_id)
            if key is None or r.pruned:
                marks.append(None)
                continue
            if r.result.is_error and not r.result.denied:
                failures.append(key)
                self.failures.setdefault(key, []).append(position)
                winner = self.first_success.get(key)
                if winner is not None and winner[2] != r.result.call_id and winner[:2] > (position, index):
                    marks.append((None, winner[2]))
                    hits += 1
                    continue
            identity = (*key, self.keys.output(r))
            first = self.seen.get(identity)
            if first is not None:
                marks.append((first, None))
                hits += 1
                continue
            self.seen[identity] = r.result.call_id
            seen.append(identity)
            marks.append(None)
        frozen = tuple(marks)
        if not any(frozen):
            shown: Entry = view
        elif before is not None and before.raw is entry and before.pruned_flags == flags and before.marks == frozen:
            shown = before.shown
        else:
            shown = _with_marks(view, list(frozen))
        self.hits += hits
        return _Marked(
            raw=entry,
            pruned_flags=flags,
            view=view,
            marks=frozen,
            shown=shown,
            hits=hits,
            successes=successes,
            seen=tuple(seen),
            failures=tuple(failures),
            call_ids=call_ids,
        )

    def _from_scratch(self, entries: list[Entry], pruned: set[str]) -> tuple[list[Entry], int]:
        self.scratch = True
        return _mark_repeats([_with_pruned(entry, pruned) for entry in entries], self.keys)


def _mark_repeats(entries: list[Entry], keys: _RepeatKeys | None = None) -> tuple[list[Entry], int]:
    """Mark identical tool results and failed attempts superseded by a later success, from scratch."""
    keys = keys if keys is not None else _RepeatKeys()
    seen: dict[tuple[str, str, str], str] = {}
    later_success: dict[tuple[str, str], str] = {}
    calls: dict[str, tuple[str, str]] = {}
    for entry in entries:
        if isinstance(entry, Exchange):
            for call in entry.calls:
                calls[call.id] = keys.call(call)
    for entry in reversed(entries):
        if isinstance(entry, Exchange):
            for r in reversed(entry.results):
                key = calls.get(r.result.call_id)
                if key is not None and not r.result.is_error and not r.result.denied:
                    later_success[key] = r.result.call_id
    hits = 0
    out: list[Entry] = []
    order: dict[str, int] | None = None  # where each call's first result stands, found once if needed
    for entry in entries:
        if not isinstance(entry, Exchange):
            out.append(entry)
            continue
        marks: list[tuple[str | None, str | None] | None] = []
        for r in entry.results:
            key = calls.get(r.result.call_id)
            if key is None or r.pruned:
                marks.append(None)
                continue
            if r.result.is_error and not r.result.denied and key in later_success and later_success[key] != r.result.call_id:
                winner = later_success[key]
                order = order if order is not None else _result_order(entries)
                if order.get(winner, -1) > order.get(r.result.call_id, len(order)):
                    marks.append((None, winner))
                    hits += 1
                    continue
            identity = (*key, keys.output(r))
            if identity in seen:
                marks.append((seen[identity], None))
                hits += 1
                continue
            seen[identity] = r.result.call_id
            marks.append(None)
        out.append(_with_marks(entry, marks) if any(marks) else entry)
    return out, hits


def _with_marks(entry: Exchange, marks: list[tuple[str | None, str | None] | None]) -> Exchange:
    results = tuple(
        r if mark is None else replace(r, duplicate_of=mark[0], superseded_by=mark[1])
        for r, mark in zip(entry.results, marks, strict=True)
    )
    return replace(entry, results=results)


def _result_order(entries: list[Entry]) -> dict[str, int]:
    """Per call id, the position of its first result among all results, in order."""
    order: dict[str, int] = {}
    for call_id in (r.result.call_id for e in entries if isinstance(e, Exchange) for r in e.results):
        order.setdefault(call_id, len(order))
    return order


def _entry_seq(entry: Entry) -> int:
    if isinstance(entry, Summary):
        return entry.compacted.upto_seq
    return entry.seq


def _with_pruned(entry: Entry, pruned: set[str]) -> Entry:
    if not isinstance(entry, Exchange) or not pruned:
        return entry
    if not any(r.result.call_id in pruned for r in entry.results):
        return entry
    return replace(entry, results=tuple(replace(r, pruned=r.result.call_id in pruned) for r in entry.results))
