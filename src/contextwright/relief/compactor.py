"""Compaction as a write: a pure compactor proposes, the runtime adopts.

:func:`compact` takes the surface and returns a :class:`CompactionResult` (the
``context.compacted`` payload to record) or ``None`` when there is nothing to
fold. It never writes. The default compactor is deterministic and extractive:

* it folds everything before the current run's first message (the seed), except
  pinned entries (the task statement and steering notes), which stay verbatim;
  when that is already folded, it folds the older part of the current run itself,
  keeping the run's first message and its ``keep_recent`` latest tool exchanges;
* trusted content (user and operator messages, the assistant's own words, earlier
  summaries) is summarised by extraction: first sentences, with file paths,
  identifiers and numbers kept exact;
* untrusted content (tool output and external content) is never paraphrased: it
  is replaced by a typed pointer naming its trust level, size and reference, and
  only platform-known facts about it (tool name, exit code, error flag) appear;
  the lines of an output that hold a string the assistant used later in the folded
  span (an identifier, a path, a value) are quoted verbatim under the output's own
  trust level, so they reach the model in an envelope of that level, as the output did;
* a new compaction keeps the previous summary's lines verbatim and appends new
  ones; only when the summary outgrows ``max_summary_chars`` is the old part
  condensed (requests and failures kept, routine calls dropped), which deepens the
  summary by one level. Summaries nest at most ``max_depth`` deep; beyond that the
  result says the run should escalate to a child run instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from contextwright.derive._surface import AssistantReply, Entry, Exchange, Summary, Surface, UserTurn
from contextwright.derive._taint import Echo, lowest_trust, summary_lines
from contextwright.events.catalog import ArtifactPointer, Compacted, CompactionTrigger, SummaryLine, TrustLevel

TRUSTED = frozenset({"platform", "operator", "user"})
MAX_DEPTH = 2
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.DOTALL)
_USED_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./:-]{4,}[A-Za-z0-9_]")
USED_LINES_PER_OUTPUT = 8
"""At most this many lines of one folded output are quoted because the assistant used them."""
_QUOTE_INDENT = "    "
# A file name is only tried where a run of path characters starts: from anywhere later in the run it could
# match only if it matched from the start, and trying every position made long runs quadratic.
_IDENTIFIER = re.compile(
    r"(?<![\w./-])[\w./-]+\.(?:py|ts|js|go|rs|java|md|json|toml|yaml|yml|cfg|txt)\b|\b[A-Z][A-Za-z]+(?:Error|Exception)\b"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompactionResult:
    """What a compactor proposes: the event to record, or an escalation."""

    compacted: Compacted | None
    escalate: bool = False
    reason: str = ""


class Compactor(Protocol):
    """Anything that turns a surface into a compaction proposal, without writing (the runtime's relief calls it)."""

    def __call__(
        self,
        surface: Surface,
        *,
        epoch: int,
        trigger: CompactionTrigger,
        max_summary_chars: int = ...,
    ) -> CompactionResult:
        """Propose a compaction of ``surface``; a retry under pressure asks for a summary of at most ``max_summary_chars``."""
        ...


def compact(
    surface: Surface,
    *,
    epoch: int,
    trigger: CompactionTrigger = "pressure",
    max_depth: int = MAX_DEPTH,
    max_line_chars: int = 240,
    max_summary_chars: int = 16_000,
    keep_recent: int = 2,
) -> CompactionResult:
    """The default extractive compactor."""
    foldable = [e for e in surface.entries if _seq(e) < surface.seed_seq and not e.pinned]
    if not foldable or all(isinstance(e, Summary) for e in foldable):
        # Nothing left before the current run: fold the older part of the run itself,
        # keeping its first message and the most recent tool exchanges verbatim.
        foldable = _older_part_of_run(surface, keep_recent) or foldable
    if not foldable:
        return CompactionResult(compacted=None, reason="nothing left to fold")
    only_summaries = all(isinstance(e, Summary) for e in foldable)
    if only_summaries and sum(len(e.compacted.summary) for e in foldable if isinstance(e, Summary)) <= max_summary_chars:
        return CompactionResult(compacted=None, reason="nothing left to fold")
    depth = max(surface.summary_depth, 1)
    previous: list[SummaryLine] = []
    lines: list[SummaryLine] = []
    elided: list[ArtifactPointer] = []
    seqs: list[int] = []
    tools: dict[str, list[str]] = {}

    first_said = _first_said(foldable, surface.echoes)
    quoted: list[SummaryLine] = []

    def flush_tools() -> None:
        # One line per turn for its tool activity: counts, failures, and short refs to outputs.
        # Tool activity is a record of what happened, never an instruction: it is data to the model.
        if tools:
            text = "  Tools: " + "; ".join(f"{name} ×{len(notes)} ({', '.join(notes)})" for name, notes in tools.items())
            lines.append(SummaryLine(text=text, trust="tool"))
            tools.clear()
        lines.extend(quoted)
        quoted.clear()

    def assistant(text: str, ref: str) -> None:
        # The assistant's words are a record, not the user's voice; what it repeated of
        # untrusted text is elided (never quoted or paraphrased into the summary), and the
        # line keeps the lowest trust it repeated: a remnant of an external page the echo
        # rule did not reach stays external_untrusted, never reads as a tool's.
        echoes = surface.echoes.get(ref, ())
        spoken = _without_echoes(text, echoes)
        trust = lowest_trust(("tool", *(echo.trust for echo in echoes)))
        lines.append(SummaryLine(text=f"  Assistant: {_extract(spoken, max_line_chars)}", trust=trust))

    for index, entry in enumerate(foldable):
        match entry:
            case Summary():
                previous = list(summary_lines(entry.compacted))
                elided.extend(entry.compacted.elided)
                seqs.extend(entry.compacted.source_event_seqs)
            case UserTurn():
                flush_tools()
                who = "Operator" if entry.message.author == "operator" else "User"
                trust: TrustLevel = "operator" if entry.message.author == "operator" else "user"
                lines.append(SummaryLine(text=f"- {who} asked: {_extract(entry.message.text, max_line_chars)}", trust=trust))
                seqs.append(entry.seq)
            case AssistantReply():
                assistant(entry.message.text, entry.ref)
                seqs.append(entry.seq)
            case Exchange():
                seqs.append(entry.seq)
                by_id = {r.result.call_id: r for r in entry.results}
                for call in entry.calls:
                    stored = by_id[call.id]
                    result = stored.result
                    seqs.append(stored.seq)
                    outcome = "denied" if result.denied else ("failed" if result.is_error else "ok")
                    code = f" exit {result.exit_code}" if result.exit_code not in (None, 0) else ""
                    if result.trust in TRUSTED:
                        note = f"{outcome}{code}: {_extract(result.output, 80)}"
                    else:
                        pointer = result.artifact or ArtifactPointer(
                            ref=stored.ref, trust=result.trust, size_chars=len(result.output), kind="tool_output"
                        )
                        elided.append(pointer)
                        note = f"{outcome}{code} {short_ref(pointer.ref)}"
                        if not result.denied:
                            # Quoted, never paraphrased, at the output's own trust: what the work went on to use.
                            prefix = f"{_QUOTE_INDENT}{call.name} {short_ref(pointer.ref)}: "
                            quoted.extend(
                                SummaryLine(text=prefix + line, trust=result.trust)
                                for line in _used_lines(result.output, first_said, index, max_line_chars)
                            )
                    tools.setdefault(call.name, []).append(note)
    flush_tools()
    # Quoted lines give way first, the oldest first: a summary never deepens to keep them.
    previous, lines = _without_quotes_over(previous, max_summary_chars, lines)
    if _size(previous + lines) > max_summary_chars:
        depth += 1
        if depth > max_depth:
            return CompactionResult(
                compacted=None,
                escalate=True,
                reason=f"the summary would need depth {depth}, above the cap of {max_depth}: continue in a child run",
            )
        before = previous + lines
        previous = _condense(previous)
        lines = _condense(lines) if _size(previous + lines) > max_summary_chars else lines
        if previous + lines == before:
            return CompactionResult(compacted=None, reason="the summary cannot be condensed further")
    upto = max(_seq(e) if not isinstance(e, Exchange) else e.last_seq for e in foldable)
    kept = [*previous, *lines]
    return CompactionResult(
        compacted=Compacted(
            epoch=epoch,
            upto_seq=upto,
            summary="\n".join([HEADER, *(line.text for line in kept)]),
            depth=depth,
            source_event_seqs=tuple(sorted(set(seqs))),
            elided=tuple(elided),
            trigger=trigger,
            lines=tuple(kept),
        )
    )


def _first_said(foldable: list[Entry], echoes: Mapping[str, tuple[Echo, ...]]) -> dict[str, int]:
    """Each token the assistant wrote in the folded span (words of its messages, arguments of its tool
    calls), with the index in ``foldable`` of the entry where it first wrote it. A token first written
    after an exchange may have come from that exchange's outputs. What the assistant only repeated of
    untrusted text is not use: an echoed instruction never earns its line a place in the summary."""
    first: dict[str, int] = {}
    for index, entry in enumerate(foldable):
        for token in _USED_TOKEN.findall(_said(entry, echoes)):
            first.setdefault(token, index)
    return first


def _said(entry: Entry, echoes: Mapping[str, tuple[Echo, ...]]) -> str:
    """What the assistant wrote in ``entry`` less its echoes: its text and its tool calls' arguments (empty for any other entry)."""
    if isinstance(entry, Exchange):
        text = _without_echoes(entry.message.text, echoes.get(entry.ref, ()))
        return " ".join([text, *(str(call.arguments) for call in entry.message.tool_calls)])
    return _without_echoes(entry.message.text, echoes.get(entry.ref, ())) if isinstance(entry, AssistantReply) else ""


def _is_quote(line: SummaryLine) -> bool:
    return line.text.startswith(_QUOTE_INDENT)


def _without_quotes_over(
    previous: list[SummaryLine], limit: int, lines: list[SummaryLine]
) -> tuple[list[SummaryLine], list[SummaryLine]]:
    """``previous`` and ``lines`` without their oldest quoted lines, as many as it takes to fit ``limit``."""
    excess = _size(previous + lines) - limit
    if excess <= 0:
        return previous, lines
    dropped: set[int] = set()
    for index, line in enumerate(previous + lines):
        if excess <= 0:
            break
        if _is_quote(line):
            dropped.add(index)
            excess -= len(line.text) + 1
    kept = [line for index, line in enumerate(previous + lines) if index not in dropped]
    cut = len(previous) - sum(1 for index in dropped if index < len(previous))
    return kept[:cut], kept[cut:]


def _used_lines(output: str, first_said: dict[str, int], after: int, limit: int) -> list[str]:
    """The lines of ``output`` (of the exchange at index ``after``) holding a token the assistant first wrote
    after it (at most :data:`USED_LINES_PER_OUTPUT`), each cut to ``limit``."""
    kept: list[str] = []
    for line in output.splitlines():
        if any(first_said.get(token, -1) > after for token in _USED_TOKEN.findall(line)):
            flat = line.strip()
            kept.append(flat if len(flat) <= limit else flat[: limit - 1] + "…")
            if len(kept) == USED_LINES_PER_OUTPUT:
                break
    return kept


ECHO_ELIDED = "[repeated {trust} text elided]"


def _without_echoes(text: str, echoes: tuple[Echo, ...]) -> str:
    """``text`` with every echo of untrusted content replaced by a marker naming its trust."""
    out, at = [], 0
    for echo in echoes:
        out += [text[at : echo.start], ECHO_ELIDED.format(trust=echo.trust)]
        at = echo.end
    return "".join([*out, text[at:]])


def _older_part_of_run(surface: Surface, keep_recent: int) -> list[Entry]:
    run = [e for e in surface.entries if _seq(e) > surface.seed_seq or isinstance(e, Summary)]
    exchanges = [i for i, e in enumerate(run) if isinstance(e, Exchange)]
    if len(exchanges) <= keep_recent:
        return []
    cut = exchanges[-keep_recent] if keep_recent else len(run)
    return [e for e in run[:cut] if not e.pinned]


HEADER = (
    "Summary of the earlier part of this session (extracted from trusted messages; tool output is referenced, "
    "and only the lines of it that the work used are quoted, at the output's trust):"
)


def _size(lines: list[SummaryLine]) -> int:
    return sum(len(line.text) + 1 for line in lines)


CONDENSED_LINE_CHARS = 120


def _condense(lines: list[SummaryLine]) -> list[SummaryLine]:
    """Keep what was asked and what went wrong; drop the replies, the routine tool lines and the quoted lines."""
    kept = []
    for line in lines:
        text = line.text
        if text.startswith("  Assistant: ") or _is_quote(line):
            continue
        if text.startswith("  Tools: "):
            failures = [part for part in text[len("  Tools: ") :].split("; ") if "failed" in part or "denied" in part]
            if not failures:
                continue
            text = "  Tools (failures only): " + "; ".join(failures)
        text = text if len(text) <= CONDENSED_LINE_CHARS else text[: CONDENSED_LINE_CHARS - 1] + "…"
        kept.append(SummaryLine(text=text, trust=line.trust))
    return kept


def short_ref(ref: str) -> str:
    """A pointer shortened to 12 hex digits; the read tool accepts it within its session."""
    return ref[: len("sha256:") + 12] if ref.startswith("sha256:") else ref


def _seq(entry: Entry) -> int:
    if isinstance(entry, Summary):
        return entry.compacted.upto_seq
    return entry.seq


def _extract(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    match = _SENTENCE.match(flat)
    first = match.group(1) if match else flat
    if len(first) > limit:
        first = first[: limit - 1] + "…"
    identifiers = [i for i in dict.fromkeys(_IDENTIFIER.findall(flat)) if i not in first][:8]
    return first + (f" (mentions: {', '.join(identifiers)})" if identifiers else "")
