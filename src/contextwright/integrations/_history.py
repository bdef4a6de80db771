"""What is new in a caller's history: the part after the messages the session already saw.

Adapters that receive the caller's whole history on every call (client middleware,
framework hooks) note what they saw in the session's log as one content hash per
message (``framework.history.seen``). The next call's history must start with those
hashes; what follows is new. Anything else means the caller rewrote what is already
recorded, which is refused instead of silently diverging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextwright.derive._framework_items import fold_seen_history
from contextwright.events.catalog import FrameworkHistorySeen
from contextwright.integrations.errors import HistoryRewritten
from contextwright.runtime.session import Session

_CONVERSATION = frozenset({"message.user", "message.assistant", "tool.result"})


def record_new_history(
    session: Session,
    history: Sequence[Any],
    *,
    fingerprint: Callable[[Any], str],
    record: Callable[[Session, list[Any]], None],
    what: str = "messages",
) -> int:
    """Record the messages of ``history`` the session has not seen (``record`` gets them in one list), mirror them.

    Returns how many were new."""
    events = session.history.events
    mirrored = fold_seen_history(events)
    if not mirrored and any(e.type in _CONVERSATION for e in events):
        raise HistoryRewritten(
            f"session {session.id!r} already holds messages this adapter did not record, so it cannot tell which of "
            f"the caller's {what} are new; give the adapter a session of its own",
            session_id=session.id,
            recorded=0,
            position=0,
        )
    seen = [fingerprint(item) for item in history]
    if seen[: len(mirrored)] != mirrored:
        changed = next((i for i, (a, b) in enumerate(zip(seen, mirrored)) if a != b), min(len(seen), len(mirrored)))
        raise HistoryRewritten(
            f"session {session.id!r}: the caller's {what} no longer start with the {len(mirrored)} already recorded "
            f"(first difference at position {changed}); keep the history append-only, or open a new session",
            session_id=session.id,
            recorded=len(mirrored),
            position=changed,
        )
    new = list(history[len(mirrored) :])
    if new:
        record(session, new)
        mirror(session, seen[len(mirrored) :])
    return len(new)


def mirror(session: Session, fingerprints: Sequence[str]) -> None:
    """Note messages the session has seen (an answer it recorded itself, for example)."""
    session.adapter.append([FrameworkHistorySeen(fingerprints=tuple(fingerprints))])
