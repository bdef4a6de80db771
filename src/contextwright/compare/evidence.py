"""Evidence recall: how much of what the model used a strategy still showed it.

The rule, applied with the same code to every strategy:

1. **What the model used.** For each model call of a transcript (one assistant message,
   see :mod:`contextwright.compare.timeline`), take the distinctive strings the recorded
   assistant wrote in that message: in its text and in its tool-call inputs. Distinctive
   means one of (:func:`distinctive_strings`):

   * a path (a token with ``/`` or ``\\``) or a file name with an extension;
   * an identifier with ``_``, a dot (``module.name``) or a camelCase hump;
   * an error code (``E501``, ``TS2345``, ``CS1525``);
   * a hex hash of 7 or more characters holding a digit, a number of 4 or more digits;
   * a span quoted in ``"``, ``'`` or backticks (6 to 200 characters);
   * in a tool-call input only: a line of 20 or more characters (what it typed into an edit).

   Strings shorter than :data:`MIN_CHARS` are dropped.
2. **Only what it read.** A string counts for that call only when its first appearance in
   the transcript is in content the assistant did not write (a user message or a tool
   output) before the call. A string the assistant wrote first (a file it named before
   any tool showed it) is its own, not evidence. Strings in the system prompt or the tool
   definitions are dropped: every request shows them.
3. **Visible.** Each (call, string) pair is visible when the string occurs in the text of
   the request the strategy built for that call (:func:`request_text`: every string of its
   system blocks and messages, the tool definitions left out). A call the strategy could
   not build sees nothing.

Every text (the strings, the transcript's messages and the requests) is normalised the
same way before comparing (:func:`normalize`): the envelope's escaping undone (``&amp;``,
``&lt;`` and ``&#x..;`` read as the characters they stand for) and runs of whitespace
read as one space. So keeping everything scores 100% by construction, and a request
only loses a pair by leaving the text out.

**Evidence recall** is the share of pairs visible. Each miss is put down to what
happened to the latest message that held the string, as the request shows it
(:data:`CAUSES`): its tool output stands as a pointer (``pruned``), stands
shortened (``compressed``: compressed or capped on arrival; ``bounded``: a bounded view
of its head and tail, whose marker says how many characters are not shown), was folded
into a repeat stub (``repeat``), or is gone from the request (``compacted`` for the
engine once a compaction ran, ``trimmed`` for the sliding window, ``summarized`` for
the summarizer, else ``dropped``); ``not_built`` when no request was built.

**Read-backs.** A miss whose message stands in the request as a pointer, a bounded view
naming ``context_read_artifact`` or a compressed view naming its full output's
``sha256:`` ref can be read back: the model pays one read of that
whole output (counted once per output per transcript, at the first call that needs it)
to get the string. :attr:`Recall.read_backs` counts them and
:attr:`Recall.read_back_tokens` sums what they would read; the comparison prices those
tokens as uncached input, the cost a pointer adds.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from contextwright.assembly.envelope import unescape
from contextwright.compare.timeline import ModelCall, Timeline, Unit
from contextwright.items.region_a import READ_TOOL_NAME

__all__ = [
    "CAUSES",
    "MIN_CHARS",
    "JudgedPair",
    "Recall",
    "UsedString",
    "distinctive_strings",
    "evidence_recall",
    "judge_pairs",
    "normalize",
    "request_text",
    "used_strings",
]

MIN_CHARS: Final = 4
"""Shortest string that counts as distinctive."""
EDIT_LINE_CHARS: Final = 20
"""Shortest line of a tool-call input that counts as a typed line."""
QUOTED_MAX: Final = 200
"""Longest quoted span taken whole."""
CAUSES: Final[tuple[str, ...]] = (
    "compressed",
    "bounded",
    "pruned",
    "repeat",
    "compacted",
    "trimmed",
    "summarized",
    "dropped",
    "not_built",
)
"""Why a pair was missed, in report order."""
DROPPED_AS: Final[Mapping[str, str]] = {
    "sliding_window": "trimmed",
    "summarize_at_threshold": "summarized",
    "contextwright": "compacted",
}
"""What a strategy's missing message is called (``dropped`` for any other)."""

