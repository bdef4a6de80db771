"""``build()``: a pure function from the plan, the surface and the turn's volatile inputs to a request.

No I/O and no clock reads happen here: the date is already in the recorded
frame, and everything else arrives as an argument. The same inputs give a
byte-identical :class:`~contextwright.assembly.request.NeutralRequest`, which is
what makes retries safe and lets ``inspect`` rebuild any request from the log.

Assembly order is fixed and total:

1. region A (system blocks and tools): policy, framing, instructions, tools,
   memory snapshot;
2. history in provider-valid chronological order (summaries first, then turns:
   each turn's frame, which holds the turn's runtime metadata, working state and
   recall, then the user's message; then tool exchanges and replies);
3. the volatile tail of this step (evidence recall found since the turn's frame,
   correction lines, working-state changes made during the turn, nudges), as the last
   user message.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from contextwright.assembly.bounded import bounded_view, item_cap
from contextwright.assembly.envelope import (
    NONCE_HEX_DIGITS,
    SHORT_NONCE_HEX_DIGITS,
    TOOL_TRUST_FRAMINGS,
    Attribution,
    envelope,
)
from contextwright.assembly.memo import RenderMemo, Sizes, add_sizes
from contextwright.assembly.prefix import prefix_sha256, render_prefix, tool_definitions
from contextwright.assembly.regions import check_regions
from contextwright.assembly.request import (
    Message,
    NeutralRequest,
    Part,
    ReasoningPart,
    SystemBlock,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
)
from contextwright.assembly.rules import CURRENT as CURRENT_RULES
from contextwright.assembly.rules import RuleSet
from contextwright.budget.allocator import Allocation, PressureState
from contextwright.canonical import canonical_json, content_hash, to_plain
from contextwright.derive._surface import (
    ArtifactEntry,
    AssistantReply,
    DecisionEntry,
    Entry,
    Exchange,
    Summary,
    Surface,
    UserTurn,
)
from contextwright.derive._taint import Echo, lowest_trust, summary_lines
from contextwright.derive._working_state import WorkingState
from contextwright.errors import BuildError
from contextwright.events.catalog import AssistantMessage, Evidence
from contextwright.items.region_a import READ_TOOL_NAME
from contextwright.plan.plan import ContextPlan

MESSAGE_OVERHEAD_TOKENS = 4
PART_OVERHEAD_TOKENS = 3
"""Conservative allowances for the provider's per-message and per-block framing tokens."""


BOUNDED_YIELD = "oversized_items"
"""Items larger than a share of the history budget shown as bounded views (pinned ones excepted).

A yield only under rule sets that start with whole items (before ``items_on_arrival``, see
:mod:`contextwright.assembly.rules`); the current rules bound them from the first request on."""
PINNED_BOUNDED_YIELD = "oversized_pinned"
"""The last resort, taken by the runtime when relief could not make room: pinned items (the task
statement, steering notes) larger than the share are shown bounded too."""


