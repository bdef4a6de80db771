"""What assembly rendered, kept across the builds of one session (a cache of a pure function).

A running session builds a request per model call, and between two calls only the
newest surface entries change: the fold keeps the others as the same objects. The
memo keeps, per entry object, the messages rendered for it under the inputs that
shape them (the layer split at the run's first message, echoes, stale reasoning,
erased recall, how bounded views are sized), and per message its canonical JSON, so
a build renders, envelopes and encodes only what is new. Nothing is decided by the memo:
a build without it (a fresh process, ``rebuild``, ``inspect``) gives the same bytes, and
the property tests check that it does.
"""

from __future__ import annotations

import bisect
import hashlib
import operator
from collections.abc import Callable, Hashable, Sequence
from itertools import compress, count
from typing import Any, Generic, TypeVar

from contextwright.assembly.request import (
    Message,
    NeutralRequest,
    canonical_request,
    message_json,
    prefix_json,
    request_shell,
)
from contextwright.canonical import HASH_PREFIX

__all__ = ["RenderMemo"]

T = TypeVar("T")
R = TypeVar("R")


class RenderMemo:
    """Per-entry rendered messages and per-message canonical JSON for one session's builds."""

    def __init__(self) -> None:
        self._secret: bytes | None = None
        self._entries: dict[int, tuple[object, Hashable, tuple[Message, ...], int]] = {}
        self._used: dict[int, tuple[object, Hashable, tuple[Message, ...], int]] = {}
        self._prefix_json: tuple[object, object, tuple[str, str]] | None = None
        self._prefix: tuple[object, str, bytes, object] | None = None
        self._derived: dict[int, tuple[object, object]] = {}
        self._derived_before: dict[int, tuple[object, object]] = {}
        self._per_message: dict[int, _Pass[Any]] = {}
        self._used_by: set[int] = set()
        self._sums: dict[int, tuple[object, _Pass[Sizes], Sums]] = {}
        self._encoded: _Pass[str] | None = None
        self._hashed: tuple[str, tuple[Message, ...], list[Any]] | None = None
        self._validated: tuple[Message, ...] = ()
        self._run: _Run | None = None
        self._running: _Run | None = None

    def begin(self, secret: bytes) -> None:
        """Start a build's pass over the surface (another secret forgets everything)."""
        if secret != self._secret:
            self._run = None
            self._entries.clear()
            self._encoded = None
            self._hashed = None
            self._derived_before.clear()
            self._derived.clear()
            self._per_message.clear()
            self._sums.clear()
            self._secret = secret
        self._used = {}

    def get(self, entry: object, key: Hashable) -> tuple[tuple[Message, ...], int] | None:
        """The messages rendered for this very entry object under ``key``, and the evidence they removed."""
        known = self._entries.get(id(entry))
        if known is None or known[0] is not entry or known[1] != key:
            return None
        self._used[id(entry)] = known
        return known[2], known[3]

    def run_prefix(self, entries: Sequence[Any], inputs: tuple[Any, ...]) -> tuple[int, list[Message], int, list[int]]:
        """How many leading entries render as in the last pass over a surface, with what they rendered to.

        ``inputs`` are the surface-wide inputs of the entries' keys: (run seed, echoes, stale
        reasoning, erased evidence, recall dropped, how bounded views are sized). An entry's
        key is the same as last time when it is the very same entry and these did not change
        in a way that reaches it: echoes and stale reasoning of earlier answers are never
        withdrawn, but may be added (then nothing is taken over); a new run seed splits only
        entries at or after the earlier seed. Returns the count, the messages and evidence
        removed of those entries, and the greatest seq among them (per entry), which the
        caller extends with the entries it renders (see :meth:`ran`)."""
        last = self._run
        kept = 0
        if last is not None:
            seed, echoes, stale, erased, drop, views = inputs
            old_seed, old_echoes, old_stale, old_erased, old_drop, old_views = last.inputs
            same = (
                views == old_views
                and stale == old_stale
                and erased == old_erased
                and drop == old_drop
                and (not drop or seed == old_seed)
                and len(echoes) == len(old_echoes)
                and all(echoes.get(ref) == spans for ref, spans in old_echoes.items())
            )
            if same:
                kept = next(compress(count(), map(operator.is_not, entries, last.entries)), min(len(entries), len(last.entries)))
                if seed != old_seed:
                    # Entries whose newest event precedes both seeds are outside both runs: their split is the same.
                    kept = min(kept, bisect.bisect_left(last.newest, min(seed, old_seed), 0, kept))
        running = self._running = _Run(inputs, tuple(entries))
        if not kept:
            return 0, [], 0, running.newest
        assert last is not None
        running.ends = last.ends[:kept]
        running.removed = last.removed[:kept]
        running.newest = last.newest[:kept]
        # What the taken-over entries rendered stays known, as if they had been looked up
        # (entries that left the surface go when they outnumber it, see :meth:`end`).
        self._used = dict(self._entries)
        return kept, last.messages[: last.ends[kept - 1]], last.removed[kept - 1], running.newest

    def ran(self, entry: object, messages: int, removed: int) -> None:
        """Note how many messages and removed evidence the pass had after ``entry``."""
        running = self._running
        assert running is not None
        running.ends.append(messages)
        running.removed.append(removed)

    def put(self, entry: object, key: Hashable, messages: tuple[Message, ...], removed: int) -> None:
        """Keep what ``entry`` rendered to under ``key``."""
        self._used[id(entry)] = (entry, key, messages, removed)

    def next_pass(self) -> None:
        """Start another pass over a request's parts: what neither this pass nor the last used is forgotten."""
        self._derived_before, self._derived = self._derived, {}
        self._per_message = {key: known for key, known in self._per_message.items() if key in self._used_by}
        self._sums = {key: known for key, known in self._sums.items() if key in self._used_by}
        self._used_by = set()

    def derived(self, value: object, derive: Callable[[], T]) -> T:
        """``derive()``, a pure function of ``value``, reused for the very same ``value`` object as in this or the last build."""
        known = self._derived.get(id(value)) or self._derived_before.get(id(value))
        if known is None or known[0] is not value:
            known = (value, derive())
        self._derived[id(value)] = known
        return known[1]  # type: ignore[return-value]  # stored by the call with this same value and derivation

    def per_messages(self, messages: Sequence[Message], by: object, derive: Callable[[Message], T]) -> list[T]:
        """``derive(message)`` for each message, a pure function of the message and of the object ``by``.

        ``by`` is what the result depends on besides the message (a token counter whose counts
        never change, a check); a result is reused for the very same message and ``by`` as in
        the last call with that ``by`` in this or the last pass (see :meth:`next_pass`)."""
        known = self._per_message.get(id(by))
        before = known if known is not None and known.by is by else None
        self._used_by.add(id(by))
        current = _Pass.after(before, by, messages, derive)
        self._per_message[id(by)] = current
        return current.results

    def per_items(self, items: Sequence[Hashable], by: object, derive: Callable[[Any], T]) -> list[T]:
        """:meth:`per_messages` for other items of a request's history (surface entries)."""
        return self.per_messages(items, by, derive)  # type: ignore[arg-type]  # a pass looks at items by identity only

    def valid_prefix(self, messages: Sequence[Message]) -> int:
        """How many leading messages are the very same as those of the last list :meth:`validated` noted."""
        before = self._validated
        if not before:
            return 0
        return next(compress(count(), map(operator.is_not, messages, before)), min(len(messages), len(before)))

    def validated(self, messages: Sequence[Message]) -> None:
        """Note a list of messages that passed validation."""
        self._validated = tuple(messages)

    def sums(self, messages: Sequence[Message], by: object, size: Callable[[Message], Sizes]) -> Sums:
        """The sizes of ``messages`` added up (per class, per layer, in all), ``size`` a pure function of the message and ``by``.

        Successive requests share their history: the last sums for ``by`` are adjusted by the
        messages that left and came, so unchanged messages are not even visited."""
        known = self._sums.get(id(by))
        self._used_by.add(id(by))
        if known is None or known[0] is not by:
            current = _Pass.after(None, by, messages, size)
            self._sums[id(by)] = (by, current, add_sizes(({}, {}, 0), current.results, 1))
            return _copy_sums(self._sums[id(by)][2])
        before, totals = known[1], known[2]
        current = _Pass.after(before, by, messages, size)
        totals = add_sizes(totals, before.results[current.kept :], -1)
        totals = add_sizes(totals, current.results[current.kept :], 1)
        self._sums[id(by)] = (by, current, totals)
        return _copy_sums(totals)

    def prefix(self, prefix: object, session_id: str, secret: bytes, derive: Callable[[], T]) -> T:
        """``derive()``, a pure function of a plan's (frozen) ``prefix`` object, the session and the secret,
        reused while they stay the same: requests of one epoch then share their system and tools objects."""
        known = self._prefix
        if known is None or known[0] is not prefix or known[1] != session_id or known[2] != secret:
            known = self._prefix = (prefix, session_id, secret, derive())
        return known[3]  # type: ignore[return-value]  # stored by the call with this same prefix

    def end(self, messages: Sequence[Message] = ()) -> None:
        """Finish the pass over a surface that rendered ``messages``: only its entries stay (the memo never outgrows one request)."""
        self._entries = self._used
        self._used = {}
        running = self._running
        if running is not None:
            running.messages = list(messages)
            if len(self._entries) > 2 * len(running.entries) + 64:
                current = {id(entry) for entry in running.entries}
                self._entries = {key: known for key, known in self._entries.items() if key in current}
        self._run, self._running = running, None

    def canonical(self, request: NeutralRequest) -> str:
        """:meth:`NeutralRequest.canonical`, encoding only the messages not encoded before."""
        current = self._encoded = _Pass.after(self._encoded, message_json, request.messages, message_json)
        return canonical_request(request, encode_prefix=self._encode_prefix, encoded=current.results)

    def _encode_prefix(self, request: NeutralRequest) -> tuple[str, str]:
        # Requests of one epoch carry the very same system and tools objects (see :meth:`prefix`).
        known = self._prefix_json
        if known is None or known[0] is not request.system or known[1] is not request.tools:
            known = self._prefix_json = (request.system, request.tools, prefix_json(request))
        return known[2]

    def sha256(self, request: NeutralRequest) -> str:
        """:meth:`NeutralRequest.sha256`, hashing only the messages not hashed before.

        The canonical request is its opening, the messages' JSON joined by commas, and its
        closing (see :func:`canonical_request`); the hash state after each message is kept,
        so a request that shares its opening and leading messages with the last one resumes
        from the state after them. No canonical text of the whole request is built."""
        encoded = self._encoded = _Pass.after(self._encoded, message_json, request.messages, message_json)
        opening, closing = request_shell(request, self._encode_prefix)
        known = self._hashed
        messages = encoded.messages
        if known is None or known[0] != opening:
            states = [hashlib.sha256(opening.encode("utf-8"))]
        else:
            kept = next(compress(count(), map(operator.is_not, messages, known[1])), min(len(messages), len(known[1])))
            states = known[2][: kept + 1]
        for index in range(len(states) - 1, len(messages)):
            state = states[-1].copy()
            state.update((encoded.results[index] if index == 0 else "," + encoded.results[index]).encode("utf-8"))
            states.append(state)
        self._hashed = (opening, messages, states)
        final = states[-1].copy()
        final.update(closing.encode("utf-8"))
        return HASH_PREFIX + final.hexdigest()


