"""Echoes: where the assistant's own words repeat untrusted text it was shown earlier.

An assistant that quotes a tool output or a web page carries that text's trust, not
its own: rendered as the assistant's prose (or extracted into a summary) an injected
instruction would otherwise reach the model outside any envelope. Only untrusted text
logged *before* the assistant message counts, so a message's rendering never changes
after it was first sent (provider caches keep hitting). Two rules are kept:

* **verbatim** (requests recorded before the normalised rule): a run of at least
  :data:`SHINGLE_WORDS` consecutive case-folded words that also appears, in the same
  order, in an untrusted text;
* **normalised** (the rule in force): the same runs over words with format characters
  (Unicode category Cf: zero-width spaces and joiners, bidi controls, tag characters)
  removed and compatibility forms folded (NFKC, then case-folded), so an inserted
  invisible character or a full-width letter no longer hides a quote; and, for light
  rewording, a run of content words (:data:`STOPWORDS` left out) in which at least
  :data:`PAIR_HITS` of :data:`PAIR_WINDOW` consecutive word pairs were shown, in that
  order, in untrusted text. Ordinary prose shares single words and a pair here and there
  with what it talks about; a reworded quote keeps most of its pairs.

The log is read once, in order: each untrusted source adds the hashes of its word
windows to an index as it arrives, and each assistant text is checked against that
index when it arrives (:class:`EchoIndex`). Linear in the text folded; memory grows
with the distinct untrusted windows, one hash each.

A window's key is the same in every process (words are numbered by a digest, not by
Python's per-process string hash), so an index can be written down and read back
(:meth:`EchoIndex.snapshot`, :meth:`EchoIndex.restore`) and go on exactly as the
index that never stopped.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, count, filterfalse, repeat
from typing import Any

from contextwright.derive._checkpoint_values import checked_count as _count
from contextwright.derive._checkpoint_values import checked_text as _text
from contextwright.errors import CheckpointRejected
from contextwright.events.catalog import (
    TRUST_LEVELS,
    ArtifactStored,
    AssistantMessage,
    Compacted,
    Evidence,
    FrameRecorded,
    RequestBuilt,
    SummaryLine,
    ToolResult,
    TrustLevel,
    UserMessage,
)
from contextwright.events.envelope import Event

__all__ = [
    "PAIR_HITS",
    "PAIR_WINDOW",
    "SHINGLE_WORDS",
    "STOPWORDS",
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
PAIR_WINDOW = 6
"""Consecutive content-word pairs looked at together by the normalised rule."""
PAIR_HITS = 4
"""Pairs of a window that must have been shown in untrusted text for the run to be a reworded quote."""
STOPWORDS: frozenset[str] = frozenset(
    """a about after again all also am an and any are as at be been before being both but by can could
    d did do does doing down each few for from further had has have having he her here hers him his how i
    if in into is it its itself just ll m me more most my no nor not now of off on once only or other our
    ours out over own re s same she should so some such t than that the their theirs them then there these
    they this those through to too under until up ve very was we were what when where which while who whom
    why will with would you your yours""".split()
)
"""Function words: left out of the normalised rule's pairs, since rewording changes them first."""

UNTRUSTED: frozenset[TrustLevel] = frozenset({"tool", "external_untrusted"})
_WORD = re.compile(r"\w+")
_ASCII_WORD_BYTES = bytes(byte if chr(byte).isalnum() or byte == 0x5F else 0x20 for byte in range(128)) + b" " * 128
"""ASCII word bytes kept, every other byte a space."""
_ASCII_BYTES = bytes(range(128))
"""Every ASCII byte: deleting them leaves the bytes of a text's other characters."""
_MAX_REMEMBERED_WORDS = 1 << 20
"""Word numbers kept for reuse; past this the memo starts over (the numbers do not change)."""
_RANK: dict[str, int] = {level: rank for rank, level in enumerate(TRUST_LEVELS)}
_LEAST_UNTRUSTED_RANK = min(_RANK[level] for level in UNTRUSTED)
"""A source of this rank never takes over a window: every indexed window is at least as untrusted."""


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
    return max(levels, key=TRUST_LEVELS.index, default=default)


