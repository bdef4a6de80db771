"""Echoes: where the assistant's own words repeat untrusted text it was shown earlier.

An assistant that quotes a tool output or a web page carries that text's trust, not
its own: rendered as the assistant's prose (or extracted into a summary) an injected
instruction would otherwise reach the model outside any envelope. Detection is
verbatim and word-based: a run of at least :data:`SHINGLE_WORDS` consecutive words
(case-folded) that also appears, in the same order, in an untrusted text logged
*before* the assistant message. Only earlier sources count, so a message's rendering
never changes after it was first sent (provider caches keep hitting).

The targets (assistant texts) are small next to the sources (tool outputs), so the
index holds the targets' word windows and every source is scanned once: linear in
the text folded, with memory bounded by the assistant's own text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contextwright.events.catalog import (
    ArtifactStored,
    AssistantMessage,
    Compacted,
    FrameRecorded,
    SummaryLine,
    ToolResult,
    TrustLevel,
    UserMessage,
)
from contextwright.events.envelope import Event

__all__ = [
    "SHINGLE_WORDS",
    "UNTRUSTED",
    "Echo",
    "Source",
    "Target",
    "find_echoes",
    "archived_trust",
    "lowest_trust",
    "summary_lines",
]

SHINGLE_WORDS = 4
"""Consecutive words that make an echo: short enough for a one-line injected command."""
MIN_ECHO_CHARS = 12
"""Echoes shorter than this (a few very short words) are ordinary language, not quotes."""

TRUST_ORDER: tuple[TrustLevel, ...] = ("platform", "operator", "user", "tool", "external_untrusted")
UNTRUSTED: frozenset[TrustLevel] = frozenset({"tool", "external_untrusted"})
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, kw_only=True, slots=True)
class Echo:
    """A span ``text[start:end]`` of an assistant text that repeats untrusted content."""

    start: int
    end: int
    trust: TrustLevel
    """The lowest trust of the sources it repeats."""
    source_ref: str
    """The event the repeated text was first shown in."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """Untrusted text the model was shown, at log position ``seq``."""

    seq: int
    ref: str
    text: str
    trust: TrustLevel


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """Assistant text logged at ``seq``, checked for echoes of earlier sources."""

    seq: int
    ref: str
    text: str


def lowest_trust(levels: Iterable[TrustLevel], default: TrustLevel = "platform") -> TrustLevel:
    """The least trusted of ``levels`` (``default`` when there are none)."""
    return max(levels, key=TRUST_ORDER.index, default=default)


def find_echoes(targets: Iterable[Target], sources: Iterable[Source]) -> Mapping[str, tuple[Echo, ...]]:
    """Echo spans per target ref (targets without echoes are absent)."""
    words_of: dict[str, list[re.Match[str]]] = {}
    seq_of: dict[str, int] = {}
    text_of: dict[str, str] = {}
    index: dict[tuple[str, ...], list[tuple[str, int]]] = {}
    for target in targets:
        words = list(_WORD.finditer(target.text))
        words_of[target.ref], seq_of[target.ref], text_of[target.ref] = words, target.seq, target.text
        folded = [w.group().casefold() for w in words]
        for i in range(len(folded) - SHINGLE_WORDS + 1):
            index.setdefault(tuple(folded[i : i + SHINGLE_WORDS]), []).append((target.ref, i))
    if not index:
        return {}
    # (target ref, first word of a matching window) -> (trust, source ref), lowest trust kept.
    marks: dict[tuple[str, int], tuple[TrustLevel, str]] = {}
    for source in sources:
        if source.trust not in UNTRUSTED:
            continue
        folded = [w.casefold() for w in _WORD.findall(source.text)]
        for i in range(len(folded) - SHINGLE_WORDS + 1):
            for ref, start in index.get(tuple(folded[i : i + SHINGLE_WORDS]), ()):
                if seq_of[ref] <= source.seq:
                    continue  # only what the model had been shown before it wrote the text
                known = marks.get((ref, start))
                if known is None or TRUST_ORDER.index(source.trust) > TRUST_ORDER.index(known[0]):
                    marks[(ref, start)] = (source.trust, source.ref)
    found: dict[str, list[Echo]] = {}
    for (ref, start), (trust, source_ref) in sorted(marks.items()):
        words, text = words_of[ref], text_of[ref]
        begin, end = _widen(text, words[start].start(), words[start + SHINGLE_WORDS - 1].end())
        spans = found.setdefault(ref, [])
        if spans and begin <= spans[-1].end:
            last = spans[-1]
            spans[-1] = Echo(
                start=last.start,
                end=max(last.end, end),
                trust=lowest_trust((last.trust, trust)),
                source_ref=last.source_ref,
            )
        else:
            spans.append(Echo(start=begin, end=end, trust=trust, source_ref=source_ref))
    kept = {ref: tuple(s for s in spans if s.end - s.start >= MIN_ECHO_CHARS) for ref, spans in found.items()}
    return {ref: spans for ref, spans in kept.items() if spans}


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Grow a span to the whitespace around it, so punctuation glued to a quote stays in it."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


def summary_lines(compacted: Compacted) -> tuple[SummaryLine, ...]:
    """The lines of a summary with their trust; older summaries without it are read conservatively."""
    if compacted.lines:
        return compacted.lines
    # Recorded before lines carried trust: only a user's or operator's ask keeps its voice.
    out = []
    for text in compacted.summary.splitlines()[1:]:
        trust: TrustLevel = (
            "user" if text.startswith("- User asked: ") else "operator" if text.startswith("- Operator asked: ") else "tool"
        )
        out.append(SummaryLine(text=text, trust=trust))
    return tuple(out)


def archived_trust(event: Event) -> TrustLevel:
    """The trust of the text an event carries, as an archive holding it must be read."""
    payload = event.payload
    if isinstance(payload, ToolResult):
        return payload.trust
    if isinstance(payload, FrameRecorded):
        return lowest_trust(e.trust for e in payload.recall)
    if isinstance(payload, ArtifactStored):
        return payload.pointer.trust
    if isinstance(payload, Compacted):
        return lowest_trust((*(line.trust for line in summary_lines(payload)), *(p.trust for p in payload.elided)))
    if isinstance(payload, UserMessage):
        return "operator" if payload.author == "operator" else "user"
    # The assistant's words read back are a record (they may repeat what a tool said).
    return "tool" if isinstance(payload, AssistantMessage) else "platform"