Sizes = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...], int]
"""One message's tokens by budget class and by layer, and in all."""
Sums = tuple[dict[str, int], dict[str, int], int]
"""Tokens by budget class, by layer, and in all."""


def add_sizes(totals: Sums, sizes: Sequence[Sizes], sign: int) -> Sums:
    """``totals`` plus (or minus, with ``sign`` -1) ``sizes``; a class or layer that reaches zero is left out."""
    if not sizes:
        return totals
    by_class, by_layer, total = dict(totals[0]), dict(totals[1]), totals[2]
    for classes, layers, tokens in sizes:
        total += sign * tokens
        for cls, tokens_of in classes:
            by_class[cls] = by_class.get(cls, 0) + sign * tokens_of
        for layer, tokens_in in layers:
            by_layer[layer] = by_layer.get(layer, 0) + sign * tokens_in
    if sign < 0:
        by_class = {key: value for key, value in by_class.items() if value}
        by_layer = {key: value for key, value in by_layer.items() if value}
    return by_class, by_layer, total


def _copy_sums(sums: Sums) -> Sums:
    return dict(sums[0]), dict(sums[1]), sums[2]


class _Pass(Generic[R]):
    """What one derivation gave for each message of a list, in order, kept for the next list."""

    __slots__ = ("by", "kept", "messages", "results")

    def __init__(self, by: object, messages: tuple[Message, ...], results: list[R], kept: int) -> None:
        self.by = by
        self.messages = messages
        self.results = results
        self.kept = kept
        """How many leading messages were the very same as the list before."""

    @classmethod
    def after(cls, before: _Pass[R] | None, by: object, messages: Sequence[Message], derive: Callable[[Message], R]) -> _Pass[R]:
        """The pass over ``messages``: the leading messages ``before`` also had are taken over without a look,
        the others found by identity among the rest of ``before``, or derived."""
        messages = tuple(messages)
        if before is None:
            return cls(by, messages, [derive(message) for message in messages], 0)
        # The first position where the lists differ, found at C speed (successive requests share their history).
        kept = next(compress(count(), map(operator.is_not, messages, before.messages)), min(len(messages), len(before.messages)))
        results = before.results[:kept]
        rest = {id(message): (message, result) for message, result in zip(before.messages[kept:], before.results[kept:])}
        for message in messages[kept:]:
            known = rest.get(id(message))
            results.append(known[1] if known is not None and known[0] is message else derive(message))
        return cls(by, messages, results, kept)


class _Run:
    """One pass of assembly over a surface: its inputs, its entries, and per entry what the pass had after it."""

    __slots__ = ("ends", "entries", "inputs", "messages", "newest", "removed")

    def __init__(self, inputs: tuple[Any, ...], entries: tuple[Any, ...]) -> None:
        self.inputs = inputs
        self.entries = entries
        self.ends: list[int] = []
        """Per entry: how many messages the pass had after it."""
        self.removed: list[int] = []
        """Per entry: how much evidence the pass had removed after it."""
        self.newest: list[int] = []
        """Per entry: the greatest seq among it and the entries before it."""
        self.messages: list[Message] = []