class EchoIndex:
    """Echo detection over a growing log, each event looked at once.

    Untrusted text is indexed by its word windows as it arrives; an assistant text is
    checked against the index when it arrives, so only earlier sources count and its
    echoes never change afterwards. The index keeps one 64-bit key per distinct window
    (a collision would only ever add an envelope); keys do not depend on the process.
    """

    def __init__(self) -> None:
        self._windows: dict[int, tuple[TrustLevel, str]] = {}
        self._echoes: dict[str, tuple[Echo, ...]] = {}
        self._normal_windows: dict[int, tuple[TrustLevel, str]] = {}
        """Windows of normalised words, for sources whose normalised words differ from their folded ones."""
        self._pairs: dict[int, tuple[TrustLevel, str]] = {}
        """Consecutive content-word pairs of the normalised words of every source."""
        self._normalised: dict[str, tuple[Echo, ...]] = {}
        self._upto = 0

    def _reset(self) -> None:
        self._windows.clear()
        self._echoes.clear()
        self._normal_windows.clear()
        self._pairs.clear()
        self._normalised.clear()
        self._upto = 0

    def add_source(self, source: Source) -> None:
        """Index untrusted text the model was shown (trusted text is ignored)."""
        if source.trust not in UNTRUSTED:
            return
        value = (source.trust, source.ref)
        folded = _folded_words(source.text)
        numbers = _numbers(folded)
        _index(self._windows, _windows_of(numbers), value)
        if not source.text.isascii():
            # ASCII words are their own normalised form; other text may differ (format characters, NFKC).
            normal = _normal_words(source.text)
            if normal != folded:
                numbers = _numbers(normal)
                _index(self._normal_windows, _windows_of(numbers), value)
        _index(self._pairs, _pairs_of(numbers), value)

    def check(self, target: Target) -> tuple[Echo, ...]:
        """The echoes in ``target`` of what was indexed so far, by both rules (recorded under its ref).

        Returns the verbatim rule's; :meth:`normalised` has the normalised rule's."""
        verbatim = self._check_verbatim(target)
        if self._windows or self._normal_windows or self._pairs:
            normalised = _merged(target.text, [*verbatim, *self._check_normalised(target)])
            if normalised:
                self._normalised[target.ref] = normalised
        return verbatim

    def _check_normalised(self, target: Target) -> list[Echo]:
        """Spans the normalised rule adds: windows of normalised words, and runs of content-word pairs shown before."""
        words, spans = _normal_tokens(target.text)
        found: list[Echo] = []
        # ASCII words are their own normalised form: the verbatim windows already covered an ASCII text.
        verbatim = None if target.text.isascii() else self._windows
        if verbatim is not None or self._normal_windows:
            for i, key in enumerate(_window_keys(words)):
                hit = _lowest(verbatim.get(key) if verbatim is not None else None, self._normal_windows.get(key))
                if hit is not None:
                    found.append(Echo(start=spans[i][0], end=spans[i + SHINGLE_WORDS - 1][1], trust=hit[0], source_ref=hit[1]))
        content = [i for i, word in enumerate(words) if word not in STOPWORDS]
        hits = [self._pairs.get(key) for key in _pairs_of(_numbers([words[i] for i in content]))]
        for first in range(max(1, len(hits) - PAIR_WINDOW + 1)):
            window = [(first + k, hit) for k, hit in enumerate(hits[first : first + PAIR_WINDOW]) if hit is not None]
            if len(window) < PAIR_HITS:
                continue
            (start_pair, first_hit), (end_pair, _) = window[0], window[-1]
            trust = lowest_trust(hit[0] for _, hit in window)
            start, end = spans[content[start_pair]][0], spans[content[end_pair + 1]][1]
            found.append(Echo(start=start, end=end, trust=trust, source_ref=first_hit[1]))
        return found

    def normalised(self) -> Mapping[str, tuple[Echo, ...]]:
        """Every echo so far by the normalised rule (the rule in force), per target ref."""
        return dict(self._normalised)

    def _check_verbatim(self, target: Target) -> tuple[Echo, ...]:
        text = target.text
        windows = self._windows
        if not windows:
            # Nothing untrusted was shown yet (a chat without tools, the turns before the first result):
            # no window can hit, so the text is not even split into words.
            return ()
        keys = list(_window_keys(_folded_words(text)))
        hits = list(compress(count(), map(windows.__contains__, keys)))
        if not hits:
            return ()
        # Word positions are needed only where a window hit.
        words = list(_WORD.finditer(text))
        # Spans as [start, end, trust, source_ref] while they grow; windows that overlap the last one extend it.
        spans: list[list[Any]] = []
        for i in hits:
            trust, source_ref = windows[keys[i]]
            begin, end = _widen(text, words[i].start(), words[i + SHINGLE_WORDS - 1].end())
            if spans and begin <= spans[-1][1]:
                last = spans[-1]
                last[1] = max(last[1], end)
                last[2] = lowest_trust((last[2], trust))
            else:
                spans.append([begin, end, trust, source_ref])
        kept = tuple(
            Echo(start=start, end=end, trust=trust, source_ref=ref)
            for start, end, trust, ref in spans
            if end - start >= MIN_ECHO_CHARS
        )
        if kept:
            self._echoes[target.ref] = kept
        return kept

    def update(self, events: Sequence[Event]) -> Mapping[str, tuple[Echo, ...]]:
        """Take in the events after the last one seen (a log only grows) and return every echo so far.

        The verbatim rule's echoes are returned; :meth:`normalised` has the normalised rule's."""
        if events and events[-1].seq < self._upto:
            self._reset()  # a shorter log than before: not the same log, start over
        for event in events:
            if event.seq <= self._upto:
                continue
            payload = event.payload
            if isinstance(payload, AssistantMessage) and payload.text:
                self.check(Target(seq=event.seq, ref=event.ref, text=payload.text))
            elif isinstance(payload, ToolResult):
                self.add_source(Source(seq=event.seq, ref=event.ref, text=payload.output, trust=payload.trust))
            elif isinstance(payload, FrameRecorded):
                for evidence in payload.recall:
                    self.add_source(Source(seq=event.seq, ref=event.ref, text=evidence.text, trust=evidence.trust))
            elif isinstance(payload, RequestBuilt):
                # Evidence recall found during a turn was shown in that request's tail.
                for evidence in _tail_evidence(payload):
                    self.add_source(Source(seq=event.seq, ref=event.ref, text=evidence.text, trust=evidence.trust))
            self._upto = event.seq
        return dict(self._echoes)

    def snapshot(self) -> dict[str, Any]:
        """The index as plain JSON data: :meth:`restore` gives back one that goes on identically.

        Windows are grouped by the source that holds them, in the order they were indexed
        (the same log gives the same data); ``keys`` names the window keying, so data from a
        process that keys windows differently is refused rather than misread."""
        return {
            "keys": window_keying(),
            "upto": self._upto,
            "sources": _by_source(self._windows),
            "echoes": _echo_data(self._echoes),
            "normal_sources": _by_source(self._normal_windows),
            "pairs": _by_source(self._pairs),
            "normalised": _echo_data(self._normalised),
        }

    @classmethod
    def restore(cls, data: Any) -> EchoIndex:
        """The index :meth:`snapshot` wrote; :class:`CheckpointRejected` for anything else."""
        try:
            if not isinstance(data, dict) or data.get("keys") != window_keying():
                raise CheckpointRejected("the echo index was keyed differently")
            index = cls()
            upto = data["upto"]
            if not isinstance(upto, int) or isinstance(upto, bool) or upto < 0:
                raise CheckpointRejected(f"the echo index has an invalid position {upto!r}")
            index._upto = upto
            # Data written before the normalised rule lacks its parts: refused (KeyError), so the log is folded.
            for name, windows in (
                ("sources", index._windows),
                ("normal_sources", index._normal_windows),
                ("pairs", index._pairs),
            ):
                for trust, ref, keys in data[name]:
                    value = (_trust(trust), _text(ref))
                    for key in keys:
                        windows[_key(key)] = value
            for name, found in (("echoes", index._echoes), ("normalised", index._normalised)):
                for ref, echoes in data[name]:
                    found[_text(ref)] = tuple(
                        Echo(start=_count(start), end=_count(end), trust=_trust(trust), source_ref=_text(source))
                        for start, end, trust, source in echoes
                    )
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointRejected(f"the echo index does not decode: {exc}") from exc
        return index


