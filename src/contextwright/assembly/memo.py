"""What assembly rendered, kept across the builds of one session (a cache of a pure function).

A running session builds a request per model call, and between two calls only the
newest surface entries change: the fold keeps the others as the same objects. The
memo keeps, per entry object, the messages rendered for it under the inputs that
shape them (the layer split at the run's first message, echoes, stale reasoning,
erased recall), and per message its canonical JSON, so a build renders, envelopes
and encodes only what is new. Nothing is decided by the memo: a build without it
(a fresh process, ``rebuild``, ``inspect``) gives the same bytes, and the property
tests check that it does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from contextwright.assembly.request import Message, NeutralRequest, canonical_request, message_json, prefix_json
from contextwright.canonical import sha256_tagged

__all__ = ["RenderMemo"]

T = TypeVar("T")

_Kept = dict[int, tuple[Message, object]]
"""Results by message object (by id, the message kept alive beside it)."""


class RenderMemo:
    """Per-entry rendered messages and per-message canonical JSON for one session's builds."""

    def __init__(self) -> None:
        self._secret: bytes | None = None
        self._entries: dict[int, tuple[object, Hashable, tuple[Message, ...], int]] = {}
        self._used: dict[int, tuple[object, Hashable, tuple[Message, ...], int]] = {}
        self._json: dict[int, tuple[Message, str]] = {}
        self._prefix_json: tuple[object, object, tuple[str, str]] | None = None
        self._prefix: tuple[object, str, bytes, object] | None = None
        self._derived: dict[int, tuple[object, object]] = {}
        self._derived_before: dict[int, tuple[object, object]] = {}
        self._per_message: dict[int, tuple[object, _Kept, _Kept]] = {}

    def begin(self, secret: bytes) -> None:
        """Start a build's pass over the surface (another secret forgets everything)."""
        if secret != self._secret:
            self._entries.clear()
            self._json.clear()
            self._derived_before.clear()
            self._derived.clear()
            self._per_message.clear()
            self._secret = secret
        self._used = {}

    def get(self, entry: object, key: Hashable) -> tuple[tuple[Message, ...], int] | None:
        """The messages rendered for this very entry object under ``key``, and the evidence they removed."""
        known = self._entries.get(id(entry))
        if known is None or known[0] is not entry or known[1] != key:
            return None
        self._used[id(entry)] = known
        return known[2], known[3]

    def put(self, entry: object, key: Hashable, messages: tuple[Message, ...], removed: int) -> None:
        """Keep what ``entry`` rendered to under ``key``."""
        self._used[id(entry)] = (entry, key, messages, removed)

    def next_pass(self) -> None:
        """Start another pass over a request's parts: what neither this pass nor the last used is forgotten."""
        self._derived_before, self._derived = self._derived, {}
        self._per_message = {key: (by, {}, kept) for key, (by, kept, _) in self._per_message.items() if kept}

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
        this or the last pass (see :meth:`next_pass`)."""
        known = self._per_message.get(id(by))
        if known is None or known[0] is not by:
            known = self._per_message[id(by)] = (by, {}, {})
        _, current, before = known
        results: list[T] = []
        for message in messages:
            kept = current.get(id(message)) or before.get(id(message))
            if kept is None or kept[0] is not message:
                kept = (message, derive(message))
            current[id(message)] = kept
            results.append(kept[1])  # type: ignore[arg-type]  # stored by the call with this same message and dependency
        return results

    def prefix(self, prefix: object, session_id: str, secret: bytes, derive: Callable[[], T]) -> T:
        """``derive()``, a pure function of a plan's (frozen) ``prefix`` object, the session and the secret,
        reused while they stay the same: requests of one epoch then share their system and tools objects."""
        known = self._prefix
        if known is None or known[0] is not prefix or known[1] != session_id or known[2] != secret:
            known = self._prefix = (prefix, session_id, secret, derive())
        return known[3]  # type: ignore[return-value]  # stored by the call with this same prefix

    def end(self) -> None:
        """Finish the pass: only the entries of this surface stay (the memo never outgrows one request)."""
        self._entries = self._used
        self._used = {}

    def canonical(self, request: NeutralRequest) -> str:
        """:meth:`NeutralRequest.canonical`, encoding only the messages not encoded before."""
        kept: dict[int, tuple[Message, str]] = {}

        def encode(message: Message) -> str:
            known = self._json.get(id(message))
            if known is None or known[0] is not message:
                known = (message, message_json(message))
            kept[id(message)] = known
            return known[1]

        text = canonical_request(request, encode, self._encode_prefix)
        self._json = kept
        return text

    def _encode_prefix(self, request: NeutralRequest) -> tuple[str, str]:
        # Requests of one epoch carry the very same system and tools objects (see :meth:`prefix`).
        known = self._prefix_json
        if known is None or known[0] is not request.system or known[1] is not request.tools:
            known = self._prefix_json = (request.system, request.tools, prefix_json(request))
        return known[2]

    def sha256(self, request: NeutralRequest) -> str:
        """:meth:`NeutralRequest.sha256`, by way of :meth:`canonical`."""
        return sha256_tagged(self.canonical(request))