class BudgetExceeded(BuildError):
    """The body does not fit its budget even after the yields ``build`` may take; relief is needed."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Correction:
    """A correction line: evidence shown earlier has changed."""

    evidence_id: str
    text: str
    trust: str = "user"


@dataclass(frozen=True, kw_only=True, slots=True)
class VolatileTail:
    """What changed during the turn and goes at the tail of this step (never recorded as history)."""

    corrections: tuple[Correction, ...] = ()
    working_state: WorkingState | None = None
    """The working state when it changed since the turn's frame was recorded."""
    nudges: tuple[str, ...] = ()
    erased_evidence: frozenset[str] = frozenset()
    """Evidence ids erased (or expired) since delivery: removed from the surface."""
    evidence: tuple[Evidence, ...] = ()
    """Evidence recall found for this step that no frame delivered (it appeared during the turn)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, recorded with the request so it can be rebuilt."""
        data = {
            "corrections": [{"evidence_id": c.evidence_id, "text": c.text, "trust": c.trust} for c in self.corrections],
            "working_state": None if self.working_state is None else self.working_state.to_dict(),
            "nudges": list(self.nudges),
            "erased_evidence": sorted(self.erased_evidence),
        }
        if self.evidence:
            # Only when there is some: a step without fresh evidence records what steps recorded before it.
            data["evidence"] = [{"id": e.id, "text": e.text, "trust": e.trust, "source": e.source} for e in self.evidence]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> VolatileTail:
        """Inverse of :meth:`to_dict`."""
        return cls(
            corrections=tuple(
                Correction(evidence_id=c["evidence_id"], text=c["text"], trust=c["trust"]) for c in data["corrections"]
            ),
            working_state=None if data["working_state"] is None else WorkingState.from_dict(data["working_state"]),
            nudges=tuple(data["nudges"]),
            erased_evidence=frozenset(data["erased_evidence"]),
            evidence=tuple(
                Evidence(id=e["id"], text=e["text"], trust=e["trust"], source=e["source"]) for e in data.get("evidence", ())
            ),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildResult:
    """A request and its accounting."""

    request: NeutralRequest
    body_tokens: int
    tokens_by_class: dict[str, int]
    tokens_by_layer: dict[str, int]
    yields: tuple[str, ...]
    pressure: PressureState
    tool_results_over_share: bool
    evidence_removed: int
    """Earlier-delivered evidence removed from the surface (each costs a cache miss)."""
    upto_seq: int
    """The last event the surface was folded from: rebuilding reads the log up to here."""
    dedupe_hits: int = 0
    """Surface entries shown once or not at all because they repeated or were superseded."""

    @property
    def total_tokens(self) -> int:
        """Prefix plus body, in tokens."""
        return sum(v for k, v in self.tokens_by_class.items())


Estimate = Callable[[str], int]


@dataclass(kw_only=True, slots=True)
class _Assembler:
    plan: ContextPlan
    surface: Surface
    tail: VolatileTail
    secret: bytes
    drop_recall: bool
    cap_tokens: int | None = None
    """The most one history item may take (None: unbounded, for sizing)."""
    bound_pinned: bool = False
    """Whether pinned items over the cap are shown bounded too."""
    view_estimate: Estimate | None = None
    """Sizes bounded views."""
    read_tool: str | None = READ_TOOL_NAME
    """The tool that markers and pointer stubs name for reading the whole text (None: the prefix pins none)."""
    memo: RenderMemo | None = None
    verbatim_echoes: bool = False
    """Envelope echoes by the verbatim rule alone, as requests recorded before the normalised rule did."""
    tool_trust_implied: bool = False
    """A tool's output at trust ``tool`` leaves trust and source to its tool-result block (the rule set and the framing allow it)."""
    nonce_digits: int = NONCE_HEX_DIGITS
    """Hex digits of each envelope's id (the rule set chooses)."""
    messages: list[Message] = field(default_factory=list)
    removed: int = 0

    @property
    def echoes(self) -> Mapping[str, tuple[Echo, ...]]:
        """The echoes this build envelopes, by the rule it was built under."""
        return self.surface.verbatim_echoes if self.verbatim_echoes else self.surface.echoes

    def bounded(self, text: str, ref: str | None) -> str:
        if self.cap_tokens is None or self.view_estimate is None:
            return text
        return bounded_view(text, cap_tokens=self.cap_tokens, estimate=self.view_estimate, ref=ref if self.read_tool else None)

    def arguments(self, arguments: dict[str, Any], ref: str) -> dict[str, Any]:
        if self.cap_tokens is None:
            return arguments
        whole = canonical_json(arguments)
        view = self.bounded(whole, ref)
        return arguments if view is whole else {"arguments_view": view}

    def wrap(self, text: str, *, source: str, trust: str, ref: str, in_tool_result: bool = False) -> str:
        if trust == "platform":
            return text
        attribution = Attribution(source=source, trust=trust, ref=ref, session=self.plan.session_id)
        return envelope(
            text,
            attribution,
            secret=self.secret,
            in_tool_result=in_tool_result and self.tool_trust_implied,
            nonce_digits=self.nonce_digits,
        )

    def layer(self, seq: int) -> str:
        return "live" if seq >= self.surface.seed_seq else "stage_local"

    def views(self) -> tuple[Hashable, ...]:
        """What shapes bounded views and pointers besides the text: entries rendered under others are rendered afresh."""
        return (
            self.cap_tokens,
            self.bound_pinned,
            self.view_estimate if self.cap_tokens is not None else None,
            self.read_tool,
            self.tool_trust_implied,
            self.nonce_digits,
        )

    def run(self) -> tuple[Message, ...]:
        memo = self.memo
        if memo is None:
            for entry in self.surface.entries:
                self._entry(entry)
        else:
            memo.begin(self.secret)
            surface = self.surface
            views = self.views()
            inputs = (
                surface.seed_seq,
                self.echoes,
                surface.stale_reasoning,
                self.tail.erased_evidence,
                self.drop_recall,
                views,
            )
            kept, messages, removed, newest = memo.run_prefix(surface.entries, inputs)
            self.messages.extend(messages)
            self.removed += removed
            for entry in surface.entries[kept:]:
                key = self._memo_key(entry, views)
                known = memo.get(entry, key)
                if known is not None:
                    self.messages.extend(known[0])
                    self.removed += known[1]
                else:
                    start, removed = len(self.messages), self.removed
                    self._entry(entry)
                    memo.put(entry, key, tuple(self.messages[start:]), self.removed - removed)
                newest.append(max(newest[-1] if newest else 0, entry.last_seq if isinstance(entry, Exchange) else entry.seq))
                memo.ran(entry, len(self.messages), self.removed)
            memo.end(self.messages)
        tail = self._tail()
        if tail:
            self._add("user", tail)
        return tuple(self.messages)

    def _memo_key(self, entry: Entry, views: Hashable) -> Hashable:
        """Every input besides the entry itself that shapes what it renders to (``views``: :meth:`views`)."""
        seed = self.surface.seed_seq
        newest = entry.last_seq if isinstance(entry, Exchange) else entry.seq
        # Parts at or after the run's first message are "live": only a seed inside the entry splits it.
        # An entry wholly before the seed is all "stage_local": -1, never 0, which is a seed of 0
        # (no run started yet, every part "live").
        split = seed if newest >= seed else -1
        match entry:
            case UserTurn():
                recall = entry.frame.recall if entry.frame is not None else ()
                erased = tuple(evidence.id in self.tail.erased_evidence for evidence in recall)
                return (split, self.drop_recall and entry.seq == seed, erased, views)
            case Exchange() | AssistantReply():
                return (split, self.echoes.get(entry.ref, ()), entry.seq in self.surface.stale_reasoning, views)
            case _:
                return (split, views)

    def _entry(self, entry: Entry) -> None:
        match entry:
            case Summary():
                self._summary(entry)
            case UserTurn():
                self._user_turn(entry)
            case Exchange():
                self._exchange(entry)
            case AssistantReply():
                if entry.message.text:
                    self._add("assistant", self._assistant_parts(entry.message, entry.ref, entry.seq))
            case DecisionEntry():
                self._decision(entry)
            case ArtifactEntry():
                self._artifact(entry)

    def _add(self, role: str, parts: list[Part]) -> None:
        if parts:
            self.messages.append(Message(role=role, parts=tuple(parts)))  # type: ignore[arg-type]  # callers pass 'user' or 'assistant'

    def _assistant_parts(self, message: AssistantMessage, ref: str, seq: int) -> list[Part]:
        """The answer's text and tool calls, with its signed reasoning put back where it stood, untouched."""
        layer = self.layer(seq)
        others: list[Part] = []
        if message.text:
            others.append(self._assistant_text(message.text, ref, seq, phase=message.phase))
        for call in message.tool_calls:
            arguments = self.arguments(to_plain(call.arguments), ref)
            others.append(
                ToolCallPart(id=call.id, name=call.name, arguments=arguments, ref=ref, layer=layer, namespace=call.namespace)
            )
        if not message.reasoning:
            return others
        parts: list[Part] = []
        pending = list(message.reasoning)
        stale = seq in self.surface.stale_reasoning
        for index in range(len(others) + 1):
            while pending and pending[0].position <= index:
                block = pending.pop(0)
                parts.append(
                    ReasoningPart(provider=block.provider, block=to_plain(block.block), ref=ref, layer=layer, stale=stale)
                )
            if index < len(others):
                parts.append(others[index])
        return parts

    def _assistant_text(self, text: str, ref: str, seq: int, *, phase: str | None = None) -> TextPart:
        # What the assistant repeated of untrusted text keeps that text's trust: it is
        # enveloped in place, so an echoed instruction never reads as the assistant's own.
        echoes = self.echoes.get(ref, ())
        view = self.bounded(text, ref)
        if view is not text and view != text:
            # Too large to show whole: the bounded view goes in one envelope at the lowest
            # trust it repeats, since a cut could otherwise split an echo's envelope.
            if echoes:
                view = self.wrap(view, source="echo", trust=lowest_trust(e.trust for e in echoes), ref=f"{ref}/echo")
            text = view
        elif echoes:
            pieces: list[str] = []
            at = 0
            for i, echo in enumerate(echoes):
                quoted = self.wrap(text[echo.start : echo.end], source="echo", trust=echo.trust, ref=f"{ref}/echo/{i}")
                pieces += [text[at : echo.start], "\n" if pieces or echo.start else "", quoted, "\n"]
                at = echo.end
            text = "".join([*pieces, text[at:]])
        layer = self.layer(seq)
        return TextPart(
            text=text, trust="assistant", source="assistant", ref=ref, budget_class="history", layer=layer, phase=phase
        )

    def _summary(self, entry: Summary) -> None:
        # Each line keeps the trust of what it was extracted from: a user's ask stays the
        # user's, the record of replies and tool activity is data. Lines are numbered by
        # turn and gathered into one block per trust level, so the order survives while
        # the envelopes stay few (one per level, not one per turn).
        blocks = entry.compacted.summary.splitlines()[:1]  # the header is the platform's own text
        lines = summary_lines(entry.compacted)
        by_trust: dict[str, list[str]] = {}
        turn = 0
        for line in lines:
            if line.text.startswith("- "):
                turn += 1
            by_trust.setdefault(line.trust, []).append(f"[{turn}] {line.text.strip()}" if turn else line.text)
        for trust, texts in by_trust.items():
            blocks.append(self.wrap("\n".join(texts), source="summary", trust=trust, ref=f"{entry.ref}/{trust}"))
        self._add(
            "user",
            [
                TextPart(
                    text="\n".join(blocks),
                    trust=lowest_trust(line.trust for line in lines),
                    source="summary",
                    ref=entry.ref,
                    budget_class="summary",
                    layer="compressed_session",
                )
            ],
        )

    def _decision(self, entry: DecisionEntry) -> None:
        text = self.wrap(render_decision(entry.decision), source="decision_point", trust="user", ref=entry.ref)
        self._add(
            "user",
            [
                TextPart(
                    text=text,
                    trust="user",
                    source="decision_point",
                    ref=entry.ref,
                    budget_class="decision_points",
                    layer="compressed_session",
                )
            ],
        )

    def _artifact(self, entry: ArtifactEntry) -> None:
        shown = render_artifact(entry.declared, entry.current_step, read_tool=self.read_tool)
        text = self.wrap(shown, source="artifact", trust="user", ref=entry.ref)
        self._add(
            "user",
            [
                TextPart(
                    text=text,
                    trust="user",
                    source="artifact",
                    ref=entry.ref,
                    budget_class="artifacts",
                    layer=self.layer(entry.seq),
                )
            ],
        )

    def _user_turn(self, entry: UserTurn) -> None:
        parts: list[Part] = []
        layer = self.layer(entry.seq)
        if entry.frame is not None:
            frame, fref = entry.frame, entry.frame_ref or entry.ref
            if frame.runtime:
                parts.append(
                    TextPart(
                        text=frame.runtime,
                        trust="platform",
                        source="runtime",
                        ref=f"{fref}/runtime",
                        budget_class="runtime",
                        layer=layer,
                    )
                )
            if frame.working_state:
                state = WorkingState.from_dict(frame.working_state)
                if not state.is_empty():
                    text = self.wrap(state.render(), source="working_state", trust="tool", ref=f"{fref}/working_state")
                    parts.append(
                        TextPart(
                            text=text,
                            trust="tool",
                            source="working_state",
                            ref=f"{fref}/working_state",
                            budget_class="working_state",
                            layer=layer,
                        )
                    )
            current = entry.seq == self.surface.seed_seq
            for evidence in frame.recall:
                if evidence.id in self.tail.erased_evidence:
                    self.removed += 1
                    continue
                if current and self.drop_recall:
                    continue
                parts.append(self._evidence(evidence, f"{fref}/recall/{evidence.id}", layer="project_memory"))
        author = entry.message.author
        cls = "steering" if entry.message.steering else "history"
        # The task and steering notes yield last: relief folds and prunes everything else first.
        shown = self.bounded(entry.message.text, entry.ref) if self.bound_pinned or not entry.pinned else entry.message.text
        text = self.wrap(shown, source=author, trust=author, ref=entry.ref)
        parts.append(TextPart(text=text, trust=author, source=author, ref=entry.ref, budget_class=cls, layer=layer))
        self._add("user", parts)

    def _evidence(self, evidence: Evidence, ref: str, *, layer: str, volatile: bool = False) -> TextPart:
        text = self.wrap(evidence.text, source=f"{evidence.source}:{evidence.id}", trust=evidence.trust, ref=ref)
        return TextPart(
            text=text,
            trust=evidence.trust,
            source=evidence.source,
            ref=ref,
            budget_class="recall",
            layer=layer,
            volatile=volatile,
        )

    def _exchange(self, entry: Exchange) -> None:
        self._add("assistant", self._assistant_parts(entry.message, entry.ref, entry.seq))
        by_id = {r.result.call_id: r for r in entry.results}
        results: list[Part] = []
        for call in entry.calls:
            stored = by_id.get(call.id)
            if stored is None:
                continue  # the validator reports the orphan with its id
            result = stored.result
            repeat = _repeat_stub(stored)
            if repeat is not None:
                results.append(
                    ToolResultPart(
                        call_id=call.id,
                        name=result.tool_name,
                        text=repeat,
                        is_error=result.is_error,
                        trust="platform",
                        ref=stored.ref,
                        layer=self.layer(stored.seq),
                        budget_class="pointers",
                    )
                )
                continue
            if stored.pruned:
                # The stub is platform-written (no tool text in it), so it needs no envelope;
                # it names the original's trust level and where to read it back.
                results.append(
                    ToolResultPart(
                        call_id=call.id,
                        name=result.tool_name,
                        text=_pointer_stub(result, self.read_tool),
                        is_error=result.is_error,
                        trust="platform",
                        ref=stored.ref,
                        layer=self.layer(stored.seq),
                        budget_class="pointers",
                    )
                )
                continue
            source = f"tool:{result.tool_name}"
            results.append(
                ToolResultPart(
                    call_id=call.id,
                    name=result.tool_name,
                    text=self.wrap(result.output, source=source, trust=result.trust, ref=stored.ref, in_tool_result=True),
                    is_error=result.is_error,
                    trust=result.trust,
                    ref=stored.ref,
                    layer=self.layer(stored.seq),
                )
            )
        self._add("user", results)

    def _tail(self) -> list[Part]:
        parts: list[Part] = []
        base = f"{self.surface.session_id}#tail@{self.surface.upto_seq}"
        if not self.drop_recall:
            # Evidence that appeared during the turn: in the tail, so the cached history before it stays as sent.
            for evidence in self.tail.evidence:
                parts.append(self._evidence(evidence, f"{base}/recall/{evidence.id}", layer="live", volatile=True))
        for correction in self.tail.corrections:
            ref = f"{base}/correction/{correction.evidence_id}"
            now_reads = self.bounded(correction.text, None)
            body = f"Correction: evidence {correction.evidence_id} you were shown earlier has changed. It now reads:\n{now_reads}"
            text = self.wrap(body, source=f"correction:{correction.evidence_id}", trust=correction.trust, ref=ref)
            parts.append(
                TextPart(
                    text=text,
                    trust=correction.trust,
                    source="correction",
                    ref=ref,
                    budget_class="corrections",
                    layer="live",
                    volatile=True,
                )
            )
        if self.tail.working_state is not None:
            ref = f"{base}/working_state"
            text = self.wrap(self.tail.working_state.render(), source="working_state", trust="tool", ref=ref)
            parts.append(
                TextPart(
                    text=text,
                    trust="tool",
                    source="working_state",
                    ref=ref,
                    budget_class="working_state",
                    layer="live",
                    volatile=True,
                )
            )
        for index, nudge in enumerate(self.tail.nudges):
            parts.append(
                TextPart(
                    text=nudge,
                    trust="platform",
                    source="runtime",
                    ref=f"{base}/nudge/{index}",
                    budget_class="nudges",
                    layer="live",
                    volatile=True,
                )
            )
        return parts


def render_messages(
    *,
    plan: ContextPlan,
    allocation: Allocation,
    surface: Surface,
    tail: VolatileTail,
    secret: bytes,
    view_estimate: Estimate,
    memo: RenderMemo | None = None,
) -> tuple[Message, ...]:
    """The messages a request would carry, with no yields taken (for sizing relief passes).

    Oversized items are bounded as a default :func:`build` bounds them (sized by ``view_estimate``):
    sized whole, a pass would shed room they never take. Envelopes are written as a new request
    writes them (:data:`~contextwright.assembly.rules.CURRENT`).
    ``memo`` reuses what earlier calls rendered; give it a memo of its own, not a build's.
    """
    return _Assembler(
        plan=plan,
        surface=surface,
        tail=tail,
        secret=secret,
        drop_recall=False,
        cap_tokens=item_cap(allocation.history),
        view_estimate=view_estimate,
        read_tool=plan.prefix.read_tool(),
        memo=memo,
        tool_trust_implied=_tool_trust_implied(plan, CURRENT_RULES),
        nonce_digits=_nonce_digits(CURRENT_RULES),
    ).run()


def _tool_trust_implied(plan: ContextPlan, rules: RuleSet) -> bool:
    """Whether ``rules`` leave a tool output's trust to its tool-result block in ``plan``'s history."""
    # Only where the pinned framing tells the model so: a session that pinned an older one keeps its envelopes.
    return rules.tool_trust_implied and plan.prefix.framing.text in TOOL_TRUST_FRAMINGS


def _nonce_digits(rules: RuleSet) -> int:
    """The length of the envelope ids ``rules`` write in the history."""
    return SHORT_NONCE_HEX_DIGITS if rules.short_nonces else NONCE_HEX_DIGITS


def build(
    *,
    plan: ContextPlan,
    allocation: Allocation,
    surface: Surface,
    tail: VolatileTail,
    secret: bytes,
    estimate: Estimate,
    yields: tuple[str, ...] | None = None,
    memo: RenderMemo | None = None,
    bounded_pinned: bool = False,
    view_estimate: Estimate | None = None,
    rules: RuleSet = CURRENT_RULES,
) -> BuildResult:
    """Assemble the request for the next model call.

    ``estimate`` sizes a text in tokens (conservatively). An item larger than a share of
    the history budget (assembly/bounded.py) is shown bounded from the first request it
    appears in, like a tool output capped at call time (R1): its view is decided once, so
    no later request rewrites the cached history after it by bounding it then.
    Under rule sets before :attr:`~contextwright.assembly.rules.RuleSet.items_on_arrival`
    every item starts whole and oversized ones are bounded only when the body does not fit
    (:data:`BOUNDED_YIELD`). When the body does not fit, the yield ``build`` takes itself is dropping the current turn's
    recall; beyond that it raises :class:`BudgetExceeded` and the runtime relieves
    pressure (pruning, compaction) with recorded writes, then builds again.
    ``yields`` replays a recorded decision instead of measuring (used by rebuilds).
    ``memo`` (optional) reuses what earlier builds of the same session rendered for
    entries that did not change; the request is the same with or without it. Pinned items
    (the task statement, steering notes) stay whole unless ``bounded_pinned``
    (:data:`PINNED_BOUNDED_YIELD`), which only the runtime's last resort takes: a decision
    of this request, recorded in its yields, not a rule.
    ``rules`` is the rule set to build under (:mod:`contextwright.assembly.rules`): the
    current one for a new request, the recorded one for a rebuild.
    ``view_estimate`` sizes bounded views under rule sets with ``uncorrected_views`` (default,
    and under older sets: ``estimate``). It is data, like ``estimate``: the runtime gives an
    uncorrected counter here, so that a view keeps its bytes when reconciliation moves
    ``estimate``'s correction factor.
    """
    if memo is None:
        system, tools, prefix_hash = _prefix(plan, secret)
    else:
        system, tools, prefix_hash = memo.prefix(plan.prefix, plan.session_id, secret, partial(_prefix, plan, secret))

    decided = yields is not None
    bounded = rules.items_on_arrival
    starting: tuple[str, ...] = ()
    if bounded_pinned:
        # Pinned items are bounded by the same cap as the others, so the cap is on too.
        starting = (PINNED_BOUNDED_YIELD,) if bounded else (BOUNDED_YIELD, PINNED_BOUNDED_YIELD)
    taken: tuple[str, ...] = tuple(yields or starting)
    read_tool = plan.prefix.read_tool() if rules.read_refs_when_pinned else READ_TOOL_NAME
    views = view_estimate if rules.uncorrected_views and view_estimate is not None else estimate
    tool_trust_implied = _tool_trust_implied(plan, rules)
    if memo is not None:
        memo.next_pass()
    while True:
        capped = bounded or BOUNDED_YIELD in taken
        assembler = _Assembler(
            plan=plan,
            surface=surface,
            tail=tail,
            secret=secret,
            drop_recall="recall" in taken,
            cap_tokens=item_cap(allocation.history) if capped else None,
            bound_pinned=PINNED_BOUNDED_YIELD in taken or (not rules.pinned_last and BOUNDED_YIELD in taken),
            view_estimate=views,
            read_tool=read_tool,
            memo=memo,
            verbatim_echoes=not rules.normalised_echoes,
            tool_trust_implied=tool_trust_implied,
            nonce_digits=_nonce_digits(rules),
        )
        messages = assembler.run()
        by_class, by_layer, body = _account(messages, estimate, memo)
        if decided or allocation.fits(body):
            break
        if "recall" not in taken and by_class.get("recall", 0) and _current_turn_has_recall(surface, tail):
            taken = (*taken, "recall")
            continue
        if not capped:
            # Then oversized items (assembly/bounded.py) are shown bounded: no single input may wedge a session.
            taken = (*taken, BOUNDED_YIELD)
            continue
        raise BudgetExceeded(
            f"session {plan.session_id!r}: the body needs about {allocation.with_margin(body):,} tokens "
            f"(with the safety margin) but {allocation.body_limit:,} are available",
            session_id=plan.session_id,
            body_tokens=body,
            body_limit=allocation.body_limit,
            tokens_by_class=by_class,
        )
    check_regions(system, messages, memo)
    stable = len(messages) - (1 if messages and any(getattr(p, "volatile", False) for p in messages[-1].parts) else 0)
    request = NeutralRequest(
        session_id=plan.session_id,
        epoch=plan.epoch,
        model=plan.model.id,
        provider=plan.model.provider,
        max_output_tokens=plan.model.output_reserve,
        system=system,
        tools=tools,
        messages=messages,
        # Hash what was actually rendered, so any drift in the prefix bytes shows up.
        prefix_sha256=prefix_hash,
        stable_messages=stable,
        cache_key=cache_key(plan.session_id, plan.epoch),
    )
    prefix_classes = dict(plan.prefix_tokens)
    all_classes = {**prefix_classes, **by_class}
    layers = dict(by_layer)
    layers["stage_local"] = layers.get("stage_local", 0) + sum(v for k, v in prefix_classes.items() if k != "memory_snapshot")
    layers["project_memory"] = layers.get("project_memory", 0) + prefix_classes.get("memory_snapshot", 0)
    return BuildResult(
        request=request,
        body_tokens=body,
        tokens_by_class=dict(sorted(all_classes.items())),
        tokens_by_layer=dict(sorted(layers.items())),
        yields=taken,
        pressure=allocation.pressure(body),
        tool_results_over_share=by_class.get("tool_results", 0) > allocation.tool_results,
        evidence_removed=assembler.removed,
        upto_seq=surface.upto_seq,
        dedupe_hits=surface.dedupe_hits,
    )


def _prefix(plan: ContextPlan, secret: bytes) -> tuple[tuple[SystemBlock, ...], tuple[ToolDefinition, ...], str]:
    """The system blocks and tools of ``plan``'s prefix, and the hash of them."""
    system = render_prefix(plan.prefix, session_id=plan.session_id, secret=secret).system_blocks()
    tools = tool_definitions(plan.prefix)
    return system, tools, prefix_sha256(system, tools)


@lru_cache(maxsize=64, typed=True)  # typed: True and 1 encode differently, so they must not share an entry
def cache_key(session_id: str, epoch: int) -> str:
    """A stable cache-routing key per (session, epoch) that does not reveal the session id."""
    return "cw-" + content_hash([session_id, epoch]).split(":", 1)[1][:32]


def body_tokens(messages: Sequence[Message], estimate: Estimate, memo: RenderMemo | None = None) -> int:
    """The body's size as ``build`` accounts it (per-message and per-part overheads included)."""
    return _account(messages, estimate, memo)[2]


def _account(
    messages: Sequence[Message], estimate: Estimate, memo: RenderMemo | None = None
) -> tuple[dict[str, int], dict[str, int], int]:
    if memo is not None:
        # Counters handed out by a session's estimate memo keep their counts: a message is sized once,
        # and the sums move by the messages that came and left since the last request.
        return memo.sums(messages, estimate, partial(_message_size, estimate=estimate, memo=memo))
    return add_sizes(({}, {}, 0), [_message_size(message, estimate, None) for message in messages], 1)


def _message_size(message: Message, estimate: Estimate, memo: RenderMemo | None) -> Sizes:
    """One message's tokens by budget class and by layer (in the order its parts name them), and in all."""
    by_class: dict[str, int] = {}
    by_layer: dict[str, int] = {}
    total = MESSAGE_OVERHEAD_TOKENS
    for part in message.parts:
        text, cls, layer = _sized(part) if memo is None else memo.derived(part, partial(_sized, part))
        tokens = estimate(text) + PART_OVERHEAD_TOKENS
        total += tokens
        by_class[cls] = by_class.get(cls, 0) + tokens
        by_layer[layer] = by_layer.get(layer, 0) + tokens
    return tuple(by_class.items()), tuple(by_layer.items()), total


def sized_texts(messages: Sequence[Message]) -> Iterator[str]:
    """The texts the parts of ``messages`` are sized by (what a build counts tokens of)."""
    for message in messages:
        for part in message.parts:
            yield _sized(part)[0]


def _sized(part: Part) -> tuple[str, str, str]:
    """What a part is sized by, and the budget class and layer that pay for it."""
    if isinstance(part, ToolCallPart):
        return canonical_json({"name": part.name, "arguments": part.arguments}), "history", part.layer
    if isinstance(part, ReasoningPart):
        # Signatures and encrypted reasoning are paid for as sent, so they are sized as sent.
        return canonical_json(part.block), part.budget_class, part.layer
    return part.text, part.budget_class, part.layer


def _current_turn_has_recall(surface: Surface, tail: VolatileTail) -> bool:
    if tail.evidence:
        return True
    turn = surface.current_turn()
    return bool(turn and turn.frame and turn.frame.recall)


def render_decision(decision: Any) -> str:
    """A decision point as the model reads it."""
    lines = [f"Stage {decision.name!r} closed. Goal: {decision.goal}", f"Outcome: {decision.outcome}"]
    if decision.rationale:
        lines.append(f"Rationale: {decision.rationale}")
    lines += [f"Artifact: {a}" for a in decision.artifacts]
    lines += [f"Unresolved failure: {f}" for f in decision.failures]
    lines += [f"User steering: {s}" for s in decision.steering]
    return "\n".join(lines)


def render_artifact(declared: Any, current: int, *, read_tool: str | None = READ_TOOL_NAME) -> str:
    """An artifact: whole when it has no steps; otherwise only the current step and its neighbours.

    ``read_tool`` is the tool that reads the rest (None: the prefix pins none, so none is named)."""
    head = f"{declared.title} (v{declared.version}): {declared.summary}"
    short = declared.pointer.ref[:19]
    ref = f"{read_tool} ref={short}" if read_tool else f"the session log (ref={short})"
    if not declared.steps:
        return f"{head}\nFull text: {ref}"
    total = len(declared.steps)
    current = max(0, min(current, total - 1))
    shown = range(max(0, current - 1), min(total, current + 2))
    lines = [head, f"Step {current + 1} of {total} is current; steps {shown.start + 1}-{shown.stop} shown, the rest via {ref}:"]
    for index in shown:
        marker = "→" if index == current else " "
        lines.append(f"{marker} {index + 1}. {declared.steps[index]}")
    return "\n".join(lines)


def _repeat_stub(stored: Any) -> str | None:
    if stored.duplicate_of is not None:
        return f"[same output as call {stored.duplicate_of}: same tool, same arguments, same output]"
    if stored.superseded_by is not None:
        return f"[this attempt failed; call {stored.superseded_by} later succeeded with the same arguments]"
    return None


def _pointer_stub(result: Any, read_tool: str | None) -> str:
    pointer = result.artifact
    if pointer is None:
        return f"[{result.tool_name} output ({result.trust}, {len(result.output):,} chars) removed from context; kept in the log]"
    # A 12-digit prefix of the ref is enough for the read tool within the session.
    where = f"read: {read_tool} ref={pointer.ref[:19]}" if read_tool else f"kept in the session log, ref={pointer.ref[:19]}"
    return f"[{result.tool_name} output ({pointer.trust}, {pointer.size_chars:,} chars) out of context; {where}]"