def _trust(value: Any) -> TrustLevel:
    if value not in _RANK:
        raise CheckpointRejected(f"unknown trust level {value!r}")
    trust: TrustLevel = value
    return trust


def _key(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CheckpointRejected(f"expected a window key, got {value!r}")
    return value


def find_echoes(
    targets: Iterable[Target], sources: Iterable[Source], *, normalised: bool = False
) -> Mapping[str, tuple[Echo, ...]]:
    """Echo spans per target ref (targets without echoes are absent): each target against the sources before it.

    By the verbatim rule, or by the normalised one (the rule in force) when ``normalised``."""
    index = EchoIndex()
    found: dict[str, tuple[Echo, ...]] = {}
    # Sources first at equal positions never happens (one event, one seq); order by seq.
    timeline = sorted([(s.seq, 0, s) for s in sources] + [(t.seq, 1, t) for t in targets], key=lambda item: item[:2])
    for _, _, item in timeline:
        if isinstance(item, Source):
            index.add_source(item)
        else:
            echoes = index.check(item)
            if normalised:
                echoes = index._normalised.get(item.ref, ())
            if echoes:
                found[item.ref] = echoes
    return found


def _index(windows: dict[int, tuple[TrustLevel, str]], keys: Iterable[int], value: tuple[TrustLevel, str]) -> None:
    """Index ``keys`` under ``value``: a key keeps its first source, unless a less trusted one shows it too."""
    rank = _RANK[value[0]]
    if rank == _LEAST_UNTRUSTED_RANK:
        # Windows seen before keep the first source's ref, so new ones are set in one C-level pass.
        deque(map(windows.setdefault, keys, repeat(value)), maxlen=0)
        return
    # A less trusted source takes over the windows it shares with more trusted ones.
    for key in keys:
        known = windows.get(key)
        if known is None or rank > _RANK[known[0]]:
            windows[key] = value


def _lowest(*hits: tuple[TrustLevel, str] | None) -> tuple[TrustLevel, str] | None:
    """The least trusted of the hits found (None when there is none)."""
    found = [hit for hit in hits if hit is not None]
    return max(found, key=lambda hit: _RANK[hit[0]]) if found else None


def _merged(text: str, echoes: list[Echo]) -> tuple[Echo, ...]:
    """``echoes`` widened to the whitespace around them, overlapping ones merged at the lowest trust, short ones dropped."""
    spans: list[list[Any]] = []
    for echo in sorted(echoes, key=lambda e: (e.start, e.end)):
        begin, end = _widen(text, echo.start, echo.end)
        if spans and begin <= spans[-1][1]:
            last = spans[-1]
            last[1] = max(last[1], end)
            last[2] = lowest_trust((last[2], echo.trust))
        else:
            spans.append([begin, end, echo.trust, echo.source_ref])
    return tuple(
        Echo(start=start, end=end, trust=trust, source_ref=ref)
        for start, end, trust, ref in spans
        if end - start >= MIN_ECHO_CHARS
    )


def _by_source(windows: Mapping[int, tuple[TrustLevel, str]]) -> list[list[Any]]:
    """Keys grouped by the source that holds them, in the order they were indexed (plain data)."""
    by_source: dict[tuple[TrustLevel, str], list[int]] = {}
    for key, value in windows.items():
        by_source.setdefault(value, []).append(key)
    return [[trust, ref, keys] for (trust, ref), keys in by_source.items()]


def _echo_data(found: Mapping[str, tuple[Echo, ...]]) -> list[list[Any]]:
    return [[ref, [[e.start, e.end, e.trust, e.source_ref] for e in echoes]] for ref, echoes in found.items()]


def _tail_evidence(payload: RequestBuilt) -> tuple[Evidence, ...]:
    """The evidence a request showed in its volatile tail (recorded in its inputs)."""
    tail = (payload.inputs or {}).get("tail") or {}
    return tuple(
        Evidence(id=e["id"], text=e["text"], trust=e["trust"], source=e["source"])
        for e in tail.get("evidence", ())
        if e.get("trust") in UNTRUSTED
    )


def _normal(piece: str) -> str:
    """A run of text without its format characters (Cf), in compatibility form (NFKC), case-folded."""
    if not piece.isascii():
        piece = unicodedata.normalize("NFKC", "".join(ch for ch in piece if unicodedata.category(ch) != "Cf"))
    return piece.casefold()


_RUN = re.compile(r"\S+")


def _normal_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The normalised words of ``text`` and where each stands in it.

    A run between whitespace is normalised whole (so a zero-width character inside a word, or a
    combining mark, stays in it) and split into words after; its words span the run."""
    if text.isascii():
        found = list(_WORD.finditer(text))
        return [m.group().lower() for m in found], [m.span() for m in found]
    words: list[str] = []
    spans: list[tuple[int, int]] = []
    for run in _RUN.finditer(text):
        if run.group().isascii():
            for m in _WORD.finditer(run.group()):
                words.append(m.group().lower())
                spans.append((run.start() + m.start(), run.start() + m.end()))
            continue
        for word in _WORD.findall(_normal(run.group())):
            words.append(word)
            spans.append(run.span())
    return words, spans


def _normal_words(text: str) -> list[str]:
    """The normalised words of ``text``, in order (see :func:`_normal_tokens`)."""
    return _normal_tokens(text)[0]


def _pairs_of(numbers: list[int]) -> Iterator[int]:
    """The key of every pair of consecutive content words (stop words left out) of numbered words, in order."""
    content = list(filterfalse(_STOP_NUMBERS.__contains__, numbers))
    return map(hash, zip(content, content[1:], strict=False))


def _folded_words(text: str) -> list[str]:
    """The case-folded words of ``text``, in order."""
    if text.isascii():
        # Folding ASCII only lowers A-Z, which are word characters before and after: fold first, in one pass.
        # In ASCII text a word is a run of [A-Za-z0-9_]: every other byte becomes a space and a split
        # finds the same words as the regex, in a few C passes instead of the regex engine.
        return text.lower().encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()
    raw = text.encode("utf-8", "surrogatepass")
    if not any(map(_WORD.match, set(raw.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")))):
        # No character outside ASCII is a word character (a tool output's "→" or box drawing):
        # they only separate words, as the spaces the table turns their bytes into do.
        return raw.translate(_ASCII_WORD_BYTES).decode("ascii").lower().split()
    return [word.casefold() for word in _WORD.findall(text)]


class _WordNumbers(dict[str, int]):
    """A number per word that every process agrees on: the first 8 bytes of its BLAKE2b digest, remembered."""

    def __missing__(self, word: str) -> int:
        if len(self) >= _MAX_REMEMBERED_WORDS:
            self.clear()
        number = self[word] = int.from_bytes(
            hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
        )
        return number


_WORD_NUMBERS = _WordNumbers()


def _window_keys(folded: list[str]) -> Iterator[int]:
    """The key of every run of :data:`SHINGLE_WORDS` consecutive words, in order.

    The hash of a tuple of ints: CPython does not salt int hashes, so the key is the same in
    every process (:func:`window_keying` names the scheme, for data that outlives one)."""
    return _windows_of(_numbers(folded))


def _numbers(words: list[str]) -> list[int]:
    """Each word's number (the same in every process)."""
    return list(map(_WORD_NUMBERS.__getitem__, words))


def _windows_of(numbers: list[int]) -> Iterator[int]:
    """The key of every run of :data:`SHINGLE_WORDS` consecutive numbered words, in order."""
    return map(hash, zip(*(numbers[offset:] for offset in range(SHINGLE_WORDS)), strict=False))


_STOP_NUMBERS = frozenset(_WORD_NUMBERS[word] for word in STOPWORDS)


def window_keying() -> str:
    """A name for how windows are keyed here: the key of a fixed window, so an interpreter that
    combines hashes differently (another version or word size) gives another name."""
    probe = next(_window_keys(["untrusted", "text", "window", "probe"]))
    return f"blake2b8-tuplehash:{probe}"


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