_SPACES = re.compile(r"\s+")
_ENTITY = re.compile(r"&(?:amp|lt|#x[0-9a-f]+);")
_PATH = re.compile(r"(?:[\w.@+~-]*[/\\])+[\w.@+~-]+|\b[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}\b")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\b")
_CAMEL = re.compile(r"[a-z][A-Z]")
_CODE = re.compile(r"\b[A-Z]{1,5}-?\d{3,6}\b")
_HEX = re.compile(r"\b[0-9a-f]{7,64}\b")
_NUMBER = re.compile(r"\b\d[\d,._]{2,}\d\b|\b\d{4,}\b")
_SPAN = rf"{{6,{QUOTED_MAX}}}"
_QUOTED = re.compile(rf"\"([^\"\n]{_SPAN})\"|(?<!\w)'([^'\n]{_SPAN})'(?!\w)|`([^`\n]{_SPAN})`")
_STUB = re.compile(r"^\[[^\]\n]* output \([^)]*\) (?:out of|removed from) context;")
_NOT_TEXT: Final = frozenset(("type", "id", "tool_use_id", "cache_control", "role"))
"""Keys of a body whose values are wire syntax, not text the model reads."""
_POINTER = re.compile(re.escape(READ_TOOL_NAME) + r"|full output: sha256:[0-9a-f]{12}")
"""What names a whole text the read tool returns: a marker or stub naming the tool, or a compressor's pointer."""
_BOUNDED = re.compile(r"\[\.\.\. [\d,]+ of [\d,]+ characters not shown here")
"""A bounded view's marker (its head and tail shown); any other shortened output was compressed."""
_REPEAT = re.compile(r"^\[(?:same output as call|this attempt failed; call)")


def normalize(text: str) -> str:
    """``text`` as every comparison reads it: envelope escapes undone, whitespace runs as one space."""
    if "&" in text and _ENTITY.search(text):
        text = unescape(text)
    return _SPACES.sub(" ", text).strip()


def distinctive_strings(text: str, *, typed: bool = False) -> set[str]:
    """The distinctive strings of ``text`` (normalised); ``typed`` adds its long lines (a tool-call input)."""
    found: set[str] = set()
    for match in _PATH.finditer(text):
        found.add(match.group().strip(".,:;"))
    for match in _IDENT.finditer(text):
        word = match.group()
        if "_" in word.strip("_") or "." in word or _CAMEL.search(word):
            found.add(word)
    for pattern in (_CODE, _NUMBER):
        found.update(m.group() for m in pattern.finditer(text))
    found.update(m.group() for m in _HEX.finditer(text) if any(ch.isdigit() for ch in m.group()))
    for match in _QUOTED.finditer(text):
        found.add(next(g for g in match.groups() if g is not None))
    if typed:
        found.update(line for line in text.splitlines() if len(line.strip()) >= EDIT_LINE_CHARS)
    return {n for n in (normalize(s) for s in found) if len(n) >= MIN_CHARS}


