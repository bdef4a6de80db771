"""Pressure relief: batched pruning, archive-first compaction, forced relief after an overflow."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from contextwright.assembly.assemble import (
    BudgetExceeded,
    BuildResult,
    VolatileTail,
    body_tokens,
    build,
    render_messages,
)
from contextwright.assembly.memo import RenderMemo
from contextwright.assembly.request import Message, NeutralRequest, Part
from contextwright.budget.allocator import Allocation, allocate
from contextwright.canonical import canonical_json, to_plain
from contextwright.clock import format_instant
from contextwright.derive._surface import AssistantReply, Entry, Exchange, ResultEntry, Summary, Surface
from contextwright.derive._taint import archived_trust, lowest_trust
from contextwright.errors import (
    ContextwrightError,
)
from contextwright.events.catalog import (
    ArtifactPointer,
    Compacted,
    CompactionRejected,
    CompactionTrigger,
    LayerTruncated,
    Pruned,
)
from contextwright.events.envelope import Event
from contextwright.events.registry import encode_payload
from contextwright.plan.plan import ContextPlan
from contextwright.relief.compaction_check import label_problems
from contextwright.relief.compactor import CompactionResult, Compactor, compact
from contextwright.runtime.core import SessionCore
from contextwright.runtime.errors import (
    ArchiveFailed,
    EscalationRequired,
    SummaryUnavailable,
)
from contextwright.runtime.limits import ENVELOPE_TOKENS, POINTER_STUB_TOKENS

_log = logging.getLogger(__name__)


def visible_tool_result_tokens(surface: Surface, estimate: Callable[[str], int], memo: RenderMemo | None = None) -> int:
    """What the tool results not yet pruned cost in a request, envelopes included (B2's measure).

    With ``memo``, an entry the last call also saw (the very same object, same counter) is not sized again."""
    if memo is None:
        return sum(_visible_tokens(entry, estimate) for entry in surface.entries)
    return sum(memo.per_items(surface.entries, estimate, partial(_visible_tokens, estimate=estimate)))


def _visible_tokens(entry: Entry, estimate: Callable[[str], int]) -> int:
    results = _open_results(entry, estimate)
    return results.visible if results is not None else 0


def bounds_only_new(request: NeutralRequest, previous: NeutralRequest | None) -> bool:
    """True when ``request`` repeats every message ``previous`` cached: what it shows bounded is new.

    Bounding a message that arrived since the previous request changes no cached block, and
    later requests show it bounded the same way (the cap is fixed per plan and views are sized
    by the uncorrected estimate) until relief frees room.
    """
    if previous is None:
        return True
    stable = previous.messages[: previous.stable_messages]
    if len(request.messages) < len(stable):
        return False
    # The layer a part is paid from moves as the run ages; it is not sent, so it is not compared.
    # An unchanged message is the very object the render memo gave the previous request.
    return all(a is b or _as_sent(a) == _as_sent(b) for a, b in zip(request.messages, stable, strict=False))


def _as_sent(message: Message) -> tuple[str, tuple[Part, ...]]:
    return message.role, tuple(replace(part, layer="") for part in message.parts)


@dataclass(frozen=True, slots=True)
class _OpenResults:
    """An exchange's tool results not yet pruned, with their sizes, as a pruning pass reads them."""

    complete: bool
    sized: tuple[tuple[ResultEntry, int], ...]
    """Each result not yet pruned and the tokens of its output."""
    visible: int
    """What those results cost in a request, envelopes included (B2's measure)."""


def _open_results(entry: Entry, estimate: Callable[[str], int]) -> _OpenResults | None:
    if not isinstance(entry, Exchange):
        return None
    # A repeat (a duplicate, a failed attempt a later call redid) is shown as a short stub, not its output.
    sized = tuple(
        (r, estimate(r.result.output) if _shown_whole(r) else POINTER_STUB_TOKENS) for r in entry.results if not r.pruned
    )
    return _OpenResults(entry.complete, sized, sum(size + ENVELOPE_TOKENS for _, size in sized))


def _shown_whole(result: ResultEntry) -> bool:
    """True when a request shows ``result``'s output itself: not a pointer, nor the stub of a repeat."""
    return not result.pruned and result.duplicate_of is None and result.superseded_by is None


def distinctive_names(text: str) -> frozenset[str]:
    """The names in ``text`` an agent quotes back: identifiers, paths and dotted names of six characters or more
    with an underscore, a dot, a slash or a capital (``build_filter``, ``db/models/query.py``, ``SimpleCol``);
    plain lower-case words are left out."""
    return frozenset(w for w in _NAME.findall(text) if not w.islower() or any(c in w for c in "_./"))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{5,}")


class NameMemo:
    """:func:`distinctive_names` of each tool output and assistant turn, found once per session (they never change)."""

    def __init__(self) -> None:
        self._outputs: dict[str, frozenset[str]] = {}
        self._turns: dict[int, frozenset[str]] = {}

    def output(self, result: ResultEntry) -> frozenset[str]:
        """The names in a tool result's output."""
        names = self._outputs.get(result.result.call_id)
        if names is None:
            names = self._outputs[result.result.call_id] = distinctive_names(result.result.output)
        return names

    def turn(self, entry: Exchange | AssistantReply) -> frozenset[str]:
        """The names in what an assistant turn said: its text and, for tool calls, their arguments."""
        names = self._turns.get(entry.seq)
        if names is None:
            text = entry.message.text
            if isinstance(entry, Exchange):
                text = "\n".join([text, *(canonical_json(to_plain(c.arguments)) for c in entry.calls)])
            names = self._turns[entry.seq] = distinctive_names(text)
        return names


def prune_order(candidates: Sequence[ResultEntry], entries: Sequence[Entry], names: NameMemo | None = None) -> list[ResultEntry]:
    """``candidates`` in the order a pruning pass turns them into pointers: superseded outputs first, then outputs
    the agent has not quoted since they arrived, then the rest; within each group the oldest first.

    An output is superseded when a later call of the same tool with the same arguments (the same file
    read again, the same command run again) succeeded and its output is shown in the request: the model
    reads the newer one, so pointing at the older takes away little it cannot still see. An output is
    quoted when a later assistant turn (its text or its tool calls' arguments) says one of the output's
    distinctive names (:func:`distinctive_names`) that its own call did not already say and that at most
    one other output shown holds (a repository root or a common path proves nothing): the agent is
    working from that output and is likely to name what it holds again. Within a group the newest
    outputs are the ones the model reads next, so they are the last to go. A repeat already shown as a
    stub frees nothing and is not a candidate."""
    names = names or NameMemo()
    keys: dict[str, tuple[str, str]] = {}
    """Each call's tool and arguments."""
    asked: dict[str, frozenset[str]] = {}
    """The names each call's own assistant turn said."""
    said: dict[str, int] = {}
    """Each name an assistant turn said, and the seq of the last turn that said it."""
    held: dict[str, int] = {}
    """How many outputs shown hold each name."""
    newest: dict[tuple[str, str], int] = {}
    """The seq of the newest successful output shown of each tool and arguments."""
    for entry in entries:
        if isinstance(entry, (Exchange, AssistantReply)):
            turn = names.turn(entry)
            for name in turn:
                said[name] = max(said.get(name, entry.seq), entry.seq)
        if not isinstance(entry, Exchange):
            continue
        for call in entry.calls:
            keys[call.id] = (call.name, canonical_json(to_plain(call.arguments)))
        for r in entry.results:
            asked[r.result.call_id] = turn
            if not _shown_whole(r):
                continue
            for name in names.output(r):
                held[name] = held.get(name, 0) + 1
            key = keys.get(r.result.call_id)
            if key is not None and not r.result.is_error:
                newest[key] = max(newest.get(key, r.seq), r.seq)

    def superseded(r: ResultEntry) -> bool:
        key = keys.get(r.result.call_id)
        return key is not None and newest.get(key, r.seq) > r.seq

    def quoted(r: ResultEntry) -> bool:
        own = asked.get(r.result.call_id, frozenset())
        return any(said.get(n, -1) > r.seq and n not in own and held.get(n, 0) <= 2 for n in names.output(r))

    return sorted((r for r in candidates if _shown_whole(r)), key=lambda r: (not superseded(r), quoted(r), r.seq))


class Relief:
    """Pressure relief of one session: batched pruning, archive-first compaction, forced relief after an overflow."""

    def __init__(self, core: SessionCore, compactor: Compactor) -> None:
        self.core = core
        self.plugged = compactor
        """The compactor the session was given (the extractive :func:`compact` unless one was plugged in)."""
        # Sizing a pruning pass renders the whole body, on every request under pressure (most
        # decline): its own memo makes that incremental like the builds, same messages and sums.
        self._sizing_memo = RenderMemo()
        self._bounded_pinned = False
        self._result_sizes = RenderMemo()
        self._names = NameMemo()

    def compactor(
        self, surface: Surface, *, epoch: int, trigger: CompactionTrigger, max_summary_chars: int | None = None
    ) -> CompactionResult:
        """The plugged compactor's proposal, once its labels are checked (:mod:`contextwright.relief.compaction_check`).

        A proposal that breaks them is not adopted: a ``context.compaction.rejected`` event names
        the compactor and each breach (never the text), a warning is logged, and the extractive
        compactor's proposal for the same surface stands in, so no pass is lost to a faulty plugin.
        A plugin that raises (a model call that failed or timed out: :class:`SummaryUnavailable`)
        is recorded the same way, with the engine's reason or the exception's class."""
        options = {} if max_summary_chars is None else {"max_summary_chars": max_summary_chars}
        if self.plugged is compact:
            return compact(surface, epoch=epoch, trigger=trigger, **options)
        try:
            proposal = self.plugged(surface, epoch=epoch, trigger=trigger, **options)
        except Exception as exc:  # a plugin's failure (a model call, say) never stops a pass
            # Only the engine's own message is recorded; another exception is named by its class.
            said = exc.message if isinstance(exc, SummaryUnavailable) else type(exc).__name__
            return self._rejected(surface, epoch, trigger, options, (f"it proposed nothing: {said}",), "failed")
        if proposal.compacted is None:
            return proposal
        problems = label_problems(surface, proposal.compacted)
        if not problems:
            return proposal
        fallback = compact(surface, epoch=epoch, trigger=trigger, **options)
        if fallback == proposal:
            return proposal  # a wrapper of the extractive compactor (a lease, a metric): its labels are the extractive ones
        return self._rejected(surface, epoch, trigger, options, problems, "proposed a summary that breaks its trust labels")

    def _rejected(
        self,
        surface: Surface,
        epoch: int,
        trigger: CompactionTrigger,
        options: dict[str, int],
        problems: tuple[str, ...],
        what: str,
    ) -> CompactionResult:
        """Record why the plugged compactor's proposal is not adopted, and return the extractive one instead."""
        name = _name(self.plugged)
        self.core.append([CompactionRejected(epoch=epoch, compactor=name, problems=problems)])
        _log.warning(
            "session %r: compactor %s %s (%s); the extractive summary stands in",
            self.core.id,
            name,
            what,
            "; ".join(problems),
        )
        return compact(surface, epoch=epoch, trigger=trigger, **options)

    def compact(self, *, trigger: CompactionTrigger = "manual") -> Event | None:
        """Fold history before the current run into a summary now.

        Strict: the folded events are archived first, and if the archive cannot be
        written this raises :class:`ArchiveFailed` and changes nothing.
        """
        self.core.sync()
        plan = self.core.planner().current
        proposal = self.compactor(self.core.surface(), epoch=plan.epoch if plan else 0, trigger=trigger)
        if proposal.escalate:
            raise EscalationRequired(proposal.reason, session_id=self.core.id)
        if proposal.compacted is None:
            return None
        return self._adopt(proposal.compacted, strict=True)

    def _adopt(self, compacted: Compacted, *, strict: bool) -> Event:
        """Archive the folded events, then record the compaction (archive-first)."""
        archive_events = self.core.read_upto(compacted.upto_seq)
        text = "\n".join(
            canonical_json({"seq": e.seq, "type": e.type, "at": format_instant(e.at), "payload": encode_payload(e.payload)})
            for e in archive_events
        )
        try:
            ref = self.core.log.put_artifact(text, kind="compaction_archive")
        except ContextwrightError as exc:
            if strict:
                raise ArchiveFailed(
                    f"session {self.core.id!r}: the compaction archive could not be written ({exc.message}); nothing was compacted",
                    session_id=self.core.id,
                ) from exc
            # The automatic path is a safety valve (ADR-0101 D5): compact anyway, say so in the event
            # (the metric counts it) and loudly in the process log.
            _log.error(
                "session %r: the compaction archive could not be written (%s); compacting up to seq %d anyway, "
                "and the folded events stay in the log",
                self.core.id,
                type(exc).__name__,
                compacted.upto_seq,
            )
            return self.core.append([replace(compacted, archive_failed=True)])[0]
        # The archive holds the folded events verbatim, tool output included: reading it back
        # must carry the lowest trust of what it holds, never the platform's.
        trust = lowest_trust(archived_trust(e) for e in archive_events)
        pointer = ArtifactPointer(ref=ref, trust=trust, size_chars=len(text), kind="compaction_archive")
        return self.core.append([replace(compacted, archive=pointer)])[0]

    def build(
        self,
        plan: ContextPlan,
        allocation: Allocation,
        tail: VolatileTail,
        *,
        previous: NeutralRequest | None = None,
        bounded_pinned: bool = False,
        expired: bool = False,
    ) -> BuildResult:
        """Build the request, relieving pressure by pruning and then by compaction; every step is recorded.

        ``previous`` is the last request of this epoch; ``bounded_pinned`` says it showed the task
        statement or a steering note bounded, so this build starts so too until a relief pass
        rewrites the history. ``expired`` says the provider's cache no longer holds what ``previous`` sent.
        """
        self._bounded_pinned = bounded_pinned
        # Relief order: the builder drops in-turn recall itself; then old tool results
        # become pointers in one batched pass; then history is compacted. Each pass
        # sheds down to a low-water mark, so passes are rare (one cache miss each).
        relief: list[str] = []
        result = self._try_build(plan, allocation, tail)
        if self._bounded_pinned and result is not None and not bounds_only_new(result.request, previous):
            # The history changed since the previous request (a manual compaction, an erasure):
            # keeping its bounded task statement saves no cache read, so measure afresh.
            self._bounded_pinned = False
            result = self._try_build(plan, allocation, tail)
        # The tool results' high-water mark binds on every build. A new result may take what its own
        # exchange leaves of the share (runtime/tool_calls.py); older results make room for it
        # here, oldest first, down to a low-water mark so that passes are batched; the renderers
        # keep a cache marker in front of the first result a pass may change, so a pass rewrites
        # only what follows it.
        if result is None or result.pressure != "none" or _over_high_water(allocation, result):
            result = self._prune_pass(plan, allocation, tail, result, relief=relief, deep=True)
        elif expired and (
            self._above_expired_level(plan, allocation, result) or self._results_above_expired_level(plan, allocation, result)
        ):
            # The pause outlasted the provider's cache: this request writes its whole history again
            # whatever it carries, so relief a later request would pay a rewrite for is free now.
            result = self._prune_pass(plan, allocation, tail, result, relief=relief, deep=True, rewritten=True)
        early = expired and result is not None and self._above_expired_level(plan, allocation, result)
        result, compactions = self._compaction_passes(plan, allocation, tail, result, early=early)
        relief += ["compaction"] * compactions
        if compactions and result is not None:
            # The summary rewrites the whole history after it, so pruning the current run's older
            # results in the same request costs no further cache read and puts the next pass off
            # (32k, every shared transcript, lenient rules: 89.18% -> 89.27% read; Claude Code 92.7% -> 93.0%).
            result = self._prune_pass(plan, allocation, tail, result, relief=relief, deep=True, rewritten=True)
        if result is None:
            # Compaction found nothing to fold: any pruning at all is better than no request,
            # the kept rounds' results included (all but the newest round's).
            result = self._prune_pass(plan, allocation, tail, result, relief=relief, deep=False, last_resort=True)
        if result is None and not self._bounded_pinned:
            # The last resort: the task statement and steering notes, over their share, are shown bounded too.
            self._bounded_pinned = True
            result = self._try_build(plan, allocation, tail)
        if result is None:
            # Nothing left to relieve: let the builder report the numbers.
            result = self._build_now(plan, allocation, tail)
        if "recall" in result.yields:
            self.core.append(
                [
                    LayerTruncated(
                        epoch=plan.epoch,
                        layer="project_memory",
                        relief="recall",
                        items=1,
                        tokens_before=-1,
                        tokens_after=result.tokens_by_class.get("recall", 0),
                    )
                ]
            )
        return replace(result, yields=result.yields + tuple(relief))

    def _above_expired_level(self, plan: ContextPlan, allocation: Allocation, result: BuildResult) -> bool:
        """True when the request stands above the share of the input limit where an expired cache makes relief early."""
        level = allocation.input_limit * plan.budgets.expired_cache_relief
        return allocation.prefix_tokens + allocation.with_margin(result.body_tokens) > level

    def _results_above_expired_level(self, plan: ContextPlan, allocation: Allocation, result: BuildResult) -> bool:
        """True when the visible tool results stand above their expired level (a share of their high-water mark)."""
        level = allocation.tool_results_high * plan.budgets.expired_results_relief
        return result.tokens_by_class.get("tool_results", 0) > level

    def _build_now(self, plan: ContextPlan, allocation: Allocation, tail: VolatileTail) -> BuildResult:
        return build(
            bounded_pinned=self._bounded_pinned,
            plan=plan,
            allocation=allocation,
            surface=self.core.surface(),
            tail=tail,
            secret=self.core.secret,
            estimate=self.core.body_estimate(plan),
            view_estimate=self.core.view_estimate(plan),
            memo=self.core.render_memo,
        )

    def _try_build(self, plan: ContextPlan, allocation: Allocation, tail: VolatileTail) -> BuildResult | None:
        try:
            return self._build_now(plan, allocation, tail)
        except BudgetExceeded:
            return None

    def _prune_pass(
        self,
        plan: ContextPlan,
        allocation: Allocation,
        tail: VolatileTail,
        result: BuildResult | None,
        *,
        relief: list[str],
        deep: bool,
        rewritten: bool = False,
        last_resort: bool = False,
    ) -> BuildResult | None:
        """One batched pruning pass, recorded in the log and in ``relief``; the rebuilt result."""
        before = result.tokens_by_class.get("tool_results", 0) if result else None
        pruned = self._prune(plan, allocation, must=result is None, deep=deep, rewritten=rewritten, last_resort=last_resort)
        if not pruned:
            return result
        result = self._try_build(plan, allocation, tail)
        self.core.append(
            [
                LayerTruncated(
                    epoch=plan.epoch,
                    layer="stage_local",
                    relief="tool_results_to_pointers",
                    items=pruned,
                    tokens_before=before if before is not None else -1,
                    tokens_after=result.tokens_by_class.get("tool_results", 0) if result else -1,
                    dedupe_hits=self.core.surface().dedupe_hits,
                )
            ]
        )
        relief.append("tool_results_to_pointers")
        return result

    def _compaction_passes(
        self,
        plan: ContextPlan,
        allocation: Allocation,
        tail: VolatileTail,
        result: BuildResult | None,
        *,
        early: bool = False,
    ) -> tuple[BuildResult | None, int]:
        """Compaction when pruning was not enough, each adoption recorded; the result and how many were adopted.

        ``early``: compact once even though the body fits (the provider's cache expired).
        """
        adopted = 0
        for attempt_no in range(3):
            # Only when the body does not fit, or is still over the soft threshold with nothing cheaper left to shed.
            if result is not None and (attempt_no > 0 or (result.pressure == "none" and not early)):
                break
            # A body that fits is folded early only because the provider's cache expired: say so in the log.
            trigger: CompactionTrigger = "cache_expired" if result is not None and result.pressure == "none" else "pressure"
            proposal = self._pressure_proposal(plan, allocation, attempt_no, trigger)
            if proposal.compacted is None:
                continue  # the next attempt asks for a tighter summary
            before_body = result.body_tokens if result else -1
            self._adopt(proposal.compacted, strict=False)
            adopted += 1
            result = self._after_compaction(plan, allocation, tail)
            self.core.append(
                [
                    LayerTruncated(
                        epoch=plan.epoch,
                        layer="stage_local",
                        relief="compaction",
                        items=len(proposal.compacted.source_event_seqs),
                        tokens_before=before_body,
                        tokens_after=result.body_tokens if result else -1,
                        dedupe_hits=self.core.surface().dedupe_hits,
                    )
                ]
            )
        return result, adopted

    def _after_compaction(self, plan: ContextPlan, allocation: Allocation, tail: VolatileTail) -> BuildResult | None:
        """The build after a compaction: the task statement and steering notes are measured afresh.

        They are shown bounded only when nothing else makes room, and the summary rewrote the history
        after it anyway."""
        self._bounded_pinned = False
        return self._try_build(plan, allocation, tail)

    def _pressure_proposal(
        self, plan: ContextPlan, allocation: Allocation, attempt_no: int, trigger: CompactionTrigger
    ) -> CompactionResult:
        surface = self.core.surface()
        if attempt_no == 0:
            proposal = self._older_part_proposal(plan, allocation, surface, trigger)
            if proposal is None:
                proposal = self.compactor(surface, epoch=plan.epoch, trigger=trigger)
        else:
            # A later attempt asks for a summary half the size of the current one (a quarter on the third).
            current = sum(len(e.compacted.summary) for e in surface.entries if isinstance(e, Summary))
            tighter = max(1_000, current // (2 * attempt_no))
            proposal = self.compactor(surface, epoch=plan.epoch, trigger=trigger, max_summary_chars=tighter)
        if proposal.escalate:
            raise EscalationRequired(proposal.reason, session_id=self.core.id)
        return proposal

    def _older_part_proposal(
        self, plan: ContextPlan, allocation: Allocation, surface: Surface, trigger: CompactionTrigger
    ) -> CompactionResult | None:
        """A compaction of the older part of the history only, or None when there is no such part to fold.

        The newest entries, up to half of what the relief target leaves beside the prefix, stay
        verbatim: the turns the model is working from are the last to be summarised, and the
        request after the pass stands near the relief target instead of at the bare summary, so
        the requests after it still read a long cached history. When that does not fit, the next
        attempt folds everything before the current run (:meth:`_compaction_passes`)."""
        estimate = self.core.body_estimate(plan)
        keep = (int(allocation.context_window * plan.budgets.relief_target) - allocation.prefix_tokens) // 2
        entries = surface.entries
        cut = len(entries)
        held = 0
        while cut > 1:
            entry = entries[cut - 1]
            size = 0 if entry.pinned else _entry_tokens(entry, estimate)
            if held + size > keep:
                break
            held += size
            cut -= 1
        older = entries[:cut]
        if cut == len(entries) or any(isinstance(e, Exchange) and not e.complete for e in older):
            return None
        offered = replace(surface, entries=older)
        if _run_starts_inside(older, surface.seed_seq):
            # The compactor folds what stands before the run's first message, and the older part of the
            # run only when nothing else is left. Here the older part reaches into a long run (one request,
            # many tool rounds) with a little before it: folding only that would rewrite the whole cached
            # history to shed almost nothing. So the older part is offered as if the run began at the first
            # kept entry; the run's first message stays out of the fold, as the log keeps it.
            run_from = min((_seq_of(e) for e in entries[cut:] if not e.pinned), default=surface.seed_seq)
            offered = replace(surface, entries=tuple(e for e in older if e.seq != surface.seed_seq), seed_seq=run_from)
        proposal = self.compactor(offered, epoch=plan.epoch, trigger=trigger)
        compacted = proposal.compacted
        if proposal.escalate or compacted is None:
            return None
        # The log folds every entry up to the summary's last seq: one kept entry at or before it
        # (a result that arrived after a later message) would vanish unsummarised, so fold all instead.
        if any(not e.pinned and _seq_of(e) <= compacted.upto_seq for e in entries[cut:]):
            return None
        return proposal

    def _prune(
        self,
        plan: ContextPlan,
        allocation: Allocation,
        *,
        must: bool = False,
        deep: bool = False,
        rewritten: bool = False,
        last_resort: bool = False,
    ) -> int:
        """Turn the oldest tool results into pointers, in one pass, down to the low-water mark.

        The newest ``keep_recent_rounds`` exchanges are kept whole; all but the newest of them
        yield only where their results alone stand above the high-water mark, and only until they
        no longer do, or as a ``last_resort`` (nothing else makes the request fit, or the provider
        refused it as too long), after every older result.

        Results over their high-water mark (:attr:`Allocation.tool_results_high`) are always
        pruned. Otherwise, unless the body does not fit at all (``must``), a pass runs only
        when it can shed at least half that mark: small passes would cost a cache miss for little gain, round
        after round. When it does not fit and the pass must
        be ``deep``, it runs only when it sheds at least half of what reaching the
        low-water mark takes; otherwise compaction, which folds far more, goes first.
        When the request rewrites every result anyway (``rewritten``: a compaction was
        adopted, or the provider's cache expired), a pass costs no cache read: it runs
        whenever the results stand above the low-water mark.
        """
        surface = self.core.surface()
        estimate = self.core.body_estimate(plan)
        # Unchanged entries keep their sizes from the last pass: a pass is asked for on every
        # request under pressure, and most decline.
        self._result_sizes.next_pass()
        per_entry = self._result_sizes.per_items(surface.entries, estimate, partial(_open_results, estimate=estimate))
        complete = [results for results in per_entry if results is not None and results.complete]
        kept_from = max(0, len(complete) - plan.budgets.keep_recent_rounds)
        sized = [pair for results in complete[:kept_from] for pair in results.sized]
        visible_results = sum(results.visible for results in per_entry if results is not None)
        high_water = allocation.tool_results_high
        # The kept rounds, all but the newest, yield to B2 only: their results alone may stand above the mark.
        above_mark = visible_results - sum(max(0, size - POINTER_STUB_TOKENS) for _, size in sized) - high_water
        kept = [pair for results in complete[kept_from:-1] for pair in results.sized] if above_mark > 0 or last_resort else []
        sizes = {r.result.call_id: size for r, size in sized + kept}
        candidates = [r for r, _ in sized]
        if not candidates and not kept:
            return 0
        over_low_water = visible_results - int(high_water * plan.budgets.relief_tool_results_target)
        if rewritten and over_low_water <= 0:
            return 0  # before sizing the body, which renders all of it
        # Superseded outputs first, then the oldest, whatever the stage's goal: the newest outputs
        # are the ones the model reads next, so they are the last to go.
        # One ordering for all (a result's place depends on the entries alone); the kept rounds go after the rest.
        kept_ids = {r.result.call_id for r, _ in kept}
        ordered = prune_order([*candidates, *(r for r, _ in kept)], surface.entries, self._names)
        candidates = sorted(ordered, key=lambda r: r.result.call_id in kept_ids)
        # Sized as the builder sizes it: tool-call arguments (file edits, patches) count too.
        body = body_tokens(self._last_messages(plan, allocation), estimate, self._sizing_memo)
        target_input = int(allocation.context_window * plan.budgets.relief_target)
        shed = max(allocation.prefix_tokens + allocation.with_margin(body) - target_input, over_low_water, 1)
        chosen: list[str] = []
        saved = 0
        for result in candidates:
            call_id = result.result.call_id
            if saved >= shed or (call_id in kept_ids and not last_resort and visible_results - saved <= high_water):
                break
            chosen.append(call_id)
            saved += max(0, sizes[call_id] - POINTER_STUB_TOKENS)
        if not (must or rewritten) and visible_results <= high_water and saved < high_water // 2:
            # Under the share, a pass is pressure relief only: a shallow one is not worth its cache miss.
            return 0
        if must and deep and saved < shed // 2:
            # A shallow pass breaks the cache as a deep one does and buys a round or two:
            # it would not pay for itself in cache reads.
            return 0
        self.core.append([Pruned(epoch=plan.epoch, upto_seq=surface.upto_seq, call_ids=tuple(chosen))])
        return len(chosen)

    def _last_messages(self, plan: ContextPlan, allocation: Allocation) -> tuple[Any, ...]:
        """The messages as they would be built now, before any yield (for sizing)."""
        surface = self.core.surface()
        self._sizing_memo.next_pass()
        return render_messages(
            plan=plan,
            allocation=allocation,
            surface=surface,
            tail=VolatileTail(),
            secret=self.core.secret,
            view_estimate=self.core.view_estimate(plan),
            memo=self._sizing_memo,
        )

    def relieve_overflow(self, plan: ContextPlan) -> bool:
        """Forced relief after a provider overflow: compact, or prune everything prunable; False when nothing was freed."""
        proposal = self.compactor(self.core.surface(), epoch=plan.epoch, trigger="overflow")
        if proposal.escalate:
            raise EscalationRequired(proposal.reason, session_id=self.core.id)
        if proposal.compacted is not None:
            self._adopt(proposal.compacted, strict=False)
            return True
        return self._prune(plan, allocate(plan), must=True, last_resort=True) > 0


def _entry_tokens(entry: Entry, estimate: Callable[[str], int]) -> int:
    """About what ``entry`` costs in a request: its texts, tool-call arguments and results (a pointer when pruned)."""
    match entry:
        case Exchange():
            said = estimate(entry.message.text) + sum(estimate(canonical_json(to_plain(c.arguments))) for c in entry.calls)
            results = sum(POINTER_STUB_TOKENS if r.pruned else estimate(r.result.output) for r in entry.results)
            return said + results + ENVELOPE_TOKENS * (1 + len(entry.results))
        case Summary():
            return estimate(entry.compacted.summary) + ENVELOPE_TOKENS
        case _:
            message = getattr(entry, "message", None)
            return (estimate(message.text) if message is not None else 0) + ENVELOPE_TOKENS


def _run_starts_inside(older: Sequence[Entry], seed_seq: int) -> bool:
    """True when the current run's first message is among ``older`` and something foldable precedes it."""
    return any(e.seq == seed_seq for e in older) and any(
        _seq_of(e) < seed_seq and not e.pinned and not isinstance(e, Summary) for e in older
    )


def _seq_of(entry: Entry) -> int:
    """The seq the log folds ``entry`` by (a summary by the last seq it covers)."""
    return entry.compacted.upto_seq if isinstance(entry, Summary) else entry.seq


def _over_high_water(allocation: Allocation, result: BuildResult) -> bool:
    """True when the visible tool results of ``result`` hold more than their high-water mark."""
    return result.tokens_by_class.get("tool_results", 0) > allocation.tool_results_high


def _name(compactor: Compactor) -> str:
    """A compactor's dotted name, for the record of a rejected proposal."""
    named = compactor if hasattr(compactor, "__qualname__") else type(compactor)
    return f"{getattr(named, '__module__', '?')}.{getattr(named, '__qualname__', '?')}"
