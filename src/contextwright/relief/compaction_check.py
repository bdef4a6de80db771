"""The labels a compaction proposal must keep (R5, D5), checked before a plugged compactor's summary is adopted.

A summary is history the model reads at its labels' trust: a line labelled ``user`` is
rendered in a user envelope, the header as the platform's own text. A compactor that
paraphrases with a model can be handed an injected instruction and give it back as a
trusted line, so the runtime checks what any plugged compactor proposes:

* the header is the platform's own (:data:`~contextwright.relief.compactor.HEADER`), and
  the summary's other lines are exactly its labelled ``lines``, none labelled ``platform``;
* a line is labelled ``user`` or ``operator`` only when such a message was there to summarise;
* no line repeats untrusted text (a tool output, recalled evidence, an untrusted line of an
  earlier summary) under a label more trusted than that text's: verbatim or lightly
  reworded, as :mod:`contextwright.derive._taint` finds echoes;
* a pointer to a tool output keeps that output's trust, or a lower one.

:func:`label_problems` names each breach by line number, label and reference, never by
the text, so the problems can be recorded as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

from contextwright.derive._surface import Exchange, Summary, Surface, UserTurn
from contextwright.derive._taint import Source, Target, find_echoes, lowest_trust, summary_lines
from contextwright.events.catalog import TRUST_LEVELS, Compacted, TrustLevel
from contextwright.relief.compactor import HEADER

__all__ = ["label_problems"]


def label_problems(surface: Surface, compacted: Compacted) -> tuple[str, ...]:
    """What in ``compacted`` breaks the labelling rules, proposed for ``surface`` (empty: none)."""
    problems: list[str] = []
    texts = compacted.summary.split("\n")
    if texts[0] != HEADER:
        problems.append("the summary's first line is not the platform's header")
    lines = summary_lines(compacted) if compacted.lines else ()
    if texts[1:] != [line.text for line in lines]:
        problems.append("the summary's lines after the header are not exactly its labelled lines")
    if compacted.upto_seq > surface.upto_seq:
        problems.append(f"it folds up to seq {compacted.upto_seq}, past the surface's last seq {surface.upto_seq}")
    voices = _voices(surface)
    for number, line in enumerate(lines, 1):
        if line.trust == "platform":
            problems.append(f"line {number} is labelled 'platform': only the header is the platform's own text")
        elif line.trust in ("user", "operator") and line.trust not in voices:
            problems.append(f"line {number} is labelled {line.trust!r} but no {line.trust} message was summarised")
    # Each line against every untrusted text the surface shows, as an assistant text is checked (seq past them all).
    after = surface.upto_seq + 1
    targets = [Target(seq=after, ref=str(number), text=line.text) for number, line in enumerate(lines, 1)]
    for ref, echoes in find_echoes(targets, list(_sources(surface)), normalised=True).items():
        label = lines[int(ref) - 1].trust
        for echo in echoes:
            if _less_trusted(echo.trust, label):
                problems.append(f"line {ref} is labelled {label!r} but repeats {echo.trust} text from {echo.source_ref}")
    shown = dict(_pointed(surface))
    for pointer in compacted.elided:
        source = shown.get(pointer.ref)
        if source is not None and _less_trusted(source, pointer.trust):
            problems.append(f"the pointer to {pointer.ref} is labelled {pointer.trust!r}, above its output's {source!r}")
    return tuple(problems)


def _less_trusted(level: TrustLevel, than: TrustLevel) -> bool:
    return TRUST_LEVELS.index(level) > TRUST_LEVELS.index(than)


def _voices(surface: Surface) -> frozenset[TrustLevel]:
    """The trusted voices a summary of ``surface`` may speak in: those of its messages and earlier summaries."""
    found: set[TrustLevel] = set()
    for entry in surface.entries:
        if isinstance(entry, UserTurn):
            found.add("operator" if entry.message.author == "operator" else "user")
        elif isinstance(entry, Summary):
            found.update(line.trust for line in summary_lines(entry.compacted))
    return frozenset(found)


def _sources(surface: Surface) -> Iterator[Source]:
    """Every untrusted text ``surface`` shows (trusted ones are ignored by the echo index anyway)."""
    for entry in surface.entries:
        if isinstance(entry, Exchange):
            for stored in entry.results:
                yield Source(seq=stored.seq, ref=stored.ref, text=stored.result.output, trust=stored.result.trust)
        elif isinstance(entry, UserTurn) and entry.frame is not None:
            for evidence in entry.frame.recall:
                yield Source(seq=entry.seq, ref=entry.frame_ref or entry.ref, text=evidence.text, trust=evidence.trust)
        elif isinstance(entry, Summary):
            for line in summary_lines(entry.compacted):
                yield Source(seq=entry.seq, ref=entry.ref, text=line.text, trust=line.trust)


def _pointed(surface: Surface) -> Iterator[tuple[str, TrustLevel]]:
    """The refs a pointer may name for a tool output (its event and its stored artifact), with the output's trust."""
    for entry in surface.entries:
        if isinstance(entry, Exchange):
            for stored in entry.results:
                result = stored.result
                yield stored.ref, result.trust
                if result.artifact is not None:
                    yield result.artifact.ref, lowest_trust((result.trust, result.artifact.trust))
        elif isinstance(entry, Summary):
            for pointer in entry.compacted.elided:
                yield pointer.ref, pointer.trust