@dataclass(frozen=True, kw_only=True, slots=True)
class UsedString:
    """A distinctive string one model call's answer used, first read in content the assistant did not write."""

    ordinal: int
    """The assistant message that wrote it (:attr:`~contextwright.compare.timeline.ModelCall.ordinal`)."""
    text: str
    """The string, normalised."""
    sources: tuple[int, ...]
    """Indexes into :attr:`Timeline.units` of the messages before the call that hold it (user or tool output)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Recall:
    """Evidence recall of one strategy on one or more transcripts."""

    pairs: int = 0
    """(call, string) pairs the model used."""
    seen: int = 0
    """Of those, the ones visible in the request built for the call."""
    misses: Mapping[str, int] = field(default_factory=dict)
    """Missed pairs by cause (:data:`CAUSES`)."""
    read_backs: int = 0
    """Outputs the model would read back through ``context_read_artifact`` to see what it missed."""
    read_back_tokens: int = 0
    """Tokens those read-backs return."""
    read_back_cost: Decimal = Decimal(0)
    """Those tokens priced as uncached input (zero when no price was given)."""

    @property
    def share(self) -> float | None:
        """``seen / pairs``; None when the transcript used no evidence."""
        return self.seen / self.pairs if self.pairs else None

    def __add__(self, other: Recall) -> Recall:
        misses = Counter(self.misses)
        misses.update(other.misses)
        return Recall(
            pairs=self.pairs + other.pairs,
            seen=self.seen + other.seen,
            misses={c: misses[c] for c in CAUSES if misses[c]},
            read_backs=self.read_backs + other.read_backs,
            read_back_tokens=self.read_back_tokens + other.read_back_tokens,
            read_back_cost=self.read_back_cost + other.read_back_cost,
        )


def used_strings(timeline: Timeline) -> dict[int, tuple[UsedString, ...]]:
    """Per model call (by ordinal), the strings its answer used (rules 1 and 2 of the module docstring)."""
    texts = [normalize(_unit_text(unit)) for unit in timeline.units]
    always = normalize("\n".join([timeline.system, *_strings_of(list(timeline.tools))]))
    # Where each string first appears: one pass over the joined transcript per distinct string.
    joined = "\n".join(texts)
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + 1
    first: dict[str, int] = {}

    def first_unit(needle: str) -> int:
        found = first.get(needle)
        if found is None:
            at = joined.find(needle)
            found = first[needle] = -1 if at < 0 else _unit_at(starts, at)
        return found

    out: dict[int, tuple[UsedString, ...]] = {}
    for call in timeline.calls:
        if call.upto >= len(timeline.units) or timeline.units[call.upto].kind != "assistant":
            continue
        answer = timeline.units[call.upto]
        found: set[str] = set()
        for block in answer.blocks:
            if block.get("type") == "text":
                found |= distinctive_strings(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                for value in _strings_of(block.get("input")):
                    found |= distinctive_strings(value, typed=True)
        used = []
        for needle in sorted(found):
            unit = first_unit(needle)
            if unit < 0 or unit >= call.upto or timeline.units[unit].kind == "assistant" or needle in always:
                continue
            sources = tuple(i for i in range(unit, call.upto) if timeline.units[i].kind != "assistant" and needle in texts[i])
            used.append(UsedString(ordinal=call.ordinal, text=needle, sources=sources))
        out[call.ordinal] = tuple(used)
    return out


def request_text(body: Mapping[str, Any]) -> str:
    """What a request shows the model, normalised: every string of its system blocks and messages."""
    return normalize("\n".join(_strings_of([body.get("system"), body.get("messages")])))


def evidence_recall(
    timeline: Timeline,
    sent: Sequence[Any],
    *,
    strategy: str,
    used: Mapping[int, Sequence[UsedString]] | None = None,
    count: Callable[[str], int] | None = None,
    price: Callable[[datetime, int], Decimal] | None = None,
) -> Recall:
    """The evidence recall of the requests ``sent`` (``SentRequest``) for ``timeline``'s calls.

    A request's ``ordinal`` names its call; without one (the baselines), requests follow
    ``timeline.calls`` one for one. ``strategy`` names what a missing message is called
    (:data:`DROPPED_AS`). ``count`` sizes read-backs in tokens (a quarter of the characters
    without it) and ``price`` prices them at a call's time. ``used`` reuses :func:`used_strings` computed once for several strategies.
    """
    count = count or (lambda text: (len(text) + 3) // 4)
    misses: Counter[str] = Counter()
    pairs = seen = 0
    read: set[int] = set()
    read_tokens = 0
    read_cost = Decimal(0)
    for judged in judge_pairs(timeline, sent, strategy=strategy, used=used):
        pairs += 1
        if judged.cause is None:
            seen += 1
            continue
        misses[judged.cause] += 1
        source = judged.string.sources[-1] if judged.string.sources else None
        if judged.pointer and source is not None and source not in read:
            read.add(source)
            tokens = count(timeline.units[source].text)
            read_tokens += tokens
            if price is not None:
                read_cost += price(judged.call.at, tokens)
    return Recall(
        pairs=pairs,
        seen=seen,
        misses={c: misses[c] for c in CAUSES if misses[c]},
        read_backs=len(read),
        read_back_tokens=read_tokens,
        read_back_cost=read_cost,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgedPair:
    """One (call, string) pair of the measure: seen, or missed and why."""

    call: ModelCall
    string: UsedString
    request: Any | None
    """The request built for the call (None: none was built)."""
    cause: str | None
    """None when the request shows the string; else one of :data:`CAUSES`."""
    pointer: bool = False
    """Whether a pointer in the request reads the missing string back."""


def judge_pairs(
    timeline: Timeline,
    sent: Sequence[Any],
    *,
    strategy: str,
    used: Mapping[int, Sequence[UsedString]] | None = None,
) -> Iterator[JudgedPair]:
    """Every (call, string) pair :func:`evidence_recall` counts, in call order, each seen or missed with its cause."""
    used = used_strings(timeline) if used is None else used
    by_ordinal: dict[int, Any] = {}
    for index, request in enumerate(sent):
        ordinal = getattr(request, "ordinal", None)
        if ordinal is None and index < len(timeline.calls):
            ordinal = timeline.calls[index].ordinal
        if ordinal is not None:
            by_ordinal[ordinal] = request
    compacted = False
    for call in timeline.calls:
        strings = used.get(call.ordinal, ())
        request = by_ordinal.get(call.ordinal)
        if request is not None and "compaction" in getattr(request, "relief", ()):
            compacted = True
        if not strings:
            continue
        if request is None:
            for string in strings:
                yield JudgedPair(call=call, string=string, request=None, cause="not_built")
            continue
        shown = request_text(request.body)
        view: _View | None = None
        for string in strings:
            if string.text in shown:
                yield JudgedPair(call=call, string=string, request=request, cause=None)
                continue
            view = view or _View(request.body)
            cause, pointer = view.cause(timeline.units[string.sources[-1]])
            if cause == "dropped":
                cause = DROPPED_AS.get(strategy, "dropped")
                if cause == "compacted" and not compacted:
                    cause = "dropped"
            yield JudgedPair(call=call, string=string, request=request, cause=cause, pointer=pointer)


class _View:
    """One request's tool outputs by call id and its user texts, to tell what became of a message."""

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.results: dict[str, str] = {}
        texts: list[str] = []
        for message in body.get("messages", ()):
            content = message.get("content")
            if isinstance(content, str):
                texts.append(content)
                continue
            for block in content or ():
                if block.get("type") == "tool_result":
                    self.results[str(block.get("tool_use_id"))] = "\n".join(_strings_of(block.get("content")))
                elif block.get("type") == "text" and message.get("role") == "user":
                    texts.append(str(block.get("text", "")))
        self.user = normalize("\n".join(texts))

    def cause(self, unit: Unit) -> tuple[str, bool]:
        """Why ``unit``'s string is missing, and whether a pointer in the request reads it back."""
        if unit.kind == "tool_result":
            call_id = str(unit.blocks[0].get("tool_use_id"))
            shown = self.results.get(call_id)
            if shown is None:
                return "dropped", False
            stripped = shown.strip()
            if _REPEAT.match(stripped):
                return "repeat", False
            pointer = _POINTER.search(shown) is not None
            if _STUB.match(stripped):
                return "pruned", pointer
            return ("bounded" if _BOUNDED.search(shown) else "compressed"), pointer
        head = normalize(unit.text)[:160]
        return ("bounded" if head and head in self.user else "dropped"), False


def _unit_text(unit: Unit) -> str:
    if unit.kind != "assistant":
        return unit.text
    return "\n".join(_strings_of(list(unit.blocks)))


def _strings_of(value: Any) -> Iterator[str]:
    """Every string value in ``value`` (dict keys and block types left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in _NOT_TEXT:
                yield from _strings_of(item)
    elif isinstance(value, Iterable) and not isinstance(value, bytes | bytearray):
        for item in value:
            yield from _strings_of(item)


def _unit_at(starts: Sequence[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low
